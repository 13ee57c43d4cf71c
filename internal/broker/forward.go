package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/security"
)

// Produce forwarding: a produce for a partition this broker does not lead goes to the
// leader over the inter-broker transport, whatever its acks (DESIGN.md §1: an acks=0 record
// reaching a follower is never dropped silently), and the leader's answer comes back. With
// Config.DisableForwarding the broker answers NOT_LEADER_OR_FOLLOWER instead, and clients
// refresh their metadata and go to the leader themselves.
//
// Wire (versioned, big endian):
//
//	request v1 = 1 u8 | corr u64 (0: acks=0, no answer wanted) | acks i16 | timeout_ms i32 |
//	             partition i32 | topic_len u16 | topic | records (the rest)
//	request v2 = 2 u8 | corr u64 | acks i16 | timeout_ms i32 | partition i32 | topic_len u16 |
//	             topic | principal_len u16 | principal | host_len u8 | host | records (the rest)
//	response   = 1 u8 | corr u64 | error_code i16 | base_offset i64 | log_start i64 |
//	             msg_len u16 | msg
//
// v2 carries the client's principal and host, so that the leader checks the client's WRITE
// ACL itself (forward_authz.go). A broker sends v2 while authorization is on and v1 while
// it is off, which a broker of the previous release still reads during a rolling upgrade.
// A v1 request has no requester: the leader treats it as User:ANONYMOUS from an unknown
// host, so with authorization on it is denied unless ANONYMOUS may write from any host.

const (
	forwardVersionAnonymous = 1 // no requester
	forwardVersion          = 2 // with the requester
	forwardResponseVersion  = 1
)

// maxForwardInflight bounds the forwarded produces a leader works on at once; beyond it
// they are answered REQUEST_TIMED_OUT (retriable) rather than queued without bound.
const maxForwardInflight = 1024

type forwarder struct {
	b       *Broker
	corr    atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]chan partition.ProduceResult
	sem     chan struct{}

	// Leader side. queues holds one FIFO per sending broker: its worker runs the append
	// part of each forwarded produce in the order the sender forwarded them (the order its
	// clients sent them), and only the waits for acknowledgement run concurrently. Running
	// whole produces on a goroutine each let a producer's later batch reach the sequence
	// check before an earlier one: OUT_OF_ORDER_SEQUENCE_NUMBER, which makes franz-go
	// renumber its unacknowledged batches under a new epoch, duplicating any of them that
	// was in fact stored (found by the chaos suite).
	queues map[int32]chan forwardRequest
	ctx    context.Context // ends the workers and the waits
	start  func(forwardRequest) (partition.ProduceResult, func(context.Context) partition.ProduceResult)
	send   func(to int32, typ uint8, payload []byte) error
	authz  produceAuthorizer // checks each forwarded produce's requester before it is appended
}

func newForwarder(b *Broker) *forwarder {
	f := &forwarder{b: b, pending: map[uint64]chan partition.ProduceResult{}, sem: make(chan struct{}, maxForwardInflight),
		queues: map[int32]chan forwardRequest{}, ctx: b.ctx}
	f.start = f.serve
	f.send = func(to int32, typ uint8, payload []byte) error { return b.transport.Send(to, typ, payload) }
	f.authz = b
	return f
}

var errBadForward = errors.New("malformed forwarded produce")

type forwardRequest struct {
	corr      uint64
	acks      int16
	timeoutMs int32
	partition int32
	topic     string
	// requester is the client that sent the produce; nil sends (and decodes from) v1.
	requester *Requester
	records   []byte
}

// encodeForwardRequest fails only for a principal or host too long for its length field,
// which no authenticated client has (a SASL user name is bounded far below it).
func encodeForwardRequest(r forwardRequest) ([]byte, error) {
	version := byte(forwardVersionAnonymous)
	extra := 0
	if r.requester != nil {
		if len(r.requester.Principal) > 1<<16-1 || len(r.requester.Host) > 1<<8-1 {
			return nil, errors.New("the requester's principal or host is too long to forward")
		}
		version, extra = forwardVersion, 2+len(r.requester.Principal)+1+len(r.requester.Host)
	}
	buf := make([]byte, 0, 1+8+2+4+4+2+len(r.topic)+extra+len(r.records))
	buf = append(buf, version)
	buf = binary.BigEndian.AppendUint64(buf, r.corr)
	buf = binary.BigEndian.AppendUint16(buf, uint16(r.acks))
	buf = binary.BigEndian.AppendUint32(buf, uint32(r.timeoutMs))
	buf = binary.BigEndian.AppendUint32(buf, uint32(r.partition))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(r.topic)))
	buf = append(buf, r.topic...)
	if r.requester != nil {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(r.requester.Principal)))
		buf = append(buf, r.requester.Principal...)
		buf = append(buf, byte(len(r.requester.Host)))
		buf = append(buf, r.requester.Host...)
	}
	return append(buf, r.records...), nil
}

