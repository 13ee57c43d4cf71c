package group

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/partition/partitiontest"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/storage"
)

// testHost holds real partitions of __consumer_offsets over a MemFS, plus the topics the
// tests commit offsets for.
type testHost struct {
	mu      sync.Mutex
	parts   []*partition.Partition
	topics  map[string]int32
	blocked bool // OffsetsPartition answers nil (a partition that is not available)
}

func (h *testHost) OffsetsPartition(i int32) *partition.Partition {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.blocked || i < 0 || int(i) >= len(h.parts) {
		return nil
	}
	return h.parts[i]
}

func (h *testHost) PartitionCount(topic string) (int32, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, ok := h.topics[topic]
	return n, ok
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type env struct {
	t     *testing.T
	fs    storage.FS
	n     int32
	host  *testHost
	clock *fakeClock
	cfgMu sync.Mutex
	cfg   config.ClusterConfig
	c     *Coordinator
	raft  *raft.Host // the partitions' Raft groups; kept across reloads
}

const testPartitions = 4

var testEpoch = time.UnixMilli(1_700_000_000_000)

// newEnv opens __consumer_offsets partitions on a fresh MemFS and a coordinator over them,
// with a manual clock and no background loop; the initial rebalance delay is 0 unless a
// test sets it.
func newEnv(t *testing.T) *env {
	t.Helper()
	cfg := config.ResolveCluster(nil)
	cfg.GroupInitialRebalanceDelayMs = 0
	e := &env{t: t, fs: storage.NewMemFS(), n: testPartitions, cfg: cfg,
		clock: &fakeClock{now: time.UnixMilli(1_700_000_000_000)},
		host:  &testHost{topics: map[string]int32{"orders": 3, "audit": 1}}}
	e.openPartitions() // its Raft host's cleanup is registered first, so it runs after e.close
	e.startCoordinator()
	t.Cleanup(e.close)
	return e
}

func (e *env) openPartitions() {
	e.t.Helper()
	if e.raft == nil {
		e.raft = partitiontest.NewRaftHost(e.t)
	}
	ps := partitiontest.Open(e.t, e.fs, e.raft, OffsetsTopic, e.n)
	e.host.mu.Lock()
	e.host.parts = ps
	e.host.mu.Unlock()
}

func (e *env) config() config.ClusterConfig {
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	return e.cfg
}

func (e *env) setConfig(fn func(c *config.ClusterConfig)) {
	e.cfgMu.Lock()
	fn(&e.cfg)
	e.cfgMu.Unlock()
}

func (e *env) startCoordinator() {
	e.t.Helper()
	e.c = New(Options{Host: e.host, Partitions: e.n, Config: e.config, Now: e.clock.Now, TickInterval: -1})
	for i := int32(0); i < e.n; i++ {
		e.c.BecomeLeader(i)
	}
	e.waitLoaded()
}

func (e *env) waitLoaded() {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := int32(0); i < e.n; i++ {
		for !e.c.Loaded(i) {
			if time.Now().After(deadline) {
				e.t.Fatalf("partition %d never loaded", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func (e *env) close() {
	if e.c != nil {
		e.c.Close()
	}
	e.host.mu.Lock()
	defer e.host.mu.Unlock()
	for _, p := range e.host.parts {
		p.Close()
	}
}

// reload stops the coordinator and the partitions, reopens the partitions on the same
// filesystem, and replays them into a new coordinator.
func (e *env) reload() {
	e.t.Helper()
	e.close()
	e.c = nil
	e.openPartitions()
	e.startCoordinator()
}

// advance moves the clock and runs the deadline checks.
func (e *env) advance(d time.Duration) {
	e.clock.add(d)
	e.c.Tick()
}

// logEnd sums the log ends of every __consumer_offsets partition: what has been written.
func (e *env) logEnd() int64 {
	var n int64
	for _, p := range e.host.parts {
		n += p.Boundaries().LogEnd
	}
	return n
}

const waitFor = 10 * time.Second

func recvJoin(t *testing.T, ch <-chan JoinResult) JoinResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitFor):
		t.Fatal("JoinGroup was not answered")
		return JoinResult{}
	}
}

func recvSync(t *testing.T, ch <-chan SyncResult) SyncResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitFor):
		t.Fatal("SyncGroup was not answered")
		return SyncResult{}
	}
}

func pending[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("answered too early: %+v", r)
	default:
	}
}

func consumerMeta(topics ...string) []byte {
	m := kmsg.ConsumerMemberMetadata{Version: 0, Topics: topics}
	return m.AppendTo(nil)
}

func joinReq(group, member, client string, topics ...string) JoinRequest {
	return JoinRequest{Group: group, MemberID: member, ClientID: client, ClientHost: "/127.0.0.1",
		ProtocolType: "consumer", Protocols: []Protocol{{Name: "range", Metadata: consumerMeta(topics...)}},
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second, RequireKnownMemberID: true}
}

// newMember runs the v4+ first join: MEMBER_ID_REQUIRED, then the rejoin with that id.
// It returns the id and the channel of the rejoin.
func (e *env) newMember(req JoinRequest) (string, <-chan JoinResult) {
	e.t.Helper()
	r := recvJoin(e.t, e.c.Join(req))
	if r.Err != kerr.MemberIDRequired || r.MemberID == "" {
		e.t.Fatalf("first join: %+v, want MEMBER_ID_REQUIRED with an id", r)
	}
	req.MemberID = r.MemberID
	return r.MemberID, e.c.Join(req)
}

func wantErr(t *testing.T, what string, got, want *kerr.Error) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %v, want %v", what, errName(got), errName(want))
	}
}

func errName(e *kerr.Error) string {
	if e == nil {
		return "no error"
	}
	return e.Message
}

func (e *env) sync(group, member string, gen int32, assign map[string][]byte) <-chan SyncResult {
	req := SyncRequest{Group: group, MemberID: member, Generation: gen}
	for id, a := range assign {
		req.Assignments = append(req.Assignments, Assignment{MemberID: id, Assignment: a})
	}
	return e.c.Sync(req)
}

func (e *env) commit(req CommitRequest) [][]*kerr.Error {
	e.t.Helper()
	done := make(chan [][]*kerr.Error, 1)
	w := e.c.Commit(req)
	go func() { done <- w() }()
	select {
	case r := <-done:
		return r
	case <-time.After(waitFor):
		e.t.Fatal("OffsetCommit was not answered")
		return nil
	}
}

func simpleCommit(group, topic string, partition int32, offset int64) CommitRequest {
	return CommitRequest{Group: group, Generation: -1, RetentionMs: -1, Topics: []CommitTopic{{Topic: topic,
		Partitions: []CommitPartition{{Partition: partition, Offset: offset, LeaderEpoch: -1, TimestampMs: -1}}}}}
}

func (e *env) fetched(group, topic string, partition int32) int64 {
	e.t.Helper()
	fs, err := e.c.FetchOffsets(group, []FetchTopic{{Topic: topic, Partitions: []int32{partition}}}, false)
	if err != nil {
		e.t.Fatalf("FetchOffsets: %v", err)
	}
	return fs[0].Offset
}
