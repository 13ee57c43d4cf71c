package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/group"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/rpc"
)

// Transaction markers (DESIGN.md §10): the transaction coordinator, once a transaction's
// PrepareCommit or PrepareAbort is durable, has every partition of the transaction write a
// commit or abort marker through that partition's own Raft group. WriteTxnMarker routes one
// marker to the partition's leader, on this broker or over the inter-broker transport, and
// returns once the leader acknowledged it as an acks=all produce, or failed. The
// coordinator retries a failure (a leader change, a timeout) until the marker is written;
// the partition makes a repeated marker a no-op, so a retry after a lost answer never
// writes a second one.
//
// Wire (versioned, big endian):
//
//	request  = 1 u8 | corr u64 | timeout_ms i32 | producer_id i64 | producer_epoch i16 |
//	           commit u8 | coordinator_epoch i32 | partition i32 | topic_len u16 | topic
//	response = the forwarded produce's response (forward.go)

const (
	msgTxnMarkerRequest  = rpc.MsgTxnMarkerRequest
	msgTxnMarkerResponse = rpc.MsgTxnMarkerResponse
	txnMarkerVersion     = 1
	// maxMarkerInflight bounds the markers a leader writes at once for other brokers;
	// beyond it a marker is answered REQUEST_TIMED_OUT and its coordinator retries.
	maxMarkerInflight = 256
)

var errBadTxnMarker = errors.New("malformed transaction marker request")

// TxnMarker is one marker to write: which partition, for which producer and epoch, and
// which outcome.
type TxnMarker struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
}

type txnMarkerRequest struct {
	corr      uint64
	timeoutMs int32
	m         TxnMarker
}

func encodeTxnMarkerRequest(r txnMarkerRequest) []byte {
	buf := make([]byte, 0, 1+8+4+8+2+1+4+4+2+len(r.m.Topic))
	buf = append(buf, txnMarkerVersion)
	buf = binary.BigEndian.AppendUint64(buf, r.corr)
	buf = binary.BigEndian.AppendUint32(buf, uint32(r.timeoutMs))
	buf = binary.BigEndian.AppendUint64(buf, uint64(r.m.ProducerID))
	buf = binary.BigEndian.AppendUint16(buf, uint16(r.m.ProducerEpoch))
	commit := byte(0)
	if r.m.Commit {
		commit = 1
	}
	buf = append(buf, commit)
	buf = binary.BigEndian.AppendUint32(buf, uint32(r.m.CoordinatorEpoch))
	buf = binary.BigEndian.AppendUint32(buf, uint32(r.m.Partition))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(r.m.Topic)))
	return append(buf, r.m.Topic...)
}

func decodeTxnMarkerRequest(b []byte) (txnMarkerRequest, error) {
	const fixed = 1 + 8 + 4 + 8 + 2 + 1 + 4 + 4 + 2
	var r txnMarkerRequest
	if len(b) < fixed || b[0] != txnMarkerVersion || b[23] > 1 {
		return r, errBadTxnMarker
	}
	r.corr = binary.BigEndian.Uint64(b[1:])
	r.timeoutMs = int32(binary.BigEndian.Uint32(b[9:]))
	r.m.ProducerID = int64(binary.BigEndian.Uint64(b[13:]))
	r.m.ProducerEpoch = int16(binary.BigEndian.Uint16(b[21:]))
	r.m.Commit = b[23] == 1
	r.m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(b[24:]))
	r.m.Partition = int32(binary.BigEndian.Uint32(b[28:]))
	n := int(binary.BigEndian.Uint16(b[32:]))
	if len(b) != fixed+n || r.timeoutMs < 0 || r.m.ProducerID < 0 || r.m.ProducerEpoch < 0 {
		return r, errBadTxnMarker
	}
	r.m.Topic = string(b[fixed:])
	return r, nil
}

// WriteTxnMarker writes one marker on its partition's leader and returns once it is
// acknowledged, or the reason it is not (nil on success). ctx bounds the whole wait.
func (b *Broker) WriteTxnMarker(ctx context.Context, m TxnMarker) (*kerr.Error, string) {
	t, ok := b.topic(m.Topic)
	if !ok || m.Partition < 0 || m.Partition >= t.Partitions() {
		return kerr.UnknownTopicOrPartition, "the transaction's partition no longer exists"
	}
	v := b.PartitionView(*t, m.Partition)
	if v.Leader == b.cfg.NodeID {
		res := b.writeMarkerHere(ctx, m)
		return res.Err, res.Msg
	}
	if v.Leader < 0 {
		return kerr.NotLeaderForPartition, "the partition has no leader yet"
	}
	timeout := time.Second * 30
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	res, err := b.markerCalls.call(ctx, func(corr uint64) error {
		req := txnMarkerRequest{corr: corr, timeoutMs: int32(min(max(timeout.Milliseconds(), 0), 1<<31-1)), m: m}
		return b.transport.Send(v.Leader, msgTxnMarkerRequest, encodeTxnMarkerRequest(req))
	})
	if err != nil {
		return kerr.RequestTimedOut, "the partition leader did not acknowledge the marker: " + err.Error()
	}
	return res.Err, res.Msg
}

// writeMarkerHere writes a marker on the local replica, which must lead.
func (b *Broker) writeMarkerHere(ctx context.Context, m TxnMarker) partition.ProduceResult {
	p, kerrv := b.Partition(m.Topic, m.Partition)
	if kerrv != nil {
		return produceFailed(kerrv, "")
	}
	if !p.IsLeader() {
		return produceFailed(kerr.NotLeaderForPartition, "this broker no longer leads the partition")
	}
	res := writeMarkerOn(ctx, p, m)
	if res.Err == nil && m.Topic == group.OffsetsTopic && b.groups != nil {
		// The group coordinator of this partition is this broker: it settles the
		// transaction's pending offsets now that the marker is durable.
		b.groups.CompleteTxn(m.Partition, m.ProducerID, m.Commit)
	}
	return res
}

// handleTxnMarker serves markers for other brokers' coordinators and hands their answers
// back. It runs on the transport's delivery goroutine, so each marker is written on its own
// goroutine, at most maxMarkerInflight at once.
func (b *Broker) handleTxnMarker(from int32, typ uint8, payload []byte) {
	if typ == msgTxnMarkerResponse {
		corr, res, err := decodeForwardResponse(payload)
		if err != nil {
			b.lg.Warn("dropping a malformed transaction marker answer", "from", from, "err", err)
			return
		}
		b.markerCalls.answer(corr, res)
		return
	}
	req, err := decodeTxnMarkerRequest(payload)
	if err != nil {
		b.lg.Warn("dropping a malformed transaction marker request", "from", from, "err", err)
		return
	}
	reply := func(res partition.ProduceResult) {
		_ = b.transport.Send(from, msgTxnMarkerResponse, encodeForwardResponse(req.corr, res)) // lost: the coordinator retries
	}
	select {
	case b.markerSem <- struct{}{}:
	default:
		reply(produceFailed(kerr.RequestTimedOut, "the leader is busy writing markers; retry"))
		return
	}
	go func() {
		defer func() { <-b.markerSem }()
		ctx, cancel := context.WithTimeout(b.ctx, time.Duration(req.timeoutMs)*time.Millisecond)
		defer cancel()
		reply(b.writeMarkerHere(ctx, req.m))
	}()
}
