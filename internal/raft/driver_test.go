package raft

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/storage"
)

// The deterministic driver: a set of hosts built with HostOptions.driven (no goroutines, a
// manual clock), an in-memory network that holds every batch until the test delivers or
// drops it, and storage on MemFS whose fsyncs run only when the test lets them. Everything
// happens on the test's goroutine, in an order the script fixes, so a scenario that the
// goroutine tests (host_test.go) can only wait for with waitFor is stepped here one message,
// fsync and tick at a time. Scripts are in testdata/*.txt; driverCommands lists what they
// may say.
//
// The driver runs one raft group (scriptGroup) on every host. Proposals carry a Kafka
// RecordBatch of a few records, as the partition layer's do.

const scriptGroup = 1

// manualClock is a host's clock in a driven test: time moves only by advance, and the
// timers it passes fire then, in deadline order, on the test's goroutine.
type manualClock struct {
	now    time.Time
	timers []manualTimer
}

type manualTimer struct {
	at time.Time
	f  func()
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time { return c.now }

func (c *manualClock) AfterFunc(d time.Duration, f func()) {
	c.timers = append(c.timers, manualTimer{at: c.now.Add(d), f: f})
}

// advance moves the clock by d and fires every timer due by then.
func (c *manualClock) advance(d time.Duration) {
	c.now = c.now.Add(d)
	for {
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		if len(c.timers) == 0 || c.timers[0].at.After(c.now) {
			return
		}
		t := c.timers[0]
		c.timers = c.timers[1:]
		t.f()
	}
}

// envelope is one batch in flight.
type envelope struct {
	from, to uint64
	b        *Batch
}

type driver struct {
	t      testing.TB
	clock  *manualClock
	ids    []uint64
	voters []uint64
	// flushDelay is the write-caching policy's hold (0: strict, every append flushed at once).
	flushDelay time.Duration
	hosts      map[uint64]*Host
	ls         map[uint64]*LogStorage
	// inflight holds the batches sent and not yet delivered, in the order they were sent.
	inflight []envelope
	cut      map[uint64]bool // hosts whose traffic (both ways) is lost
	held     map[uint64]bool // hosts whose fsyncs wait for an explicit fsync command
	props    map[string]*Proposal
	names    []string // proposal names, in the order proposed
}

type driverSender struct {
	d    *driver
	from uint64
}

// Send queues a copy of b (as a wire would) until the script delivers it.
func (s driverSender) Send(to uint64, b *Batch) {
	s.d.inflight = append(s.d.inflight, envelope{from: s.from, to: to, b: cloneBatch(b)})
}

func newDriver(t testing.TB) *driver { return &driver{t: t} }

// reset closes the hosts of a previous scenario and starts n new ones.
func (d *driver) reset(n int, voters []uint64, flushDelay time.Duration) {
	d.close()
	*d = driver{t: d.t, clock: newManualClock(), voters: voters, flushDelay: flushDelay,
		hosts: map[uint64]*Host{}, ls: map[uint64]*LogStorage{}, cut: map[uint64]bool{},
		held: map[uint64]bool{}, props: map[string]*Proposal{}}
	for i := 1; i <= n; i++ {
		d.ids = append(d.ids, uint64(i))
	}
	if d.voters == nil {
		d.voters = d.ids
	}
	for _, id := range d.ids {
		ls, err := Open(storage.Options{FS: storage.NewMemFS(), Dir: "g", SegmentBytes: 4096})
		if err != nil {
			d.t.Fatal(err)
		}
		d.ls[id] = ls
		d.hosts[id] = NewHost(HostOptions{NodeID: id, Transport: driverSender{d, id}, driven: d.clock})
		d.addGroup(id)
	}
}

func (d *driver) addGroup(id uint64) {
	cfg := GroupConfig{Storage: d.ls[id], Bootstrap: &pb.ConfState{Voters: d.voters}}
	if wait := d.flushDelay; wait > 0 {
		cfg.FlushDelay = func(_ int64, waited time.Duration) time.Duration { return wait - waited }
	}
	if err := d.hosts[id].AddGroup(scriptGroup, cfg); err != nil {
		d.t.Fatal(err)
	}
}

func (d *driver) close() {
	for _, id := range d.ids {
		d.hosts[id].Close()
	}
}

// processReady runs host id's ready handling until its ready queue is empty, as its
// workers would; it reports whether there was anything to run.
func (d *driver) processReady(id uint64) bool {
	h := d.hosts[id]
	return drain(&h.readyQ, newOutbox(h), h.processAll)
}

// fsync runs host id's flushers until its flush queue is empty (a flush write caching holds
// back leaves the queue and waits for its timer); it reports whether there was anything.
func (d *driver) fsync(id uint64) bool {
	h := d.hosts[id]
	return drain(&h.flushQ, newOutbox(h), h.flushAll)
}

// drain runs rounds of q's groups until q is empty; it reports whether there were any.
func drain(q *workQueue, ob *outbox, round func([]*group, *outbox)) bool {
	ran := false
	for {
		batch := q.take(nil, 16)
		if len(batch) == 0 {
			return ran
		}
		ran = true
		round(batch, ob)
	}
}

// deliver hands the receivers the batches in flight that match (from or to 0: any), link
// by link in the order each link's batches were sent, or drops them; a batch to or from a
// cut host is always dropped. It returns one line per batch.
func (d *driver) deliver(from, to uint64, drop bool) []string {
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
		if line := describeBatch(e); line != "" {
			out = append(out, fmt.Sprintf("%s %s", fate, line))
		}
	}
	return out
}

