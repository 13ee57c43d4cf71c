package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/partition"
)

// fetchResponse is a Fetch response whose record sets may still be in segment files: the
// writer sends those ranges straight from the files (sendfile) rather than the broker
// reading them into memory first. Its descriptors must be released once it is written or
// dropped.
type fetchResponse struct {
	*kmsg.FetchResponse
	// files[t][p] holds the records of Topics[t].Partitions[p] when they are file ranges;
	// it is empty where RecordBatches holds the bytes.
	files [][]partition.FileRecords
}

// streamedResponse is a response that encodes to bytes with file ranges cut in.
type streamedResponse interface {
	kmsg.Response
	// appendParts appends the encoded body to dst; each cut is a file range that goes at
	// its position in the bytes.
	appendParts(dst []byte, cuts []fileCut) ([]byte, []fileCut)
	release()
}

// fileCut is a file range to send after the first at bytes of the encoded response.
type fileCut struct {
	at int
	partition.FileRange
}

func (r *fetchResponse) release() {
	for _, t := range r.files {
		for i := range t {
			t[i].Release()
		}
	}
	r.files = nil
}

// AppendTo encodes the response with the file ranges read into it, for whoever needs it
// whole; the writer uses appendParts. A range that cannot be read is left zeroed (the
// batch CRC then fails at the client): AppendTo cannot report an error.
func (r *fetchResponse) AppendTo(dst []byte) []byte {
	start := len(dst)
	body, cuts := r.appendParts(dst, nil)
	var out []byte
	prev := start
	out = append(out, body[:start]...)
	for _, c := range cuts {
		out = append(out, body[prev:c.at]...)
		n := len(out)
		out = append(out, make([]byte, c.Len)...)
		c.File.ReadAt(out[n:], c.Pos)
		prev = c.at
	}
	return append(out, body[prev:]...)
}

// appendParts encodes FetchResponse versions 4 to 12 (the ones served), field by field
// as the protocol defines them; v12 is flexible (compact arrays, strings and bytes, and
// tagged fields). Fields and tags later versions added are not written, as kmsg does not
// for these versions.
func (r *fetchResponse) appendParts(dst []byte, cuts []fileCut) ([]byte, []fileCut) {
	v := r.Version
	flex := v >= 12
	e := fetchEncoder{flex: flex}
	dst = binary.BigEndian.AppendUint32(dst, uint32(r.ThrottleMillis)) // v1+
	if v >= 7 {
		dst = binary.BigEndian.AppendUint16(dst, uint16(r.ErrorCode))
		dst = binary.BigEndian.AppendUint32(dst, uint32(r.SessionID))
	}
	dst = e.arrayLen(dst, len(r.Topics))
	for ti := range r.Topics {
		t := &r.Topics[ti]
		dst = e.string(dst, t.Topic)
		dst = e.arrayLen(dst, len(t.Partitions))
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition))
			dst = binary.BigEndian.AppendUint16(dst, uint16(p.ErrorCode))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.HighWatermark))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.LastStableOffset)) // v4+
			if v >= 5 {
				dst = binary.BigEndian.AppendUint64(dst, uint64(p.LogStartOffset))
			}
			if p.AbortedTransactions == nil {
				dst = e.nullLen(dst)
			} else {
				dst = e.arrayLen(dst, len(p.AbortedTransactions))
			}
			for _, a := range p.AbortedTransactions {
				dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
				dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
				dst = e.noTags(dst)
			}
			if v >= 11 {
				dst = binary.BigEndian.AppendUint32(dst, uint32(p.PreferredReadReplica))
			}
			var files *partition.FileRecords
			if ti < len(r.files) && pi < len(r.files[ti]) && r.files[ti][pi].Len() > 0 {
				files = &r.files[ti][pi]
			}
			switch {
			case files != nil:
				dst = e.bytesLen(dst, int(files.Bytes()))
				for i := range files.Len() {
					cuts = append(cuts, fileCut{at: len(dst), FileRange: files.Range(i)})
				}
			case p.RecordBatches == nil:
				dst = e.nullLen(dst)
			default:
				dst = e.bytesLen(dst, len(p.RecordBatches))
				dst = append(dst, p.RecordBatches...)
			}
			if flex {
				dst = appendPartitionTags(dst, p)
			}
		}
		dst = e.noTags(dst)
	}
	return e.noTags(dst), cuts
}

