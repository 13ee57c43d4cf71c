package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Wire constants. See the package documentation for the layout.
const (
	wireVersion = 1

	kindHello = 1
	kindAck   = 2
	kindBatch = 3

	frameHeaderLen = 8 // length + crc
	bodyHeaderLen  = 2 // version + kind
	batchHeaderLen = bodyHeaderLen + 4
	msgHeaderLen   = 1 + 4 // type + payload length

	maxHelloFrame  = 1024 // hello and ack frames are small; anything bigger is garbage
	maxClusterID   = 255
	maxReasonBytes = 255

	ackOK      = 0
	ackRefused = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptFrame reports a frame that fails its length, CRC, version, kind or body checks.
var ErrCorruptFrame = errors.New("rpc: corrupt frame")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptFrame, fmt.Sprintf(format, args...))
}

// Message is one decoded message of a batch.
type Message struct {
	Type    uint8
	Payload []byte
}

// finishFrame fills in the frame header reserved at buf[start:start+frameHeaderLen] for the
// body that follows it up to the end of buf.
func finishFrame(buf []byte, start int) {
	body := buf[start+frameHeaderLen:]
	binary.BigEndian.PutUint32(buf[start:], uint32(len(body)))
	binary.BigEndian.PutUint32(buf[start+4:], crc32.Checksum(body, castagnoli))
}

// readFrame reads one frame and returns its verified body (version checked, kind at body[1]).
// I/O errors are returned as they are; malformed frames return an ErrCorruptFrame.
func readFrame(r io.Reader, hdr *[frameHeaderLen]byte, maxLen int) ([]byte, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if uint64(n) > uint64(maxLen) {
		return nil, corrupt("frame of %d bytes over the limit of %d", n, maxLen)
	}
	if n < bodyHeaderLen {
		return nil, corrupt("frame of %d bytes is too short", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return checkBody(body, binary.BigEndian.Uint32(hdr[4:]))
}

func checkBody(body []byte, crc uint32) ([]byte, error) {
	if got := crc32.Checksum(body, castagnoli); got != crc {
		return nil, corrupt("crc mismatch: frame says %08x, body has %08x", crc, got)
	}
	if body[0] != wireVersion {
		return nil, corrupt("unsupported version %d", body[0])
	}
	return body, nil
}

// hello is the first frame on every connection.
type hello struct {
	From, To int32
	Cluster  string
}

func appendHello(buf []byte, h hello) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, frameHeaderLen)...)
	buf = append(buf, wireVersion, kindHello)
	buf = binary.BigEndian.AppendUint32(buf, uint32(h.From))
	buf = binary.BigEndian.AppendUint32(buf, uint32(h.To))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(h.Cluster)))
	buf = append(buf, h.Cluster...)
	finishFrame(buf, start)
	return buf
}

func decodeHello(body []byte) (hello, error) {
	var h hello
	if len(body) < bodyHeaderLen+10 || body[1] != kindHello {
		return h, corrupt("not a hello frame")
	}
	b := body[bodyHeaderLen:]
	h.From = int32(binary.BigEndian.Uint32(b))
	h.To = int32(binary.BigEndian.Uint32(b[4:]))
	n := int(binary.BigEndian.Uint16(b[8:]))
	if len(b) != 10+n || n > maxClusterID {
		return h, corrupt("hello cluster id length %d does not match the frame", n)
	}
	h.Cluster = string(b[10:])
	return h, nil
}

// ack answers a hello.
type ack struct {
	OK     bool
	From   int32
	Reason string
}

func appendAck(buf []byte, a ack) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, frameHeaderLen)...)
	status := byte(ackRefused)
	if a.OK {
		status = ackOK
	}
	reason := a.Reason
	if len(reason) > maxReasonBytes {
		reason = reason[:maxReasonBytes]
	}
	buf = append(buf, wireVersion, kindAck, status)
	buf = binary.BigEndian.AppendUint32(buf, uint32(a.From))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(reason)))
	buf = append(buf, reason...)
	finishFrame(buf, start)
	return buf
}

func decodeAck(body []byte) (ack, error) {
	var a ack
	if len(body) < bodyHeaderLen+7 || body[1] != kindAck {
		return a, corrupt("not an ack frame")
	}
	b := body[bodyHeaderLen:]
	switch b[0] {
	case ackOK:
		a.OK = true
	case ackRefused:
	default:
		return a, corrupt("unknown ack status %d", b[0])
	}
	a.From = int32(binary.BigEndian.Uint32(b[1:]))
	n := int(binary.BigEndian.Uint16(b[5:]))
	if len(b) != 7+n {
		return a, corrupt("ack reason length %d does not match the frame", n)
	}
	a.Reason = string(b[7:])
	return a, nil
}

// encodedSize is the number of bytes msg takes inside a batch body; it is also what a message
// costs against a peer's queue bound.
func encodedSize(payloadLen int) int { return msgHeaderLen + payloadLen }

// appendBatch appends one batch frame holding msgs.
func appendBatch(buf []byte, msgs []Message) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, frameHeaderLen)...)
	buf = append(buf, wireVersion, kindBatch)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(msgs)))
	for _, m := range msgs {
		buf = append(buf, m.Type)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(m.Payload)))
		buf = append(buf, m.Payload...)
	}
	finishFrame(buf, start)
	return buf
}

// decodeBatch decodes a verified batch body. Payloads alias body. The whole body must be
// consumed exactly, so a batch either decodes completely or not at all.
func decodeBatch(body []byte) ([]Message, error) {
	if len(body) < batchHeaderLen || body[1] != kindBatch {
		return nil, corrupt("not a batch frame")
	}
	count := binary.BigEndian.Uint32(body[bodyHeaderLen:])
	b := body[batchHeaderLen:]
	// Every message takes at least msgHeaderLen bytes: refuse counts the body cannot hold
	// before allocating for them.
	if uint64(count)*msgHeaderLen > uint64(len(b)) {
		return nil, corrupt("batch claims %d messages in %d bytes", count, len(b))
	}
	msgs := make([]Message, 0, count)
	for i := uint32(0); i < count; i++ {
		if len(b) < msgHeaderLen {
			return nil, corrupt("message %d header truncated", i)
		}
		typ := b[0]
		n := binary.BigEndian.Uint32(b[1:])
		b = b[msgHeaderLen:]
		if uint64(n) > uint64(len(b)) {
			return nil, corrupt("message %d payload of %d bytes truncated", i, n)
		}
		msgs = append(msgs, Message{Type: typ, Payload: b[:n:n]})
		b = b[n:]
	}
	if len(b) != 0 {
		return nil, corrupt("%d trailing bytes after %d messages", len(b), count)
	}
	return msgs, nil
}

// DecodeBatchFrame decodes one complete batch frame (header included), as read from a
// connection. It exists for tests, fuzzing and debugging tools; the transport itself reads
// frames from the stream.
func DecodeBatchFrame(frame []byte, maxLen int) ([]Message, error) {
	if len(frame) < frameHeaderLen {
		return nil, corrupt("frame header truncated")
	}
	n := binary.BigEndian.Uint32(frame)
	if uint64(n) > uint64(maxLen) {
		return nil, corrupt("frame of %d bytes over the limit of %d", n, maxLen)
	}
	if n < bodyHeaderLen || uint64(len(frame)-frameHeaderLen) != uint64(n) {
		return nil, corrupt("frame length %d does not match %d bytes", n, len(frame)-frameHeaderLen)
	}
	body, err := checkBody(frame[frameHeaderLen:], binary.BigEndian.Uint32(frame[4:]))
	if err != nil {
		return nil, err
	}
	return decodeBatch(body)
}
