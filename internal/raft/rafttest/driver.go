// Package rafttest drives a set of raft hosts deterministically, for the tests of raft and
// of the packages above it (partition). It owns the driver: raft.DrivenHosts (no
// goroutines) on one manual Clock, an in-memory network that holds every batch until the
// test delivers or drops it, fsyncs that run only when the test lets them, and the script
// commands (datadriven format) that say all this (commands.go). Everything happens on the
// test's goroutine, in the order the script fixes, so a scenario that a goroutine test can
// only wait for on the wall clock is stepped here one message, fsync and tick at a time.
//
// It does not own raft groups or their storage: the test adds its groups to the hosts
// (raft's scripts a bare group, partition's a partition replica) and prints what it
// asserts. It must never be imported by anything but tests, and never reach into a host
// except through what raft exports for driving one (raft.DrivenHost).
package rafttest

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/raftrpc"
)

// Driver runs hosts 1..n. Its methods, and the hosts' rounds, must be called from the
// test's goroutine only.
type Driver struct {
	t     testing.TB
	clock *Clock
	ids   []uint64
	hosts map[uint64]*raft.DrivenHost
	// inflight holds the batches sent and not yet delivered, in the order they were sent.
	inflight []envelope
	cut      map[uint64]bool // hosts whose traffic (both ways) is lost
	held     map[uint64]bool // hosts whose fsyncs wait for an explicit Fsync
	// showVisible makes Deliver's lines name the leaders' visible reports, which most
	// scripts leave out (they ride on nearly every batch a leader sends).
	showVisible bool
	// sent counts what each link carried since the last Traffic.
	sent map[link]LinkTraffic
}

type link struct{ from, to uint64 }

// LinkTraffic is what one host sent another: batches (each one raftrpc Send, queued as one),
// the raft messages in them, and the visible reports riding along, with how many batches
// carried nothing but visible reports, and how many groups the heartbeats listed.
type LinkTraffic struct {
	Batches, Messages, Visible, VisibleAlone, Listed int
}

// envelope is one batch in flight.
type envelope struct {
	from, to uint64
	b        *raft.Batch
}

// New builds n driven hosts, ids 1 to n, with raft's default options (which each of
// options may change), on a new Clock.
func New(t testing.TB, n int, options ...func(*raft.HostOptions)) *Driver {
	d := &Driver{t: t, clock: NewClock(), hosts: map[uint64]*raft.DrivenHost{},
		cut: map[uint64]bool{}, held: map[uint64]bool{}, sent: map[link]LinkTraffic{}}
	for i := 1; i <= n; i++ {
		id := uint64(i)
		d.ids = append(d.ids, id)
		opts := raft.HostOptions{NodeID: id, Transport: sender{d, id}}
		for _, o := range options {
			o(&opts)
		}
		d.hosts[id] = raft.NewDrivenHost(opts, d.clock)
	}
	return d
}

// sender is a host's transport: the batch crosses raftrpc's wire encoding, so the
// receiver shares nothing with the sender, and waits in the driver until delivered.
type sender struct {
	d    *Driver
	from uint64
}

func (s sender) Send(to uint64, b *raft.Batch) {
	payload, err := raftrpc.EncodeBatch(b)
	if err != nil {
		s.d.t.Fatalf("host %d sends %d a batch the wire cannot carry: %v", s.from, to, err)
	}
	c, err := raftrpc.DecodeBatch(payload)
	if err != nil {
		s.d.t.Fatalf("host %d to %d: the wire does not decode its own batch: %v", s.from, to, err)
	}
	if len(b.Visible) > 0 {
		// raftrpc sends them as a message of their own, right after the batch.
		if c.Visible, err = raftrpc.DecodeVisible(raftrpc.EncodeVisible(b.Visible)); err != nil {
			s.d.t.Fatalf("host %d to %d: the wire does not decode its own visible reports: %v", s.from, to, err)
		}
	}
	c.From = s.from // the rpc frame carries the sender
	lt := s.d.sent[link{s.from, to}]
	lt.Batches++
	lt.Messages += len(b.Messages)
	lt.Visible += len(b.Visible)
	if b.Heartbeat != nil {
		lt.Listed += b.Heartbeat.Listed()
	}
	if len(b.Visible) > 0 && len(b.Messages) == 0 && len(b.Written) == 0 && b.Heartbeat == nil {
		lt.VisibleAlone++
	}
	s.d.sent[link{s.from, to}] = lt
	s.d.inflight = append(s.d.inflight, envelope{from: s.from, to: to, b: c})
}

// IDs are the hosts' ids, in order.
func (d *Driver) IDs() []uint64 { return d.ids }

// Host is host id.
func (d *Driver) Host(id uint64) *raft.DrivenHost {
	h, ok := d.hosts[id]
	if !ok {
		d.t.Fatalf("no host %d (hosts %v)", id, d.ids)
	}
	return h
}

// Clock is the hosts' clock.
func (d *Driver) Clock() *Clock { return d.clock }

// Close closes every host (their groups' waiters fail with raft.ErrHostClosed).
func (d *Driver) Close() {
	for _, id := range d.ids {
		d.hosts[id].Close()
	}
}

// Process runs host id's ready handling until it has none left (see
// raft.DrivenHost.RunReady); it reports whether there was any.
func (d *Driver) Process(id uint64) bool { return d.Host(id).RunReady() }

// Fsync runs host id's flushes, held or not, until its flush queue is empty; it reports
// whether there was any.
func (d *Driver) Fsync(id uint64) bool { return d.Host(id).RunFlushes() }

// Hold makes Stabilize leave host id's flushes queued (held) or run them again.
func (d *Driver) Hold(id uint64, held bool) { d.setFlag(d.held, id, held) }

