package raftrpc

import (
	"errors"
	"sync"
	"sync/atomic"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/rpc"
)

// Reporter is the part of *raft.Host a Sender tells about failed sends.
type Reporter interface {
	ReportUnreachable(group, peer uint64) error
	ReportSnapshot(group, peer uint64, ok bool) error
}

// Stepper is the part of *raft.Host that Register delivers received batches to.
type Stepper interface {
	Step(b *raft.Batch)
}

// Sender is a raft.MessageSender over an rpc.Transport. Its methods are safe for concurrent
// use.
type Sender struct {
	t        *rpc.Transport
	reporter atomic.Pointer[Reporter]

	sent, failed, reported atomic.Uint64
}

// SenderStats are a Sender's cumulative counters.
type SenderStats struct {
	// Sent counts rpc messages queued; Failed the rpc messages not queued (and so lost);
	// Reported the ReportUnreachable and ReportSnapshot calls made for them.
	Sent, Failed, Reported uint64
}

// NewSender returns a Sender over t that tells r about failed sends; with r nil they are
// counted only. The Sender of a *raft.Host, which needs its sender before it exists, comes
// from NewHost instead.
func NewSender(t *rpc.Transport, r Reporter) *Sender {
	s := &Sender{t: t}
	if r != nil {
		s.reporter.Store(&r)
	}
	return s
}

// NewHost creates a raft host whose transport is a new Sender over t (opts.Transport is
// replaced), and returns both. The two refer to each other, the host sending through the
// sender and the sender reporting failed sends to the host, so this one constructor closes
// the loop: the sender knows its host before NewHost returns, before the host has a group
// and so before anything can be sent.
func NewHost(t *rpc.Transport, opts raft.HostOptions) (*raft.Host, *Sender) {
	s := NewSender(t, nil)
	opts.Transport = s
	h := raft.NewHost(opts)
	var r Reporter = h
	s.reporter.Store(&r)
	// A leader whose process is gone need not be waited out (raft/fastelect.go).
	t.OnPeerGone(func(id int32) {
		if rid, ok := RaftID(id); ok {
			h.PeerGone(rid)
		}
	})
	return h, s
}

// Register routes the registry's raft messages (MsgType and VisibleType) to host: each is
// decoded and stepped into host with From set to the sender's authenticated node id, or, if
// it does not decode or comes from an invalid node id, dropped. stats, if not nil, receives
// the counters.
func Register(reg *rpc.Registry, host Stepper, stats *ReceiveStats) error {
	return reg.Register(handler(host, stats), MsgType, VisibleType)
}

// Stats returns the sender's counters.
func (s *Sender) Stats() SenderStats {
	return SenderStats{Sent: s.sent.Load(), Failed: s.failed.Load(), Reported: s.reported.Load()}
}

// Send encodes b and queues it for peer to without blocking: its raft traffic as one
// message of MsgType and its visible reports, if any, as one of VisibleType right after it,
// queued together (rpc.Transport.SendAll) so that they share one frame and one write, and
// encoded in one allocation. When they cannot be queued (backpressure, unknown peer, closed
// transport), every group with a message in b is told that the peer is unreachable, and a
// snapshot in b is reported as failed, so that raft probes the peer again instead of
// waiting; lost visible reports are repeated with the next heartbeat.
func (s *Sender) Send(to uint64, b *raft.Batch) {
	rid, ok := RPCID(to)
	if !ok {
		s.fail(to, b)
		return
	}
	if len(b.Messages) == 0 && len(b.Written) == 0 && b.Heartbeat == nil {
		// Not made by the host, which adds reports only to a peer's batch that holds
		// something else; sent alone all the same.
		if len(b.Visible) > 0 {
			s.count(s.t.Send(rid, VisibleType, EncodeVisible(b.Visible)))
		}
		return
	}
	s.send(rid, to, b, b.Visible)
}

