package txn

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/partition/partitiontest"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/storage"
)

// The coordinator's shell over real __transaction_state partitions: what it persists, the
// markers it asks the host to write, and how a new coordinator resumes them.

// markerHost is the node under the coordinator: real state partitions, two data topics,
// and a marker writer that records what it is asked and refuses everything while held.
type markerHost struct {
	mu      sync.Mutex
	parts   []*partition.Partition
	held    bool
	markers []Marker
	nextPID int64
}

func (h *markerHost) StatePartition(i int32) *partition.Partition {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i < 0 || int(i) >= len(h.parts) {
		return nil
	}
	return h.parts[i]
}

func (h *markerHost) PartitionCount(topic string) (int32, bool) {
	n, ok := map[string]int32{"orders": 3, "audit": 1}[topic]
	return n, ok
}

func (h *markerHost) AllocateProducerID() (int64, *kerr.Error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextPID++
	return 4000 + h.nextPID, nil
}

func (h *markerHost) WriteMarker(_ context.Context, m Marker) (*kerr.Error, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		return kerr.NotLeaderForPartition, "held by the test"
	}
	h.markers = append(h.markers, m)
	return nil, ""
}

func (h *markerHost) hold(held bool) {
	h.mu.Lock()
	h.held = held
	h.mu.Unlock()
}

func (h *markerHost) written() []Marker {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Marker(nil), h.markers...)
}

type coordEnv struct {
	t     *testing.T
	fs    storage.FS
	raft  *raft.Host
	host  *markerHost
	c     *Coordinator
	epoch int32
	mu    sync.Mutex
	now   time.Time
}

const coordTestPartitions = 2

func newCoordEnv(t *testing.T) *coordEnv {
	e := &coordEnv{t: t, fs: storage.NewMemFS(), host: &markerHost{}, now: time.UnixMilli(1_700_000_000_000)}
	e.raft = partitiontest.NewRaftHost(t)
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *coordEnv) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// start opens the partitions and a coordinator over them at the next coordinator epoch,
// and waits until every shard is replayed.
func (e *coordEnv) start() {
	e.t.Helper()
	ps := partitiontest.Open(e.t, e.fs, e.raft, StateTopic, coordTestPartitions)
	e.host.mu.Lock()
	e.host.parts = ps
	e.host.mu.Unlock()
	e.epoch++
	e.c = New(Options{Host: e.host, Partitions: coordTestPartitions, Now: e.clock, TickInterval: -1,
		Config: func() config.ClusterConfig { return config.ResolveCluster(nil) }})
	for i := int32(0); i < coordTestPartitions; i++ {
		e.c.BecomeLeader(i, e.epoch)
	}
	e.waitUntil("every shard is loaded", func() bool { return e.c.Loaded(0) && e.c.Loaded(1) })
}

// stop ends the coordinator and its partitions, as a crash of the node would; what they
// made durable stays on the filesystem.
func (e *coordEnv) stop() {
	if e.c == nil {
		return
	}
	e.c.Close()
	e.c = nil
	e.host.mu.Lock()
	for _, p := range e.host.parts {
		p.Close()
	}
	e.host.parts = nil
	e.host.mu.Unlock()
}

func (e *coordEnv) waitUntil(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *coordEnv) waitState(id string, want State) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		md, err := e.c.Describe(id)
		if err == nil && md.State == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: state %v (err %v), want %v", id, md.State, err, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// begin runs InitProducerId and AddPartitionsToTxn for id.
func (e *coordEnv) begin(id string, timeoutMs int32, parts ...TopicPartition) (int64, int16) {
	e.t.Helper()
	pid, epoch, err := e.c.InitProducerID(id, timeoutMs, -1, -1)
	if err != nil {
		e.t.Fatalf("InitProducerId %s: %v", id, err)
	}
	for tp, err := range e.c.AddPartitions(id, pid, epoch, parts) {
		if err != nil {
			e.t.Fatalf("AddPartitionsToTxn %s %v: %v", id, tp, err)
		}
	}
	return pid, epoch
}

// wantMarkers checks that each of parts got exactly one marker of the outcome, from the
// coordinator epoch, among got.
func (e *coordEnv) wantMarkers(got []Marker, pid int64, commit bool, coordEpoch int32, parts ...TopicPartition) {
	e.t.Helper()
	if len(got) != len(parts) {
		e.t.Fatalf("markers %+v, want one on each of %v", got, parts)
	}
	seen := map[TopicPartition]bool{}
	for _, m := range got {
		tp := TopicPartition{Topic: m.Topic, Partition: m.Partition}
		if seen[tp] || m.ProducerID != pid || m.Commit != commit || m.CoordinatorEpoch != coordEpoch {
			e.t.Fatalf("marker %+v: want one per partition, producer %d, commit %v, coordinator epoch %d", m, pid, commit, coordEpoch)
		}
		seen[tp] = true
	}
}