// Cut makes every batch to or from host id dropped (cut) or delivered again.
func (d *Driver) Cut(id uint64, cut bool) { d.setFlag(d.cut, id, cut) }

func (d *Driver) setFlag(m map[uint64]bool, id uint64, on bool) {
	d.Host(id) // an unknown id fails the test
	if on {
		m[id] = true
	} else {
		delete(m, id)
	}
}

// HearAll makes every host that is not cut hear, now, from every other that is not: what
// their tickers' exchanges over a spell of the clock would leave behind, as far as the
// hosts' liveness tables go (an empty batch moves no group).
func (d *Driver) HearAll() {
	for _, to := range d.ids {
		for _, from := range d.ids {
			if to != from && !d.cut[to] && !d.cut[from] {
				d.Host(to).Step(&raft.Batch{From: from})
			}
		}
	}
}

// Traffic returns one line per link that carried anything since the last call (see
// LinkTraffic), in order, and starts counting afresh.
func (d *Driver) Traffic() []string {
	var out []string
	for l, lt := range d.sent {
		out = append(out, fmt.Sprintf("%d->%d: batches=%d messages=%d visible=%d visible-alone=%d listed=%d",
			l.from, l.to, lt.Batches, lt.Messages, lt.Visible, lt.VisibleAlone, lt.Listed))
	}
	sort.Strings(out)
	clear(d.sent)
	return out
}

// ShowVisible makes Deliver's lines name the visible reports of the batches (see describe).
func (d *Driver) ShowVisible(on bool) { d.showVisible = on }

// Tick runs one ticker round on each of the hosts.
func (d *Driver) Tick(ids ...uint64) {
	for _, id := range ids {
		d.Host(id).Tick()
	}
}

// ProcessWhile runs f on a goroutine of its own and, until f returns, host id's ready
// handling on the test's: for a call that returns only once its host has handled what it
// queued (a partition's Produce waits for its leader's append). The host's ready work
// from before the call is run first, so that what f queues is handled in rounds of its
// own, as the same script's rounds were on every run.
func (d *Driver) ProcessWhile(id uint64, f func()) {
	h := d.Host(id)
	h.RunReady()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		if !h.RunReady() {
			runtime.Gosched() // f has not queued its work yet
		}
	}
}

// Deliver hands the receivers the batches in flight that match (from or to 0: any), link
// by link in the order each link's batches were sent, or drops them; a batch to or from a
// cut host is always dropped. It returns one line per batch (see describe).
func (d *Driver) Deliver(from, to uint64, drop bool) []string {
	var now, later []envelope
	for _, e := range d.inflight {
		if (from == 0 || e.from == from) && (to == 0 || e.to == to) {
			now = append(now, e)
		} else {
			later = append(later, e)
		}
	}
	d.inflight = later
	sort.SliceStable(now, func(i, j int) bool {
		if now[i].to != now[j].to {
			return now[i].to < now[j].to
		}
		return now[i].from < now[j].from
	})
	var out []string
	for _, e := range now {
		fate := "delivered"
		if drop || d.cut[e.from] || d.cut[e.to] {
			fate = "dropped"
		} else {
			d.hosts[e.to].Step(e.b)
		}
		if line := describe(e, d.showVisible); line != "" {
			out = append(out, fmt.Sprintf("%s %s", fate, line))
		}
	}
	return out
}

// Stabilize runs ready handling, fsyncs (of hosts not held) and deliveries until none has
// anything left: the hosts are idle until the next tick, clock advance or call into them.
func (d *Driver) Stabilize() {
	for round := 0; ; round++ {
		if round == 10000 {
			d.t.Fatal("stabilize: still busy after 10000 rounds")
		}
		busy := false
		for _, id := range d.ids {
			busy = d.Process(id) || busy
		}
		for _, id := range d.ids {
			if !d.held[id] {
				busy = d.Fsync(id) || busy
			}
		}
		if len(d.inflight) > 0 {
			d.Deliver(0, 0, false)
			busy = true
		}
		if !busy {
			return
		}
	}
}

// describe is a line per batch: its raft messages and written reports, and its visible
// reports if visible (a batch of nothing else shown, such as a bare coalesced heartbeat,
// which says only that the sender is alive, is left out).
func describe(e envelope, visible bool) string {
	var parts []string
	for _, gm := range e.b.Messages {
		m := gm.Msg
		s := fmt.Sprintf("%s term=%d", strings.TrimPrefix(m.GetType().String(), "Msg"), m.GetTerm())
		switch m.GetType() {
		case pb.MsgApp:
			s += fmt.Sprintf(" index=%d entries=%d commit=%d", m.GetIndex(), len(m.GetEntries()), m.GetCommit())
		case pb.MsgAppResp:
			s += fmt.Sprintf(" index=%d", m.GetIndex())
		case pb.MsgHeartbeat:
			s += fmt.Sprintf(" commit=%d", m.GetCommit())
		}
		if m.GetReject() {
			s += " rejected"
		}
		parts = append(parts, s)
	}
	if hb := e.b.Heartbeat; hb != nil && hb.Listed() > 0 {
		var qs []string
		for _, q := range hb.Groups() {
			qs = append(qs, fmt.Sprintf("group=%d term=%d commit=%d", q.Group, q.Term, q.Commit))
		}
		parts = append(parts, "HostHeartbeat quiesced: "+strings.Join(qs, "; "))
	}
	for _, w := range e.b.Written {
		parts = append(parts, fmt.Sprintf("Written term=%d index=%d", w.Term, w.Index))
	}
	for _, v := range e.b.Visible {
		if visible {
			parts = append(parts, fmt.Sprintf("Visible term=%d index=%d", v.Term, v.Index))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%d->%d: %s", e.from, e.to, strings.Join(parts, ", "))
}