// appendPartitionTags writes a v12 partition's tagged fields: each one that differs from
// its default, in tag order, as tag, size and the value (which has no tags of its own).
func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	diverging := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	leader := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	snapshot := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	n := 0
	for _, set := range []bool{diverging, leader, snapshot} {
		if set {
			n++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	if diverging {
		dst = append(dst, 0, 4+8+1)
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.DivergingEpoch.Epoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(p.DivergingEpoch.EndOffset))
		dst = append(dst, 0)
	}
	if leader {
		dst = append(dst, 1, 4+4+1)
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.CurrentLeader.LeaderID))
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.CurrentLeader.LeaderEpoch))
		dst = append(dst, 0)
	}
	if snapshot {
		dst = append(dst, 2, 8+4+1)
		dst = binary.BigEndian.AppendUint64(dst, uint64(p.SnapshotID.EndOffset))
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.SnapshotID.Epoch))
		dst = append(dst, 0)
	}
	return dst
}

// fetchEncoder writes the primitives whose form depends on flexibility: a flexible
// version writes lengths as unsigned varints of length+1 (0 is null).
type fetchEncoder struct{ flex bool }

func (e fetchEncoder) arrayLen(dst []byte, n int) []byte {
	if e.flex {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// bytesLen is the length prefix of non-null bytes; arrays and bytes share the form.
func (e fetchEncoder) bytesLen(dst []byte, n int) []byte { return e.arrayLen(dst, n) }

func (e fetchEncoder) nullLen(dst []byte) []byte {
	if e.flex {
		return append(dst, 0)
	}
	return binary.BigEndian.AppendUint32(dst, 0xffffffff)
}

func (e fetchEncoder) string(dst []byte, s string) []byte {
	if e.flex {
		dst = binary.AppendUvarint(dst, uint64(len(s))+1)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	}
	return append(dst, s...)
}

// noTags is an empty tagged-field section, in flexible versions only.
func (e fetchEncoder) noTags(dst []byte) []byte {
	if e.flex {
		return append(dst, 0)
	}
	return dst
}

// sendfileMinBytes is the smallest file range sent with sendfile. A smaller one (a small
// batch) is read into the connection's write buffer instead: it then leaves together
// with its neighbours, where a sendfile each would cost a system call and, with Nagle
// off, a network packet per batch. Tests lower it to send everything with sendfile.
var sendfileMinBytes int64 = 16 << 10

// errFileShrunk is a fetched file range that ends before its length: its segment was
// truncated after the read. The response cannot be completed.
var errFileShrunk = errors.New("kafka: segment file ended inside a fetched range")

// writeParts writes an encoded response: its bytes through w, and each file range at its
// cut, with sendfile where the connection allows it.
func writeParts(w *bufio.Writer, c net.Conn, buf []byte, cuts []fileCut) error {
	prev := 0
	for _, cut := range cuts {
		if _, err := w.Write(buf[prev:cut.at]); err != nil {
			return err
		}
		prev = cut.at
		if err := writeFileRange(w, c, cut.FileRange); err != nil {
			return err
		}
	}
	_, err := w.Write(buf[prev:])
	return err
}

// copyFileRange reads a file range into w's buffer and writes it: for connections that
// offer no descriptor, and for ranges too small to be worth a sendfile of their own. It
// allocates nothing.
func copyFileRange(w *bufio.Writer, s partition.FileRange) error {
	off, left := s.Pos, s.Len
	for left > 0 {
		if w.Available() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		b := w.AvailableBuffer()[:min(int64(w.Available()), left)]
		n, err := s.File.ReadAt(b, off)
		if n < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				return errFileShrunk
			}
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		off += int64(n)
		left -= int64(n)
	}
	return nil
}

// filesLen is the number of bytes the cuts add to a response.
func filesLen(cuts []fileCut) int {
	n := 0
	for _, c := range cuts {
		n += int(c.Len)
	}
	return n
}
