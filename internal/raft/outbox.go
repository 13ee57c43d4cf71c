package raft

import (
	pb "go.etcd.io/raft/v3/raftpb"
)

// outbox gathers one round's traffic per peer; written and visible reports are coalesced
// to the largest per group.
type outbox struct {
	h     *Host
	peers map[uint64]*pendingBatch
}

type pendingBatch struct {
	b       *Batch
	written map[uint64]int // group → position in b.Written
	visible map[uint64]int // group → position in b.Visible
}

func newOutbox(h *Host) *outbox { return &outbox{h: h, peers: map[uint64]*pendingBatch{}} }

func (o *outbox) peer(to uint64) *pendingBatch {
	pb := o.peers[to]
	if pb == nil {
		pb = &pendingBatch{written: map[uint64]int{}, visible: map[uint64]int{}}
		o.peers[to] = pb
	}
	if pb.b == nil {
		pb.b = &Batch{From: o.h.id}
	}
	return pb
}

func (o *outbox) addMsg(to, group uint64, m *pb.Message) {
	p := o.peer(to)
	p.b.Messages = append(p.b.Messages, GroupMessage{Group: group, Msg: m})
}

// sending reports whether the round sends peer to anything so far.
func (o *outbox) sending(to uint64) bool {
	p := o.peers[to]
	return p != nil && p.b != nil
}

func (o *outbox) addWritten(to uint64, r WrittenReport) {
	p := o.peer(to)
	p.b.Written = coalesce(p.written, p.b.Written, r)
}

func (o *outbox) addVisible(to uint64, r VisibleReport) {
	p := o.peer(to)
	p.b.Visible = coalesce(p.visible, p.b.Visible, r)
}

// report is what written and visible reports are made of.
type report = struct{ Group, Term, Index uint64 }

// coalesce adds r to list, whose positions by group are at, keeping one report per group:
// the one of the larger term, then of the larger index.
func coalesce[R ~report](at map[uint64]int, list []R, r R) []R {
	nr := report(r)
	if i, ok := at[nr.Group]; ok {
		if cur := report(list[i]); nr.Term > cur.Term || (nr.Term == cur.Term && nr.Index > cur.Index) {
			list[i] = r
		}
		return list
	}
	at[nr.Group] = len(list)
	return append(list, r)
}

func (o *outbox) flush() {
	for to, p := range o.peers {
		if p.b == nil {
			continue
		}
		b := p.b
		p.b = nil
		clear(p.written)
		clear(p.visible)
		if o.h.opts.Transport != nil {
			o.h.opts.Transport.Send(to, b)
		}
	}
}