// send queues b's raft traffic, and after it the visible reports (after: a report of a new
// term is kept only by a follower that has stepped that term's messages).
func (s *Sender) send(rid int32, to uint64, b *raft.Batch, visible []raft.VisibleReport) {
	spare := 0
	if len(visible) > 0 {
		spare = visibleSize(visible)
	}
	buf, err := encodeBatch(b, spare)
	if err == nil {
		payload := buf[:len(buf):len(buf)]
		if len(visible) == 0 {
			err = s.t.Send(rid, MsgType, payload)
		} else {
			err = s.t.SendAll(rid, rpc.Message{Type: MsgType, Payload: payload},
				rpc.Message{Type: VisibleType, Payload: appendVisible(buf[len(buf):len(buf)], visible)})
		}
	}
	if errors.Is(err, rpc.ErrMessageTooLarge) && len(b.Messages) > 1 {
		// Too large for one rpc message: halve it (the written reports, heartbeat and
		// visible reports go with the first half).
		half := len(b.Messages) / 2
		s.send(rid, to, &raft.Batch{From: b.From, Messages: b.Messages[:half], Written: b.Written, Heartbeat: b.Heartbeat}, visible)
		s.send(rid, to, &raft.Batch{From: b.From, Messages: b.Messages[half:]}, nil)
		return
	}
	if err == nil {
		s.sent.Add(1)
		return
	}
	s.fail(to, b)
}

// count counts a send that reports nothing back to the host when it fails.
func (s *Sender) count(err error) {
	if err == nil {
		s.sent.Add(1)
	} else {
		s.failed.Add(1)
	}
}

func (s *Sender) fail(to uint64, b *raft.Batch) {
	s.failed.Add(1)
	rp := s.reporter.Load()
	if rp == nil {
		return
	}
	r := *rp
	seen := make(map[uint64]bool, len(b.Messages))
	for _, m := range b.Messages {
		if m.Msg.GetType() == pb.MsgSnap {
			_ = r.ReportSnapshot(m.Group, to, false)
			s.reported.Add(1)
		}
		if !seen[m.Group] {
			seen[m.Group] = true
			_ = r.ReportUnreachable(m.Group, to)
			s.reported.Add(1)
		}
	}
}

// ReceiveStats are the cumulative counters of the raft messages Register routes.
type ReceiveStats struct {
	// Batches counts payloads delivered to the host, Dropped those that did not decode or
	// came from an invalid node id.
	Batches, Dropped atomic.Uint64
}

// handler is the rpc.Handler Register routes MsgType and VisibleType to; the registry gives
// it no other type.
func handler(host Stepper, stats *ReceiveStats) rpc.Handler {
	if stats == nil {
		stats = &ReceiveStats{}
	}
	return func(from int32, msgType uint8, payload []byte) {
		id, ok := RaftID(from)
		if !ok {
			stats.Dropped.Add(1)
			return
		}
		if msgType == VisibleType {
			reports, err := DecodeVisible(payload)
			if err != nil {
				stats.Dropped.Add(1)
				return
			}
			stats.Batches.Add(1)
			host.Step(&raft.Batch{From: id, Visible: reports})
			return
		}
		scratch := quiescedPool.Get().(*[]raft.QuiescedGroup)
		b, err := decodeBatch(payload, *scratch)
		if err != nil {
			quiescedPool.Put(scratch)
			stats.Dropped.Add(1)
			return
		}
		b.From = id
		stats.Batches.Add(1)
		host.Step(b)
		// Step handles the heartbeat listing before it returns (raft.Host.Step): its
		// storage serves the next batch, instead of thousands of entries of garbage per
		// peer per tick on a host with many idle groups.
		if hb := b.Heartbeat; hb != nil && cap(hb.Quiesced) <= maxPooledListing {
			*scratch = hb.Quiesced[:0]
		}
		quiescedPool.Put(scratch)
	}
}

// maxPooledListing bounds the listings kept for reuse.
const maxPooledListing = 1 << 16

var quiescedPool = sync.Pool{New: func() any { return new([]raft.QuiescedGroup) }}

var _ raft.MessageSender = (*Sender)(nil)
