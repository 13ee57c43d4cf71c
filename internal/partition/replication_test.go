package partition

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/storage"
)

// Deterministic tests of the acknowledgement boundaries (DESIGN.md §1) over three replicas
// whose disks (fsync gates) and links (cuttable in-memory network) the test controls.

// gateFS blocks every fsync of segment data while the gate is closed, so entries can be
// written (log end, written reports) but not made durable (flushed, Match). The Raft state
// file is not gated: elections need it.
type gateFS struct {
	storage.FS
	g *gate
}

type gate struct {
	mu     sync.Mutex
	closed bool
	open   chan struct{}
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		g.open = make(chan struct{})
	}
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		g.closed = false
		close(g.open)
	}
}

func (g *gate) pass() {
	g.mu.Lock()
	closed, ch := g.closed, g.open
	g.mu.Unlock()
	if closed {
		<-ch
	}
}

func (f gateFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return gatedFile{file, f.g}, nil
}

type gatedFile struct {
	storage.File
	g *gate
}

func (f gatedFile) Sync() error {
	f.g.pass()
	return f.File.Sync()
}

// memNet delivers batches between hosts in order per link; a cut link drops them.
type memNet struct {
	mu    sync.Mutex
	hosts map[uint64]*raft.Host
	cut   map[[2]uint64]bool
	links map[[2]uint64]chan *raft.Batch
	stop  chan struct{}
	wg    sync.WaitGroup
}

func newMemNet() *memNet {
	return &memNet{hosts: map[uint64]*raft.Host{}, cut: map[[2]uint64]bool{}, links: map[[2]uint64]chan *raft.Batch{}, stop: make(chan struct{})}
}

type netSender struct {
	n    *memNet
	from uint64
}

func (s netSender) Send(to uint64, b *raft.Batch) {
	n := s.n
	key := [2]uint64{s.from, to}
	n.mu.Lock()
	if n.cut[key] {
		n.mu.Unlock()
		return
	}
	ch, ok := n.links[key]
	if !ok {
		ch = make(chan *raft.Batch, 4096)
		n.links[key] = ch
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			for {
				select {
				case <-n.stop:
					return
				case b := <-ch:
					n.mu.Lock()
					h, dropped := n.hosts[to], n.cut[key]
					n.mu.Unlock()
					if h != nil && !dropped {
						h.Step(b)
					}
				}
			}
		}()
	}
	n.mu.Unlock()
	select {
	case ch <- b:
	default: // a full link drops, as a real one may: raft retransmits
	}
}

// isolate cuts (or heals) every link to and from id.
func (n *memNet) isolate(id uint64, cut bool, ids ...uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, o := range ids {
		if o != id {
			n.cut[[2]uint64{id, o}] = cut
			n.cut[[2]uint64{o, id}] = cut
		}
	}
}

type replicaSet struct {
	t     *testing.T
	net   *memNet
	gates map[uint64]*gate
	hosts map[uint64]*raft.Host
	parts map[uint64]*Partition
}

var replicaIDs = []uint64{1, 2, 3}

