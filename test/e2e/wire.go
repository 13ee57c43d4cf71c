package e2e

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// rawConn is a bare Kafka connection: requests are written exactly as built, with the
// version the test chooses, and nothing is negotiated or retried.
type rawConn struct {
	t    testing.TB
	c    net.Conn
	r    *bufio.Reader
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

// send writes req (at the version set on it) and returns its correlation id.
func (rc *rawConn) send(req kmsg.Request) (int32, error) {
	rc.corr++
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("cairn-e2e-raw")).AppendRequest(nil, req, rc.corr)
	rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := rc.c.Write(frame)
	return rc.corr, err
}

// readFrame reads one response frame.
func (rc *rawConn) readFrame(timeout time.Duration) ([]byte, error) {
	rc.c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(rc.r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(rc.r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// roundTrip sends req and decodes the response of the same version.
func (rc *rawConn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	corr, err := rc.send(req)
	if err != nil {
		return nil, err
	}
	frame, err := rc.readFrame(30 * time.Second)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return resp, decodeResponse(frame, corr, resp)
}

// decodeResponse checks the correlation id, skips the flexible header's tags (absent on
// ApiVersions responses) and decodes the body into resp.
func decodeResponse(frame []byte, corr int32, resp kmsg.Response) error {
	if len(frame) < 4 {
		return errors.New("response shorter than its header")
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		return fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != 18 {
		if len(body) < 1 || body[0] != 0 {
			return errors.New("flexible response header has unexpected tagged fields")
		}
		body = body[1:]
	}
	return resp.ReadFrom(body)
}

// writeRaw writes bytes as they are.
func (rc *rawConn) writeRaw(b []byte) error {
	rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := rc.c.Write(b)
	return err
}

// waitClosed waits until the peer closes the connection. It returns any bytes that arrived
// before the close, and errNotClosed if the connection stayed open for timeout.
func (rc *rawConn) waitClosed(timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	rc.c.SetReadDeadline(deadline)
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := rc.r.Read(buf)
		got = append(got, buf[:n]...)
		switch {
		case err == nil:
			continue
		case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
			return got, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return got, errNotClosed
		default:
			return got, err
		}
	}
}

// ---- record batches ----

type kv struct {
	key, value []byte
	tsDelta    int64 // record timestamp = batch first timestamp + tsDelta
}

// batchSpec describes a RecordBatch v2 built by buildBatch.
type batchSpec struct {
	producerID    int64 // -1: none
	producerEpoch int16
	firstSequence int32
	timestamp     int64 // ms; 0 means now
	records       []kv

	// For malformed batches: a base offset other than 0, attributes (compression bits),
	// record bytes used instead of the encoded records, and a record count other than
	// len(records).
	firstOffset int64
	attributes  int16
	rawRecords  []byte
	numRecords  *int32
}

// buildBatch encodes an uncompressed RecordBatch v2 with a correct length and CRC32C.
func buildBatch(s batchSpec) []byte {
	ts := s.timestamp
	if ts == 0 {
		ts = time.Now().UnixMilli()
	}
	var recs []byte
	maxTS := ts
	for i, r := range s.records {
		recs = recordbatch.AppendRecord(recs, int32(i), recordbatch.NewRecord{Key: r.key, Value: r.value, TimestampDelta: r.tsDelta})
		maxTS = max(maxTS, ts+r.tsDelta)
	}
	if s.rawRecords != nil {
		recs = s.rawRecords
	}
	num := int32(len(s.records))
	if s.numRecords != nil {
		num = *s.numRecords
	}
	h := recordbatch.PlainHeader(ts, maxTS)
	h.BaseOffset, h.Attributes = s.firstOffset, s.attributes
	h.LastOffsetDelta, h.NumRecords = int32(len(s.records)-1), num
	if s.producerID >= 0 {
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = s.producerID, s.producerEpoch, s.firstSequence
	}
	return recordbatch.Assemble(h, recs)
}

// simpleBatch is a batch without a producer id holding n records "<prefix>-i".
func simpleBatch(prefix string, n int) []byte {
	s := batchSpec{producerID: -1}
	for i := 0; i < n; i++ {
		s.records = append(s.records, kv{key: []byte(fmt.Sprintf("k%d", i)), value: []byte(fmt.Sprintf("%s-%d", prefix, i))})
	}
	return buildBatch(s)
}

// produceRequest builds a Produce request for one partition.
func produceRequest(version int16, acks int16, topic string, partition int32, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = acks
	req.TimeoutMillis = 15000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// producePartitionResponse extracts the single partition answer of a Produce response.
func producePartitionResponse(resp kmsg.Response) (kmsg.ProduceResponseTopicPartition, error) {
	pr, ok := resp.(*kmsg.ProduceResponse)
	if !ok {
		return kmsg.ProduceResponseTopicPartition{}, fmt.Errorf("response is %T", resp)
	}
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return kmsg.ProduceResponseTopicPartition{}, fmt.Errorf("want one topic with one partition in the Produce response, got %+v", pr.Topics)
	}
	return pr.Topics[0].Partitions[0], nil
}