// stabilize runs ready handling, fsyncs (of hosts not held) and deliveries until none has
// anything left: the cluster is idle until the next tick, clock advance or command.
func (d *driver) stabilize() {
	for round := 0; ; round++ {
		if round == 10000 {
			d.t.Fatal("stabilize: still busy after 10000 rounds")
		}
		busy := false
		for _, id := range d.ids {
			busy = d.processReady(id) || busy
		}
		for _, id := range d.ids {
			if !d.held[id] {
				busy = d.fsync(id) || busy
			}
		}
		if len(d.inflight) > 0 {
			d.deliver(0, 0, false)
			busy = true
		}
		if !busy {
			return
		}
	}
}

// describeBatch is a line per batch: its raft messages and written reports (a bare
// coalesced heartbeat, which says only that the sender is alive, is left out).
func describeBatch(e envelope) string {
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
	if hb := e.b.Heartbeat; hb != nil && len(hb.Quiesced) > 0 {
		var qs []string
		for _, q := range hb.Quiesced {
			qs = append(qs, fmt.Sprintf("group=%d term=%d commit=%d", q.Group, q.Term, q.Commit))
		}
		parts = append(parts, "HostHeartbeat quiesced: "+strings.Join(qs, "; "))
	}
	for _, w := range e.b.Written {
		parts = append(parts, fmt.Sprintf("Written term=%d index=%d", w.Term, w.Index))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%d->%d: %s", e.from, e.to, strings.Join(parts, ", "))
}

func (d *driver) status(id uint64) string {
	st, err := d.hosts[id].Status(scriptGroup)
	if err != nil {
		return fmt.Sprintf("%d: %v", id, err)
	}
	role := strings.ToLower(strings.TrimPrefix(st.State.String(), "State"))
	s := fmt.Sprintf("%d: %s term=%d lead=%d log-end=%d flushed=%d", id, role, st.Term, st.Leader, st.LogEnd, st.Flushed)
	if role == "leader" {
		s += fmt.Sprintf(" majority-replicated=%d", st.MajorityReplicated)
	}
	return s + fmt.Sprintf(" committed=%d applied=%d", st.Committed, st.Applied)
}

// ticking says whether host id's ticker ticks the group, as the ticker decides.
func (d *driver) ticking(id uint64) string {
	h := d.hosts[id]
	g, err := h.group(scriptGroup)
	if err != nil {
		return err.Error()
	}
	switch s := g.quietSeen.Load(); {
	case g.solo.Load():
		return "not ticked (sole voter, leading)"
	case g.quiet.Load():
		return "quiesced (leader)"
	case s != 0 && h.tickNo.Load()-s <= quietSlack:
		return "quiet (listed by its leader's host)"
	}
	return "ticking"
}

func describeProposal(name string, p *Proposal) string {
	select {
	case <-p.failed:
		return fmt.Sprintf("%s: failed: %v", name, p.err)
	default:
	}
	stage := "waiting"
	for s, n := range []string{"appended", "replicated", "committed"} {
		select {
		case <-p.stages[s]:
			stage = n
		default:
		}
	}
	if stage == "waiting" {
		return name + ": waiting"
	}
	return fmt.Sprintf("%s: %s index=%d term=%d", name, stage, p.Index(), p.Term())
}