func decodeForwardRequest(b []byte) (forwardRequest, error) {
	var r forwardRequest
	if len(b) < 21 || (b[0] != forwardVersionAnonymous && b[0] != forwardVersion) {
		return r, errBadForward
	}
	r.corr = binary.BigEndian.Uint64(b[1:])
	r.acks = int16(binary.BigEndian.Uint16(b[9:]))
	r.timeoutMs = int32(binary.BigEndian.Uint32(b[11:]))
	r.partition = int32(binary.BigEndian.Uint32(b[15:]))
	n := int(binary.BigEndian.Uint16(b[19:]))
	if len(b) < 21+n {
		return r, errBadForward
	}
	r.topic = string(b[21 : 21+n])
	rest := b[21+n:]
	if b[0] == forwardVersion {
		if len(rest) < 2 {
			return r, errBadForward
		}
		pn := int(binary.BigEndian.Uint16(rest))
		if len(rest) < 2+pn+1 {
			return r, errBadForward
		}
		principal := security.Principal(rest[2 : 2+pn])
		hn := int(rest[2+pn])
		rest = rest[2+pn+1:]
		if len(rest) < hn {
			return r, errBadForward
		}
		r.requester = &Requester{Principal: principal, Host: string(rest[:hn])}
		rest = rest[hn:]
	}
	r.records = rest
	return r, nil
}

func encodeForwardResponse(corr uint64, res partition.ProduceResult) []byte {
	msg := res.Msg
	if len(msg) > 1<<15 {
		msg = msg[:1<<15]
	}
	var code int16
	if res.Err != nil {
		code = res.Err.Code
	}
	buf := make([]byte, 0, 1+8+2+8+8+2+len(msg))
	buf = append(buf, forwardResponseVersion)
	buf = binary.BigEndian.AppendUint64(buf, corr)
	buf = binary.BigEndian.AppendUint16(buf, uint16(code))
	buf = binary.BigEndian.AppendUint64(buf, uint64(res.BaseOffset))
	buf = binary.BigEndian.AppendUint64(buf, uint64(res.LogStartOffset))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(msg)))
	return append(buf, msg...)
}

func decodeForwardResponse(b []byte) (uint64, partition.ProduceResult, error) {
	var res partition.ProduceResult
	if len(b) < 29 || b[0] != forwardResponseVersion {
		return 0, res, errBadForward
	}
	corr := binary.BigEndian.Uint64(b[1:])
	code := int16(binary.BigEndian.Uint16(b[9:]))
	res.BaseOffset = int64(binary.BigEndian.Uint64(b[11:]))
	res.LogStartOffset = int64(binary.BigEndian.Uint64(b[19:]))
	n := int(binary.BigEndian.Uint16(b[27:]))
	if len(b) != 29+n {
		return 0, res, errBadForward
	}
	res.Msg = string(b[29:])
	if code != 0 {
		res.Err = kerr.UnknownServerError
		if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
			res.Err = e
		}
	}
	return corr, res, nil
}

func produceFailed(err *kerr.Error, msg string) partition.ProduceResult {
	return partition.ProduceResult{BaseOffset: -1, LogStartOffset: -1, Err: err, Msg: msg}
}

// Produce routes one partition's produce: to the local replica when it leads, else to the
// leader (forwarding). The result and wait follow partition.Partition.Produce; a forwarded
// produce always returns a wait (for acks 0 it is never needed: the answer is not awaited).
// The caller has checked the requester's WRITE on the topic; a leader checks a forwarded
// produce's requester again, since it cannot trust that the forwarding broker did.
func (b *Broker) Produce(requester Requester, topic string, part int32, records []byte, acks int16, timeout time.Duration) (partition.ProduceResult, func(context.Context) partition.ProduceResult) {
	t, ok := b.topic(topic)
	if !ok || part < 0 || part >= t.Partitions() {
		return produceFailed(kerr.UnknownTopicOrPartition, ""), nil
	}
	b.mu.RLock()
	r := b.replicas[replicaKey{t.ID, part}]
	b.mu.RUnlock()
	if r != nil && r.p.IsLeader() {
		return r.p.Produce(records, acks)
	}
	if b.cfg.DisableForwarding {
		return produceFailed(kerr.NotLeaderForPartition, "this broker does not lead the partition (forwarding is off)"), nil
	}
	v := b.PartitionView(*t, part)
	if v.Leader < 0 || v.Leader == b.cfg.NodeID {
		return produceFailed(kerr.NotLeaderForPartition, "the partition has no leader yet; retry"), nil
	}
	req := forwardRequest{acks: acks, timeoutMs: int32(min(timeout.Milliseconds(), 1<<31-1)), partition: part, topic: topic, records: records}
	req.requester = requesterToForward(b, requester)
	return b.fwd.forward(v.Leader, req)
}

