package raft

import (
	"io"
	"log"
	"math"
	"testing"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/storage"
)

var quietLogger = &etcdraft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

// testNode is one replica: a RawNode with AsyncStorageWrites over a LogStorage on its own
// MemFS. Its append and apply "threads" run inline, in message order.
type testNode struct {
	id      uint64
	fs      *storage.MemFS
	opts    storage.Options
	ls      *LogStorage
	rn      *etcdraft.RawNode
	applied []*pb.Entry // committed entries, in order, as delivered by MsgStorageApply
}

func newTestNode(t *testing.T, id uint64, voters []uint64) *testNode {
	t.Helper()
	n := &testNode{id: id, fs: storage.NewMemFS()}
	n.opts = storage.Options{FS: n.fs, Dir: "data/g7", SegmentBytes: 4096}
	ls, err := Open(n.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.SetConfState(0, &pb.ConfState{Voters: voters}); err != nil {
		t.Fatal(err)
	}
	n.ls = ls
	n.start(t)
	return n
}

func (n *testNode) start(t *testing.T) {
	t.Helper()
	rn, err := etcdraft.NewRawNode(&etcdraft.Config{
		ID:                 n.id,
		ElectionTick:       10,
		HeartbeatTick:      1,
		Storage:            n.ls,
		Applied:            n.ls.ConfIndex(),
		MaxSizePerMsg:      64 << 10,
		MaxInflightMsgs:    64,
		AsyncStorageWrites: true,
		Logger:             quietLogger,
	})
	if err != nil {
		t.Fatal(err)
	}
	n.rn = rn
	n.applied = nil
}

// restart reopens the storage (after a clean close, or after power loss if crash) and
// starts a new RawNode on it.
func (n *testNode) restart(t *testing.T, crash bool) {
	t.Helper()
	if crash {
		n.fs.Crash()
	} else if err := n.ls.Close(); err != nil {
		t.Fatal(err)
	}
	ls, err := Open(n.opts)
	if err != nil {
		t.Fatal(err)
	}
	n.ls = ls
	n.start(t)
}

// handleReady processes one Ready: local storage messages are carried out at once (append:
// snapshot, entries, flush, then hard state; apply: record), and their responses are
// returned along with the messages for other nodes.
func (n *testNode) handleReady(t *testing.T) (out []*pb.Message) {
	t.Helper()
	rd := n.rn.Ready()
	for _, m := range rd.Messages {
		switch m.GetTo() {
		case etcdraft.LocalAppendThread:
			if snap := m.GetSnapshot(); snap != nil && !etcdraft.IsEmptySnap(snap) {
				if err := n.ls.ApplySnapshot(snap); err != nil {
					t.Fatalf("node %d: apply snapshot: %v", n.id, err)
				}
			}
			if err := n.ls.Append(m.GetEntries()); err != nil {
				t.Fatalf("node %d: append: %v", n.id, err)
			}
			// The entries are durable before the hard state that may commit them.
			if err := n.ls.Flush(); err != nil {
				t.Fatal(err)
			}
			if m.Term != nil {
				if err := n.ls.SetHardState(hardState(m.GetTerm(), m.GetVote(), m.GetCommit())); err != nil {
					t.Fatal(err)
				}
			}
			out = append(out, m.GetResponses()...)
		case etcdraft.LocalApplyThread:
			n.applied = append(n.applied, m.GetEntries()...)
			out = append(out, m.GetResponses()...)
		default:
			out = append(out, m)
		}
	}
	return out
}

// cluster routes messages between nodes; cut nodes neither send nor receive.
type cluster struct {
	t     *testing.T
	nodes map[uint64]*testNode
	cut   map[uint64]bool
}

func newCluster(t *testing.T, ids ...uint64) *cluster {
	c := &cluster{t: t, nodes: map[uint64]*testNode{}, cut: map[uint64]bool{}}
	for _, id := range ids {
		c.nodes[id] = newTestNode(t, id, ids)
	}
	return c
}

// settle runs every node until none has work and no message is in flight.
func (c *cluster) settle() {
	c.t.Helper()
	var queue []*pb.Message
	for round := 0; ; round++ {
		if round > 10000 {
			c.t.Fatal("cluster does not settle")
		}
		busy := false
		for id := uint64(1); id <= uint64(len(c.nodes)); id++ {
			n := c.nodes[id]
			if n.rn.HasReady() {
				busy = true
				queue = append(queue, n.handleReady(c.t)...)
			}
		}
		if len(queue) > 0 {
			busy = true
		}
		msgs := queue
		queue = nil
		for _, m := range msgs {
			to, from := m.GetTo(), m.GetFrom()
			local := from == etcdraft.LocalAppendThread || from == etcdraft.LocalApplyThread
			if !local && (c.cut[to] || c.cut[from]) {
				continue
			}
			if err := c.nodes[to].rn.Step(m); err != nil && err != etcdraft.ErrStepPeerNotFound {
				c.t.Fatalf("node %d step %v: %v", to, m.GetType(), err)
			}
		}
		if !busy {
			return
		}
	}
}

func (c *cluster) leader() uint64 {
	for id, n := range c.nodes {
		if !c.cut[id] && n.rn.BasicStatus().RaftState == etcdraft.StateLeader {
			return id
		}
	}
	return 0
}

// batch returns a Kafka batch of n records, tagged so it can be told apart.
func batch(n int, tag int64) []byte { return kafkatest.Plain(n, tag).Bytes() }

// offsetsOf returns the stored entries of a node's log and checks the offsets are dense:
// each entry starts where the one before ended, internal entries take none.
func offsetsOf(t *testing.T, ls *LogStorage) []storage.Entry {
	t.Helper()
	first, _ := ls.FirstIndex()
	last, _ := ls.LastIndex()
	ents, err := ls.Log().Entries(first, last+1, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	next := ls.Log().LogEndOffset()
	if len(ents) > 0 {
		next = ents[0].BaseOffset // the log start offset may lie inside the first batch
	}
	for _, e := range ents {
		if e.BaseOffset != next {
			t.Fatalf("index %d: base offset %d, want %d", e.Index, e.BaseOffset, next)
		}
		if e.Type == storage.EntryInternal && e.Records != 0 {
			t.Fatalf("internal entry %d takes %d offsets", e.Index, e.Records)
		}
		next += int64(e.Records)
	}
	if next != ls.Log().LogEndOffset() {
		t.Fatalf("offsets end at %d, log end offset %d", next, ls.Log().LogEndOffset())
	}
	return ents
}

func committedData(n *testNode) (out [][]byte) {
	for _, e := range n.applied {
		if isData(e) {
			out = append(out, e.GetData())
		}
	}
	return out
}

func TestSingleNodeRawNode(t *testing.T) {
	c := newCluster(t, 1)
	n := c.nodes[1]
	if err := n.rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if c.leader() != 1 {
		t.Fatal("single node did not become leader")
	}
	for i := 0; i < 10; i++ {
		if err := n.rn.Propose(batch(1+i%3, int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	c.settle()
	if got := len(committedData(n)); got != 10 {
		t.Fatalf("%d data entries committed, want 10", got)
	}
	ents := offsetsOf(t, n.ls)
	// Index 1 is the leader's empty entry: internal, no offsets. Then 1+2+3+1+2+3+... records.
	if ents[0].Type != storage.EntryInternal || ents[0].Records != 0 {
		t.Fatalf("first entry: %+v", ents[0])
	}
	want := int64(0)
	for i := 0; i < 10; i++ {
		want += int64(1 + i%3)
	}
	if n.ls.Log().LogEndOffset() != want {
		t.Fatalf("log end offset %d, want %d", n.ls.Log().LogEndOffset(), want)
	}
	term := n.rn.BasicStatus().GetTerm()
	last, _ := n.ls.LastIndex()
	if n.ls.FlushedIndex() != last {
		t.Fatalf("flushed %d, last %d", n.ls.FlushedIndex(), last)
	}

	for _, crash := range []bool{false, true} {
		n.restart(t, crash)
		st := n.rn.BasicStatus()
		// The commit index is persisted lazily (only with a new term or vote), so a
		// restart may start below it; the next election commits everything again.
		if st.GetTerm() != term || st.GetCommit() > last {
			t.Fatalf("after restart (crash %v): term %d commit %d, want %d, <= %d", crash, st.GetTerm(), st.GetCommit(), term, last)
		}
		if l, _ := n.ls.LastIndex(); l != last {
			t.Fatalf("after restart: last index %d, want %d", l, last)
		}
		if err := n.rn.Campaign(); err != nil {
			t.Fatal(err)
		}
		c.settle()
		if c.leader() != 1 {
			t.Fatal("restarted node did not become leader")
		}
		if err := n.rn.Propose(batch(4, 100)); err != nil {
			t.Fatal(err)
		}
		c.settle()
		ents := offsetsOf(t, n.ls)
		lastEnt := ents[len(ents)-1]
		// A new empty entry for the new term, then the batch right after the old offsets.
		if lastEnt.Type != storage.EntryData || lastEnt.BaseOffset != want || lastEnt.Term != n.rn.BasicStatus().GetTerm() {
			t.Fatalf("after restart: last entry %+v, want a batch at offset %d", lastEnt, want)
		}
		if ents[len(ents)-2].Type != storage.EntryInternal {
			t.Fatal("no empty entry for the new term")
		}
		want += 4
		term = n.rn.BasicStatus().GetTerm()
		last = lastEnt.Index
		if d := committedData(n); len(d) == 0 || len(d[len(d)-1]) == 0 {
			t.Fatal("proposal after restart not committed")
		}
	}
}

// sameLogs checks that every node holds the same entries with the same Kafka offsets.
func sameLogs(t *testing.T, c *cluster) []storage.Entry {
	t.Helper()
	var ids []uint64
	for id := uint64(2); id <= uint64(len(c.nodes)); id++ {
		ids = append(ids, id)
	}
	return sameLogsAs(t, c, 1, ids...)
}

func sameLogsAs(t *testing.T, c *cluster, refID uint64, ids ...uint64) []storage.Entry {
	t.Helper()
	ref := offsetsOf(t, c.nodes[refID].ls)
	for _, id := range ids {
		got := offsetsOf(t, c.nodes[id].ls)
		if len(got) != len(ref) {
			t.Fatalf("node %d holds %d entries, node %d %d", id, len(got), refID, len(ref))
		}
		for i := range ref {
			a, b := ref[i], got[i]
			if a.Index != b.Index || a.Term != b.Term || a.Type != b.Type || a.BaseOffset != b.BaseOffset ||
				a.Records != b.Records || string(a.Data) != string(b.Data) {
				t.Fatalf("node %d index %d differs from node %d: %+v vs %+v", id, a.Index, refID, b, a)
			}
		}
	}
	return ref
}

func TestThreeNodesReplicateAndTruncate(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	if err := c.nodes[1].rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if c.leader() != 1 {
		t.Fatal("node 1 did not become leader")
	}
	for i := 0; i < 20; i++ {
		if err := c.nodes[1].rn.Propose(batch(1+i%4, int64(i))); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			c.settle()
		}
	}
	c.settle()
	ref := sameLogs(t, c)
	for _, n := range c.nodes {
		if got := len(committedData(n)); got != 20 {
			t.Fatalf("node %d applied %d batches, want 20", n.id, got)
		}
	}
	commit := c.nodes[1].rn.BasicStatus().GetCommit()
	endBefore := c.nodes[1].ls.Log().LogEndOffset()

	// Cut the leader off; it appends proposals nobody else gets (uncommitted suffix).
	c.cut[1] = true
	for i := 0; i < 5; i++ {
		if err := c.nodes[1].rn.Propose(batch(3, int64(1000+i))); err != nil {
			t.Fatal(err)
		}
	}
	c.settle()
	oldLast, _ := c.nodes[1].ls.LastIndex()
	if oldLast != commit+5 || c.nodes[1].ls.Log().LogEndOffset() != endBefore+15 {
		t.Fatalf("old leader: last %d offset %d, want %d %d", oldLast, c.nodes[1].ls.Log().LogEndOffset(), commit+5, endBefore+15)
	}
	oldTerm := c.nodes[1].rn.BasicStatus().GetTerm()

	// Node 2 wins a new term with node 3 and commits different batches at those indexes.
	if err := c.nodes[2].rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	c.settle()
	if c.leader() != 2 {
		t.Fatal("node 2 did not become leader")
	}
	for i := 0; i < 3; i++ {
		if err := c.nodes[2].rn.Propose(batch(2, int64(2000+i))); err != nil {
			t.Fatal(err)
		}
	}
	c.settle()

	// Heal: the new leader's heartbeat reaches node 1, which truncates its suffix and
	// takes the new entries.
	delete(c.cut, 1)
	for i := 0; i < 3; i++ {
		c.nodes[2].rn.Tick()
		c.settle()
	}
	ents := sameLogs(t, c)
	for _, e := range ents {
		if e.Index > commit && e.Term == oldTerm {
			t.Fatalf("index %d of the old leader's uncommitted suffix survived", e.Index)
		}
	}
	for i := range ref {
		if ents[i].Index != ref[i].Index || ents[i].BaseOffset != ref[i].BaseOffset || string(ents[i].Data) != string(ref[i].Data) {
			t.Fatalf("committed index %d changed", ref[i].Index)
		}
	}
	// New empty entry, then three 2-record batches from where the committed data ended.
	if got := c.nodes[1].ls.Log().LogEndOffset(); got != endBefore+6 {
		t.Fatalf("log end offset %d, want %d", got, endBefore+6)
	}
	if l, _ := c.nodes[1].ls.LastIndex(); l != commit+4 {
		t.Fatalf("old leader's last index %d, want %d", l, commit+4)
	}
	for _, n := range c.nodes {
		if got := len(committedData(n)); got != 23 {
			t.Fatalf("node %d applied %d batches, want 23", n.id, got)
		}
		if n.ls.FlushedIndex() != commit+4 {
			t.Fatalf("node %d flushed %d", n.id, n.ls.FlushedIndex())
		}
	}
}

// A follower that needs entries the leader no longer holds (its prefix went to retention)
// is sent a snapshot of the prefix boundary, resets its log there at the right Kafka offset
// and receives the rest: its log then matches the leader's, offsets included.
func TestLaggingFollowerInstallsSnapshot(t *testing.T) {
	c := newCluster(t, 1, 2, 3)
	if err := c.nodes[1].rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	c.settle()
	c.cut[3] = true
	for i := 0; i < 60; i++ {
		if err := c.nodes[1].rn.Propose(batch(1+i%4, int64(i))); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			c.settle()
		}
	}
	c.settle()
	leader := c.nodes[1].ls
	end := leader.Log().LogEndOffset()
	if err := leader.Log().AdvanceLogStart(end - 5); err != nil {
		t.Fatal(err)
	}
	first, _ := leader.FirstIndex()
	if first < 10 {
		t.Fatalf("retention removed too little: first index %d", first)
	}
	snap, err := leader.Snapshot()
	if err != nil || snap.GetMetadata().GetIndex() != first-1 || len(snap.GetMetadata().GetConfState().GetVoters()) != 3 {
		t.Fatalf("leader snapshot %v, %v", snap, err)
	}

	delete(c.cut, 3)
	for i := 0; i < 3; i++ {
		c.nodes[1].rn.Tick()
		c.settle()
	}
	f := c.nodes[3].ls
	if got, _ := f.FirstIndex(); got != first {
		t.Fatalf("follower first index %d, want %d (snapshot not installed?)", got, first)
	}
	sameLogsAs(t, c, 1, 3)
	if err := c.nodes[1].rn.Propose(batch(2, 9999)); err != nil {
		t.Fatal(err)
	}
	c.settle()
	sameLogsAs(t, c, 1, 3)
	if f.Log().LogEndOffset() != end+2 {
		t.Fatalf("follower log end offset %d, want %d", f.Log().LogEndOffset(), end+2)
	}
	// The installed state survives a restart of the follower.
	c.nodes[3].restart(t, true)
	if got, _ := c.nodes[3].ls.FirstIndex(); got != first {
		t.Fatalf("after restart: first index %d, want %d", got, first)
	}
	sameLogsAs(t, c, 1, 3)
}
