package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/recordbatch"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/txn"
)

// Transactional produce (KIP-890 part 1). A partition leader accepts a producer's first
// batch of a transaction only once the transaction coordinator confirms the partition was
// added to that transaction, so a producer cannot write to a partition its coordinator
// will send no marker to (a transaction that would hang the partition's last stable
// offset). The partition records a verification guard before it asks; a marker landing
// meanwhile clears the guard, so a batch that was verified for a transaction that has
// since ended is refused rather than opening a new one.
//
// Transactional batches are never forwarded: a broker that does not lead the partition
// answers NOT_LEADER_OR_FOLLOWER, as Kafka does for every produce, and the client goes to
// the leader. Forwarding would need the verification at the leader anyway.
//
// Wire (versioned, big endian):
//
//	request  = 1 u8 | corr u64 | producer_id i64 | producer_epoch i16 | partition i32 |
//	           topic_len u16 | topic | id_len u16 | transactional_id
//	response = 1 u8 | corr u64 | error_code i16

const (
	msgTxnVerifyRequest  = rpc.MsgTxnVerifyRequest
	msgTxnVerifyResponse = rpc.MsgTxnVerifyResponse
	txnVerifyVersion     = 1
	// verifyTimeout bounds a leader's wait for the coordinator's answer.
	verifyTimeout = 5 * time.Second
)

var errBadTxnVerify = errors.New("malformed transaction verify message")

type txnVerifyRequest struct {
	corr  uint64
	id    string
	pid   int64
	epoch int16
	tp    txn.TopicPartition
}

func encodeTxnVerifyRequest(r txnVerifyRequest) []byte {
	buf := make([]byte, 0, 1+8+8+2+4+2+len(r.tp.Topic)+2+len(r.id))
	buf = append(buf, txnVerifyVersion)
	buf = binary.BigEndian.AppendUint64(buf, r.corr)
	buf = binary.BigEndian.AppendUint64(buf, uint64(r.pid))
	buf = binary.BigEndian.AppendUint16(buf, uint16(r.epoch))
	buf = binary.BigEndian.AppendUint32(buf, uint32(r.tp.Partition))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(r.tp.Topic)))
	buf = append(buf, r.tp.Topic...)
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(r.id)))
	return append(buf, r.id...)
}

func decodeTxnVerifyRequest(b []byte) (txnVerifyRequest, error) {
	const fixed = 1 + 8 + 8 + 2 + 4 + 2
	var r txnVerifyRequest
	if len(b) < fixed || b[0] != txnVerifyVersion {
		return r, errBadTxnVerify
	}
	r.corr = binary.BigEndian.Uint64(b[1:])
	r.pid = int64(binary.BigEndian.Uint64(b[9:]))
	r.epoch = int16(binary.BigEndian.Uint16(b[17:]))
	r.tp.Partition = int32(binary.BigEndian.Uint32(b[19:]))
	n := int(binary.BigEndian.Uint16(b[23:]))
	rest := b[fixed:]
	if len(rest) < n+2 {
		return r, errBadTxnVerify
	}
	r.tp.Topic = string(rest[:n])
	rest = rest[n:]
	m := int(binary.BigEndian.Uint16(rest))
	if len(rest) != 2+m || m == 0 || r.pid < 0 || r.epoch < 0 {
		return r, errBadTxnVerify
	}
	r.id = string(rest[2:])
	return r, nil
}

func encodeTxnVerifyResponse(corr uint64, err *kerr.Error) []byte {
	buf := make([]byte, 0, 1+8+2)
	buf = append(buf, txnVerifyVersion)
	buf = binary.BigEndian.AppendUint64(buf, corr)
	var code int16
	if err != nil {
		code = err.Code
	}
	return binary.BigEndian.AppendUint16(buf, uint16(code))
}

func decodeTxnVerifyResponse(b []byte) (uint64, *kerr.Error, error) {
	if len(b) != 1+8+2 || b[0] != txnVerifyVersion {
		return 0, nil, errBadTxnVerify
	}
	code := int16(binary.BigEndian.Uint16(b[9:]))
	if code == 0 {
		return binary.BigEndian.Uint64(b[1:]), nil, nil
	}
	var ke *kerr.Error
	if !errors.As(kerr.ErrorForCode(code), &ke) || ke.Code != code {
		return 0, nil, errBadTxnVerify // no Kafka error has this code
	}
	return binary.BigEndian.Uint64(b[1:]), ke, nil
}