var (
	orders0 = TopicPartition{Topic: "orders", Partition: 0}
	orders2 = TopicPartition{Topic: "orders", Partition: 2}
	audit0  = TopicPartition{Topic: "audit", Partition: 0}
)

// A commit is durable as PrepareCommit when EndTxn answers; the coordinator then writes
// one commit marker on each partition and records CompleteCommit.
func TestCoordinatorCommitWritesOneMarkerPerPartition(t *testing.T) {
	e := newCoordEnv(t)
	pid, epoch := e.begin("app", 60_000, orders0, orders2, audit0)
	if err := e.c.EndTxn("app", pid, epoch, true); err != nil {
		t.Fatalf("EndTxn: %v", err)
	}
	e.waitState("app", CompleteCommit)
	e.wantMarkers(e.host.written(), pid, true, e.epoch, orders0, orders2, audit0)
	if s := e.c.Stats(); s.MarkersWritten != 3 || s.Ongoing != 0 {
		t.Fatalf("stats %+v, want 3 markers and nothing ongoing", s)
	}
}

// The coordinator dies between PrepareCommit and CompleteCommit, its markers not yet
// written: the next one replays the decision, refuses the producer's next transaction
// until the markers land, writes them at its own coordinator epoch, and completes.
func TestCoordinatorResumesMarkersAfterCrashBetweenPrepareAndComplete(t *testing.T) {
	e := newCoordEnv(t)
	pid, epoch := e.begin("app", 60_000, orders0, audit0)
	e.host.hold(true)
	if err := e.c.EndTxn("app", pid, epoch, true); err != nil {
		t.Fatalf("EndTxn: %v", err)
	}
	e.waitState("app", PrepareCommit)
	e.stop()
	if got := e.host.written(); len(got) != 0 {
		t.Fatalf("markers written while held: %+v", got)
	}

	e.start()
	if md, err := e.c.Describe("app"); err != nil || md.State != PrepareCommit {
		t.Fatalf("after the restart: %+v, %v; want PrepareCommit", md, err)
	}
	next := e.c.AddPartitions("app", pid, epoch, []TopicPartition{orders2})
	if err := next[orders2]; err != kerr.ConcurrentTransactions {
		t.Fatalf("the next transaction while markers are pending: %v, want CONCURRENT_TRANSACTIONS", err)
	}
	e.host.hold(false)
	e.waitState("app", CompleteCommit)
	e.wantMarkers(e.host.written(), pid, true, 2, orders0, audit0)

	// A second restart finds the transaction complete and writes nothing more.
	e.stop()
	e.start()
	e.waitState("app", CompleteCommit)
	if got := e.host.written(); len(got) != 2 {
		t.Fatalf("markers after a restart past CompleteCommit: %+v", got)
	}
}

// A transaction open past its timeout is aborted by the coordinator with a bumped epoch:
// abort markers go out, the producer's late commit is fenced, and the abort is counted.
func TestCoordinatorAbortsATransactionPastItsTimeout(t *testing.T) {
	e := newCoordEnv(t)
	pid, epoch := e.begin("slow", 1_000, orders0)
	e.c.Tick()
	if md, _ := e.c.Describe("slow"); md.State != Ongoing {
		t.Fatalf("before its timeout: %v, want Ongoing", md.State)
	}
	// Past the timeout and past the next timeout check (transaction.abort.timed.out.transaction.cleanup.interval.ms).
	e.mu.Lock()
	e.now = e.now.Add(time.Second + time.Duration(config.ResolveCluster(nil).TxnAbortTimedOutCheckMs)*time.Millisecond)
	e.mu.Unlock()
	e.c.Tick()
	e.waitState("slow", CompleteAbort)
	got := e.host.written()
	e.wantMarkers(got, pid, false, e.epoch, orders0)
	if got[0].ProducerEpoch != epoch+1 {
		t.Fatalf("abort marker at epoch %d, want the bumped %d", got[0].ProducerEpoch, epoch+1)
	}
	if err := e.c.EndTxn("slow", pid, epoch, true); err == nil {
		t.Fatal("the producer's commit after the timeout abort was accepted")
	}
	if md, _ := e.c.Describe("slow"); md.State != CompleteAbort {
		t.Fatalf("after the late commit: %v, want CompleteAbort", md.State)
	}
	if s := e.c.Stats(); s.AbortsByTimeout != 1 {
		t.Fatalf("aborts by timeout %d, want 1", s.AbortsByTimeout)
	}
}