func (f *forwarder) forward(leader int32, req forwardRequest) (partition.ProduceResult, func(context.Context) partition.ProduceResult) {
	var ch chan partition.ProduceResult
	if req.acks != 0 {
		req.corr = f.corr.Add(1)
		ch = make(chan partition.ProduceResult, 1)
		f.mu.Lock()
		f.pending[req.corr] = ch
		f.mu.Unlock()
	}
	payload, err := encodeForwardRequest(req) // copies the records: the request buffer is reused
	if err != nil {
		f.drop(req.corr)
		return produceFailed(kerr.TopicAuthorizationFailed, err.Error()), nil
	}
	if err := f.b.transport.Send(leader, msgForwardRequest, payload); err != nil {
		f.drop(req.corr)
		return produceFailed(kerr.NotLeaderForPartition, "the leader could not be reached: "+err.Error()+"; retry"), nil
	}
	if ch == nil {
		return partition.ProduceResult{BaseOffset: -1, LogStartOffset: -1}, nil
	}
	return partition.ProduceResult{BaseOffset: -1, LogStartOffset: -1}, func(ctx context.Context) partition.ProduceResult {
		defer f.drop(req.corr)
		select {
		case res := <-ch:
			return res
		case <-ctx.Done():
			return produceFailed(kerr.RequestTimedOut, "the leader did not answer the forwarded produce in time")
		case <-f.b.ctx.Done():
			return produceFailed(kerr.NotLeaderForPartition, "the broker is shutting down; retry")
		}
	}
}

func (f *forwarder) drop(corr uint64) {
	if corr == 0 {
		return
	}
	f.mu.Lock()
	delete(f.pending, corr)
	f.mu.Unlock()
}

// handle receives forwarding traffic (on the transport's delivery goroutine: it must not
// block, so the produce runs on its own goroutine).
func (f *forwarder) handle(from int32, typ uint8, payload []byte) {
	switch typ {
	case msgForwardResponse:
		corr, res, err := decodeForwardResponse(payload)
		if err != nil {
			f.b.lg.Warn("dropping a malformed forwarded produce answer", "from", from, "err", err)
			return
		}
		f.mu.Lock()
		ch := f.pending[corr]
		delete(f.pending, corr)
		f.mu.Unlock()
		if ch != nil {
			ch <- res
		}
	case msgForwardRequest:
		req, err := decodeForwardRequest(payload)
		if err != nil {
			f.b.lg.Warn("dropping a malformed forwarded produce", "from", from, "err", err)
			return
		}
		select {
		case f.sem <- struct{}{}:
		default:
			f.reply(from, req.corr, produceFailed(kerr.RequestTimedOut, "the leader is busy with forwarded produces; retry"))
			return
		}
		req.records = append([]byte(nil), req.records...) // the payload belongs to the transport
		// Never blocks: every queued request holds a slot of sem, and a queue has room
		// for all of them.
		f.queue(from) <- req
	}
}

// queue returns the FIFO of forwarded produces from one broker, starting its worker.
func (f *forwarder) queue(from int32) chan forwardRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[from]
	if q == nil {
		q = make(chan forwardRequest, maxForwardInflight)
		f.queues[from] = q
		go f.work(from, q)
	}
	return q
}

// work appends one broker's forwarded produces in order, each only once its requester's
// WRITE is checked here; each acknowledgement is awaited on its own goroutine, so a slow
// commit does not hold up the next append.
func (f *forwarder) work(from int32, q chan forwardRequest) {
	for {
		var req forwardRequest
		select {
		case req = <-q:
		case <-f.ctx.Done():
			return
		}
		res, denied := authorizeForwarded(f.authz, req)
		var wait func(context.Context) partition.ProduceResult
		if !denied {
			res, wait = f.start(req)
		}
		if wait == nil {
			f.reply(from, req.corr, res)
			<-f.sem
			continue
		}
		go func() {
			defer func() { <-f.sem }()
			ctx, cancel := context.WithTimeout(f.ctx, time.Duration(max(req.timeoutMs, 0))*time.Millisecond)
			defer cancel()
			f.reply(from, req.corr, wait(ctx))
		}()
	}
}

// serve appends a forwarded produce on the local leader (it is never forwarded again) and
// returns the wait for its acknowledgement, as partition.Partition.Produce does.
func (f *forwarder) serve(req forwardRequest) (partition.ProduceResult, func(context.Context) partition.ProduceResult) {
	if req.acks != 0 && req.acks != 1 && req.acks != -1 {
		return produceFailed(kerr.InvalidRequiredAcks, "acks must be -1 (all), 0 or 1"), nil
	}
	p, kerrv := f.b.Partition(req.topic, req.partition)
	if kerrv != nil {
		return produceFailed(kerrv, ""), nil
	}
	if !p.IsLeader() {
		return produceFailed(kerr.NotLeaderForPartition, "this broker no longer leads the partition; retry"), nil
	}
	return p.Produce(req.records, req.acks)
}

func (f *forwarder) reply(to int32, corr uint64, res partition.ProduceResult) {
	if corr == 0 {
		// acks=0: nobody waits for the answer, but a refused record must not vanish
		// without a trace.
		if res.Err != nil {
			f.b.lg.Warn("a forwarded acks=0 produce was refused", "from", to, "err", res.Err.Message, "msg", res.Msg)
		}
		return
	}
	_ = f.send(to, msgForwardResponse, encodeForwardResponse(corr, res)) // lost: the producer times out and retries
}