func newReplicaSet(t *testing.T, writeCaching bool) *replicaSet {
	t.Helper()
	rs := &replicaSet{t: t, net: newMemNet(), gates: map[uint64]*gate{}, hosts: map[uint64]*raft.Host{}, parts: map[uint64]*Partition{}}
	cfg := defaultConfig()
	cfg.WriteCaching = writeCaching
	cfg.FlushMs = 3_600_000 // under write caching nothing but the test forces a flush
	cfg.FlushBytes = 1 << 40
	for _, id := range replicaIDs {
		rs.gates[id] = newGate()
		h := raft.NewHost(raft.HostOptions{NodeID: id, Transport: netSender{rs.net, id}, TickInterval: 10 * time.Millisecond})
		rs.hosts[id] = h
		rs.net.mu.Lock()
		rs.net.hosts[id] = h
		rs.net.mu.Unlock()
		ls, err := raft.Open(storage.Options{FS: gateFS{storage.NewMemFS(), rs.gates[id]}, Dir: "/p"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Open(Options{Topic: "t", Partition: 0, Storage: ls, Host: h, Group: 1, Self: id, Replicas: replicaIDs, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		rs.parts[id] = p
	}
	t.Cleanup(func() {
		for _, g := range rs.gates {
			g.release()
		}
		close(rs.net.stop)
		for _, id := range replicaIDs {
			rs.parts[id].Close()
			rs.hosts[id].Close()
		}
		rs.net.wg.Wait()
	})
	rs.elect(1)
	return rs
}

// elect makes id campaign until one of ids (id first) leads with its term's entry
// committed, and returns that leader. Campaigns are repeated because followers that heard
// from a leader lately refuse votes (CheckQuorum) until their election timeout passes.
func (rs *replicaSet) elect(id uint64, others ...uint64) uint64 {
	rs.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := rs.hosts[id].Campaign(1); err != nil {
			rs.t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		for _, c := range append([]uint64{id}, others...) {
			if rs.parts[c].waitFor(ctx, func(b *Boundaries) bool { return b.IsLeader && b.Committed >= b.LogEnd }) == nil {
				cancel()
				return c
			}
		}
		cancel()
	}
	rs.t.Fatalf("none of %d %v became a settled leader", id, others)
	return 0
}

// produceAcked produces batch at acks=-1 and waits (up to d) for the answer.
func produceAcked(p *Partition, batch []byte, d time.Duration) ProduceResult {
	res, wait := p.Produce(batch, -1)
	if res.Err != nil {
		return res
	}
	return waitResult(wait, d)
}

func waitResult(wait func(context.Context) ProduceResult, d time.Duration) ProduceResult {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return wait(ctx)
}

// The scripts step this scenario deterministically, one message and fsync at a time:
// testdata/acks_boundaries.txt and min_insync_completion.txt (write caching). This test
// keeps it on the goroutine host, as an integration test.
func TestWriteCachingAcksOnceAMajorityHasWritten(t *testing.T) {
	rs := newReplicaSet(t, true)
	for _, g := range rs.gates {
		g.close() // nobody can fsync
	}
	res, wait := rs.parts[1].Produce(kafkatest.Plain(3, 1000).Bytes(), -1)
	if res.Err != nil {
		t.Fatalf("produce: %+v", res)
	}
	if r := waitResult(wait, 10*time.Second); r.Err != nil {
		t.Fatalf("acks=-1 under write caching with a majority written: %+v", r)
	}
	b := rs.parts[1].Boundaries()
	if b.MajorityReplicated != 3 || b.LastVisible != 3 || b.Flushed != 0 || b.Committed != 0 {
		t.Fatalf("boundaries %+v: want written on a majority and visible, nothing flushed or committed", b)
	}
}

// testdata/acks_boundaries.txt (strict) steps this scenario deterministically; this test
// keeps it on the goroutine host, as an integration test.
func TestStrictAcksWaitWhileAMajorityHasOnlyWritten(t *testing.T) {
	rs := newReplicaSet(t, false)
	for _, g := range rs.gates {
		g.close()
	}
	res, wait := rs.parts[1].Produce(kafkatest.Plain(3, 1000).Bytes(), -1)
	if res.Err != nil {
		t.Fatalf("produce: %+v", res)
	}
	// Written everywhere (the followers report it), flushed nowhere: not committed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rs.parts[1].waitFor(ctx, func(b *Boundaries) bool { return b.MajorityReplicated >= 3 }); err != nil {
		t.Fatalf("majority replicated never reached 3: %+v", rs.parts[1].Boundaries())
	}
	if r := waitResult(wait, 300*time.Millisecond); r.Err != kerr.RequestTimedOut {
		t.Fatalf("strict acks=-1 with nothing flushed: %+v, want REQUEST_TIMED_OUT", r)
	}
	if b := rs.parts[1].Boundaries(); b.Committed != 0 || b.LastVisible != 0 {
		t.Fatalf("boundaries %+v: nothing may be committed or visible", b)
	}
	for _, g := range rs.gates {
		g.release()
	}
	if err := rs.parts[1].waitFor(ctx, func(b *Boundaries) bool { return b.Committed >= 3 && b.LastVisible >= 3 }); err != nil {
		t.Fatalf("not committed after the flushes: %+v", rs.parts[1].Boundaries())
	}
}

// The raft host's rule under this test is stepped deterministically by raft's
// testdata/leader_unflushed.txt; this test checks the partition's boundaries on it.
func TestLeadersOwnUnflushedEntryNeverCounts(t *testing.T) {
	rs := newReplicaSet(t, false)
	rs.net.isolate(3, true, replicaIDs...) // one follower away: leader + 2 must both flush
	rs.gates[1].close()                    // the leader cannot flush; follower 2 can
	res, wait := rs.parts[1].Produce(kafkatest.Plain(2, 1000).Bytes(), -1)
	if res.Err != nil {
		t.Fatalf("produce: %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rs.parts[2].waitFor(ctx, func(b *Boundaries) bool { return b.Flushed >= 2 }); err != nil {
		t.Fatalf("follower 2 never flushed: %+v", rs.parts[2].Boundaries())
	}
	if r := waitResult(wait, 300*time.Millisecond); r.Err != kerr.RequestTimedOut {
		t.Fatalf("committed with only one of three replicas' flushes: %+v", r)
	}
	if b := rs.parts[1].Boundaries(); b.Committed != 0 {
		t.Fatalf("leader boundaries %+v: its unflushed copy counted toward commit", b)
	}
	rs.gates[1].release()
	if err := rs.parts[1].waitFor(ctx, func(b *Boundaries) bool { return b.Committed >= 2 }); err != nil {
		t.Fatalf("not committed once the leader flushed: %+v", rs.parts[1].Boundaries())
	}
}

// testdata/truncated_batch.txt steps this scenario deterministically; this test keeps it
// on the goroutine host, as an integration test.
func TestTruncatedEntryFailsItsWaiter(t *testing.T) {
	rs := newReplicaSet(t, false)
	rs.net.isolate(1, true, replicaIDs...)
	res, wait := rs.parts[1].Produce(kafkatest.Plain(2, 1000).Bytes(), -1)
	if res.Err != nil {
		t.Fatalf("produce on the isolated leader: %+v", res)
	}
	done := make(chan ProduceResult, 1)
	go func() { done <- waitResult(wait, 30*time.Second) }()
	leader := rs.elect(2, 3)
	if r := produceAcked(rs.parts[leader], kafkatest.Plain(5, 1000).Bytes(), 10*time.Second); r.Err != nil || r.BaseOffset != 0 {
		t.Fatalf("produce on the new leader: %+v", r)
	}
	rs.net.isolate(1, false, replicaIDs...)
	select {
	case r := <-done:
		if r.Err != kerr.NotLeaderForPartition {
			t.Fatalf("the truncated batch's waiter got %+v, want NOT_LEADER_OR_FOLLOWER", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the truncated batch's waiter never returned")
	}
	// The old leader now holds the new leader's log: offset 0 is the 5-record batch.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rs.parts[1].waitFor(ctx, func(b *Boundaries) bool { return !b.IsLeader && b.LogEnd == 5 }); err != nil {
		t.Fatalf("old leader did not take the new log: %+v", rs.parts[1].Boundaries())
	}
}

// testdata/min_insync_admission.txt and min_insync_completion.txt step these cases
// deterministically (strict and write caching, the lag window on a manual clock instead of
// rewriting caughtUp); this test keeps them on the goroutine host, as an integration test.
func TestMinInsyncReplicas(t *testing.T) {
	rs := newReplicaSet(t, false)
	cfg := rs.parts[1].Config()
	cfg.MinInsyncReplicas = 3
	rs.parts[1].SetConfig(cfg)
	if r := produceAcked(rs.parts[1], kafkatest.Plain(1, 1000).Bytes(), 10*time.Second); r.Err != nil {
		t.Fatalf("all three in sync, min.insync.replicas=3: %+v", r)
	}
	// Follower 3 goes away: commit still needs only two, but min.insync.replicas=3 wants
	// all three to hold the batch.
	rs.net.isolate(3, true, replicaIDs...)
	res, wait := rs.parts[1].Produce(kafkatest.Plain(1, 1000).Bytes(), -1)
	if res.Err != nil {
		t.Fatalf("produce: %+v", res)
	}
	if r := waitResult(wait, 500*time.Millisecond); r.Err != kerr.NotEnoughReplicasAfterAppend {
		t.Fatalf("two of three hold the batch, min.insync.replicas=3: %+v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", r)
	}
	// Out of the ISR (its window expired): refused before the append.
	rs.parts[1].mu.Lock()
	rs.parts[1].caughtUp[3] = time.Now().Add(-2 * DefaultReplicaLagMax)
	rs.parts[1].mu.Unlock()
	end := rs.parts[1].Boundaries().LogEnd
	if res, _ := rs.parts[1].Produce(kafkatest.Plain(1, 1000).Bytes(), -1); res.Err != kerr.NotEnoughReplicas {
		t.Fatalf("ISR of 2, min.insync.replicas=3: %+v, want NOT_ENOUGH_REPLICAS", res)
	}
	if b := rs.parts[1].Boundaries(); b.LogEnd != end {
		t.Fatalf("a refused batch was appended: log end %d, was %d", b.LogEnd, end)
	}
	if isr := rs.parts[1].ISR(); len(isr) != 2 {
		t.Fatalf("ISR %v, want the leader and follower 2", isr)
	}
	// Lowered at run time: accepted again.
	cfg.MinInsyncReplicas = 2
	rs.parts[1].SetConfig(cfg)
	if res, _ := rs.parts[1].Produce(kafkatest.Plain(1, 1000).Bytes(), -1); res.Err != nil {
		t.Fatalf("min.insync.replicas lowered to 2: %+v", res)
	}
}

// TestIdleFollowersStayInSync: a partition with no traffic gives its followers no event
// to refresh their in-sync time; followers that hold the whole log and whose brokers are
// heard from stay in the ISR however long it stays idle.
func TestIdleFollowersStayInSync(t *testing.T) {
	rs := newReplicaSet(t, false)
	if r := produceAcked(rs.parts[1], kafkatest.Plain(2, 1000).Bytes(), 10*time.Second); r.Err != nil {
		t.Fatalf("produce: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Every follower has acknowledged the whole log.
	if err := rs.parts[1].waitFor(ctx, func(*Boundaries) bool {
		return rs.parts[1].holdersLocked(rs.parts[1].leaderEnd) == 3
	}); err != nil {
		t.Fatal("followers never acknowledged the whole log")
	}
	rs.parts[1].mu.Lock()
	for v := range rs.parts[1].caughtUp {
		rs.parts[1].caughtUp[v] = time.Now().Add(-2 * DefaultReplicaLagMax) // a long idle spell
	}
	rs.parts[1].mu.Unlock()
	if isr := rs.parts[1].ISR(); len(isr) != 3 {
		t.Fatalf("ISR of an idle partition whose followers hold everything: %v, want all three", isr)
	}
}

// TestRetriedBatchNeverAckedAfterItsOriginalWasReplaced: a producer's retry of a batch is
// a duplicate of the original's entry; if a new leader's log replaces that entry, the
// retry must not be acknowledged with the original's offset (another batch sits there).
// testdata/truncated_batch.txt steps it deterministically; this test keeps it on the
// goroutine host, as an integration test.
func TestRetriedBatchNeverAckedAfterItsOriginalWasReplaced(t *testing.T) {
	rs := newReplicaSet(t, false)
	rs.net.isolate(1, true, replicaIDs...)
	batch := idem(5, 0, 0, 2)
	res, first := rs.parts[1].Produce(batch, -1)
	if res.Err != nil {
		t.Fatalf("produce on the isolated leader: %+v", res)
	}
	retry, again := rs.parts[1].Produce(idem(5, 0, 0, 2), -1)
	if retry.Err != nil || retry.BaseOffset != res.BaseOffset || again == nil {
		t.Fatalf("retry: %+v, want the original's offset %d and a wait", retry, res.BaseOffset)
	}
	results := make(chan ProduceResult, 2)
	go func() { results <- waitResult(first, 30*time.Second) }()
	go func() { results <- waitResult(again, 30*time.Second) }()
	leader := rs.elect(2, 3)
	if r := produceAcked(rs.parts[leader], kafkatest.Plain(5, 1000).Bytes(), 10*time.Second); r.Err != nil || r.BaseOffset != 0 {
		t.Fatalf("produce on the new leader: %+v", r)
	}
	rs.net.isolate(1, false, replicaIDs...)
	for range 2 {
		select {
		case r := <-results:
			if r.Err == nil {
				t.Fatalf("a waiter for the replaced batch was acknowledged: %+v", r)
			}
		case <-time.After(40 * time.Second):
			t.Fatal("a waiter for the replaced batch never returned")
		}
	}
}