// ProduceTxn writes a batch of a transactional producer, verifying first, when the
// partition has no transaction of this producer open, that the coordinator of id added the
// partition to the producer's transaction. A batch that is not transactional is an
// ordinary produce.
func (b *Broker) ProduceTxn(requester Requester, id, topic string, part int32, records []byte, acks int16, timeout time.Duration) (partition.ProduceResult, func(context.Context) partition.ProduceResult) {
	h, ok := recordbatch.ParseHeader(records)
	if !ok || h.Attributes&recordbatch.AttrTransactional == 0 {
		return b.Produce(requester, topic, part, records, acks, timeout)
	}
	if h.ProducerID < 0 || h.BaseSequence < 0 {
		return produceFailed(kerr.InvalidRecord, "a transactional batch needs a producer id and sequence numbers"), nil
	}
	t, ok := b.topic(topic)
	if !ok || part < 0 || part >= t.Partitions() {
		return produceFailed(kerr.UnknownTopicOrPartition, ""), nil
	}
	b.mu.RLock()
	r := b.replicas[replicaKey{t.ID, part}]
	b.mu.RUnlock()
	if r == nil || !r.p.IsLeader() {
		return produceFailed(kerr.NotLeaderForPartition, "transactional batches go to the partition's leader"), nil
	}
	guard, open := beginTxnVerification(r.p, h.ProducerID, h.ProducerEpoch)
	if !open {
		ctx, cancel := context.WithTimeout(b.ctx, min(timeout, verifyTimeout))
		err := b.VerifyTxnPartition(ctx, id, h.ProducerID, h.ProducerEpoch, txn.TopicPartition{Topic: topic, Partition: part})
		cancel()
		if err != nil {
			return produceFailed(verifyErrorForProduce(err), "the transaction coordinator did not confirm that the partition is in the transaction"), nil
		}
	}
	return produceTxnOn(r.p, records, acks, guard)
}

// verifyErrorForProduce is what a producer is told when verification fails: the
// coordinator's own errors, except that an unreachable coordinator is retriable.
func verifyErrorForProduce(err *kerr.Error) *kerr.Error {
	switch err {
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.RequestTimedOut:
		return kerr.NotEnoughReplicas // retriable, and the producer keeps its transaction
	}
	return err
}

// VerifyTxnPartition asks the coordinator of id, here or on another broker, whether tp is
// in the producer's ongoing transaction (nil: it is).
func (b *Broker) VerifyTxnPartition(ctx context.Context, id string, pid int64, epoch int16, tp txn.TopicPartition) *kerr.Error {
	if b.txns == nil || b.txns.Partitions() <= 0 {
		return kerr.CoordinatorNotAvailable
	}
	t, ok := b.topic(txn.StateTopic)
	if !ok {
		return kerr.CoordinatorNotAvailable
	}
	v := b.PartitionView(*t, txn.PartitionFor(id, b.txns.Partitions()))
	switch {
	case v.Leader < 0:
		return kerr.CoordinatorNotAvailable
	case v.Leader == b.cfg.NodeID:
		return b.txns.VerifyPartition(id, pid, epoch, tp)
	}
	res, err := b.verifyCalls.call(ctx, func(corr uint64) error {
		req := txnVerifyRequest{corr: corr, id: id, pid: pid, epoch: epoch, tp: tp}
		return b.transport.Send(v.Leader, msgTxnVerifyRequest, encodeTxnVerifyRequest(req))
	})
	if err != nil {
		return kerr.RequestTimedOut
	}
	return res
}

// handleTxnVerify answers other leaders' verification requests from this broker's
// coordinator, and hands the answers to this broker's own requests back.
func (b *Broker) handleTxnVerify(from int32, typ uint8, payload []byte) {
	if typ == msgTxnVerifyResponse {
		corr, err, derr := decodeTxnVerifyResponse(payload)
		if derr != nil {
			b.lg.Warn("dropping a malformed transaction verify answer", "from", from, "err", derr)
			return
		}
		b.verifyCalls.answer(corr, err)
		return
	}
	req, err := decodeTxnVerifyRequest(payload)
	if err != nil {
		b.lg.Warn("dropping a malformed transaction verify request", "from", from, "err", err)
		return
	}
	var answer *kerr.Error = kerr.CoordinatorNotAvailable
	if b.txns != nil {
		answer = b.txns.VerifyPartition(req.id, req.pid, req.epoch, req.tp)
	}
	_ = b.transport.Send(from, msgTxnVerifyResponse, encodeTxnVerifyResponse(req.corr, answer)) // lost: the leader's wait times out and the producer retries
}
