package raftrpc

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/storage"
)

// node is one broker of the test: a real rpc.Transport on loopback and a raft.Host joined
// by a Sender one way and Register the other.
type node struct {
	id     uint64
	tr     *rpc.Transport
	sender *Sender
	host   *raft.Host
	ls     map[uint64]*raft.LogStorage
	recv   ReceiveStats
	down   bool          // transport closed
	quiet  atomic.Uint64 // quiesced groups listed in the host heartbeats received
}

// stepFunc is a Stepper.
type stepFunc func(*raft.Batch)

func (f stepFunc) Step(b *raft.Batch) { f(b) }

type cluster struct {
	t      *testing.T
	nodes  map[uint64]*node
	ids    []uint64
	groups []uint64
}

func newCluster(t *testing.T, nodes, groups int) *cluster {
	c := &cluster{t: t, nodes: map[uint64]*node{}}
	for g := 1; g <= groups; g++ {
		c.groups = append(c.groups, uint64(g))
	}
	for i := 1; i <= nodes; i++ {
		c.ids = append(c.ids, uint64(i))
	}
	t.Cleanup(c.close)
	for _, id := range c.ids {
		n := &node{id: id, ls: map[uint64]*raft.LogStorage{}}
		reg := rpc.NewRegistry(nil)
		tr, err := rpc.New(rpc.Options{
			NodeID: int32(id), ClusterID: "raftrpc-test", ListenAddr: "127.0.0.1:0",
			Handler:    reg.Dispatch,
			MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
			DropAfter: 200 * time.Millisecond, DialTimeout: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		n.tr = tr
		n.host, n.sender = NewHost(tr, raft.HostOptions{NodeID: id, TickInterval: 20 * time.Millisecond, Workers: 2})
		err = Register(reg, stepFunc(func(b *raft.Batch) {
			if b.Heartbeat != nil {
				n.quiet.Add(uint64(b.Heartbeat.Listed()))
			}
			n.host.Step(b)
		}), &n.recv)
		if err != nil {
			t.Fatal(err)
		}
		c.nodes[id] = n
		fs := storage.NewMemFS()
		for _, g := range c.groups {
			ls, err := raft.Open(storage.Options{FS: fs, Dir: fmt.Sprintf("g%d", g), SegmentBytes: 4096})
			if err != nil {
				t.Fatal(err)
			}
			n.ls[g] = ls
			if err := n.host.AddGroup(g, raft.GroupConfig{Storage: ls, Bootstrap: &pb.ConfState{Voters: c.ids}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tr.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.tr.SetPeer(int32(b.id), b.tr.Addr().String())
			}
		}
	}
	return c
}

func (c *cluster) close() {
	for _, id := range c.ids {
		if n := c.nodes[id]; n != nil {
			n.tr.Close()
		}
	}
	for _, id := range c.ids {
		if n := c.nodes[id]; n != nil {
			n.host.Close()
		}
	}
}

func (c *cluster) live() []uint64 {
	var ids []uint64
	for _, id := range c.ids {
		if !c.nodes[id].down {
			ids = append(ids, id)
		}
	}
	return ids
}

func (c *cluster) status(id, g uint64) raft.Status {
	c.t.Helper()
	st, err := c.nodes[id].host.Status(g)
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// leader returns the live node that leads g and that every live node follows, or 0.
func (c *cluster) leader(g uint64) uint64 {
	var lead, term uint64
	for _, id := range c.live() {
		st := c.status(id, g)
		if lead == 0 {
			lead, term = st.Leader, st.Term
		} else if st.Leader != lead || st.Term != term {
			return 0
		}
	}
	if lead == 0 || c.nodes[lead] == nil || c.nodes[lead].down || c.status(lead, g).State != etcdraft.StateLeader {
		return 0
	}
	return lead
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *cluster) waitLeaders() map[uint64]uint64 {
	c.t.Helper()
	leaders := map[uint64]uint64{}
	waitFor(c.t, 20*time.Second, "a leader in every group", func() bool {
		for _, g := range c.groups {
			l := c.leader(g)
			if l == 0 {
				return false
			}
			leaders[g] = l
		}
		return true
	})
	return leaders
}

// propose commits n batches in every group through its leader, retrying on a lost
// leadership, and returns how many records each group took.
func (c *cluster) propose(n int, tag int64) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(c.groups))
	for _, g := range c.groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; {
				l := c.leader(g)
				if l == 0 {
					if ctx.Err() != nil {
						errs <- fmt.Errorf("group %d: no leader", g)
						return
					}
					time.Sleep(5 * time.Millisecond)
					continue
				}
				pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
				_, _, err := c.nodes[l].host.Propose(pctx, g, kafkatest.Plain(1+i%3, tag+int64(g)*100+int64(i)).Bytes())
				pcancel()
				if err != nil {
					if ctx.Err() != nil {
						errs <- fmt.Errorf("group %d proposal %d: %w", g, i, err)
						return
					}
					continue // leadership moved: retry (a duplicate is fine here)
				}
				i++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		c.t.Fatal(err)
	}
}

// sameLogs waits until every live replica of every group has applied its leader's commit
// index and holds the same log, then checks entries and Kafka offsets are identical.
func (c *cluster) sameLogs(minRecords int64) {
	c.t.Helper()
	ids := c.live()
	for _, g := range c.groups {
		waitFor(c.t, 20*time.Second, fmt.Sprintf("group %d caught up", g), func() bool {
			l := c.leader(g)
			if l == 0 {
				return false
			}
			lst := c.status(l, g)
			for _, id := range ids {
				st := c.status(id, g)
				if st.Applied < lst.Committed || st.LogEnd != lst.LogEnd || st.Committed != lst.Committed {
					return false
				}
			}
			return true
		})
		ref := entries(c.t, c.nodes[ids[0]].ls[g])
		if end := c.nodes[ids[0]].ls[g].Log().LogEndOffset(); end < minRecords {
			c.t.Fatalf("group %d: log end offset %d, want at least %d", g, end, minRecords)
		}
		for _, id := range ids[1:] {
			got := entries(c.t, c.nodes[id].ls[g])
			if len(got) != len(ref) {
				c.t.Fatalf("group %d: node %d holds %d entries, node %d %d", g, id, len(got), ids[0], len(ref))
			}
			for i := range ref {
				a, b := ref[i], got[i]
				if a.Index != b.Index || a.Term != b.Term || a.BaseOffset != b.BaseOffset || a.Records != b.Records || string(a.Data) != string(b.Data) {
					c.t.Fatalf("group %d index %d: node %d %+v, node %d %+v", g, a.Index, id, b, ids[0], a)
				}
			}
		}
	}
}

func entries(t *testing.T, ls *raft.LogStorage) []storage.Entry {
	t.Helper()
	first, _ := ls.FirstIndex()
	last, _ := ls.LastIndex()
	ents, err := ls.Log().Entries(first, last+1, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	return ents
}

func TestClusterOverRPC(t *testing.T) {
	c := newCluster(t, 3, 20)
	for _, g := range c.groups {
		if err := c.nodes[c.ids[int(g)%len(c.ids)]].host.Campaign(g); err != nil {
			t.Fatal(err)
		}
	}
	leaders := c.waitLeaders()
	c.propose(3, 0)
	c.sameLogs(1 + 2 + 3)
	for _, id := range c.ids {
		n := c.nodes[id]
		if n.recv.Batches.Load() == 0 || n.recv.Dropped.Load() != 0 || n.sender.Stats().Sent == 0 {
			t.Fatalf("node %d: received %d batches, dropped %d, sender %+v", id, n.recv.Batches.Load(), n.recv.Dropped.Load(), n.sender.Stats())
		}
	}

	// Idle groups quiesce: their leaders' hosts list them in the coalesced heartbeats,
	// which must cross the wire too.
	waitFor(t, 20*time.Second, "quiesced groups listed in heartbeats received by every node", func() bool {
		for _, id := range c.ids {
			if c.nodes[id].quiet.Load() == 0 {
				return false
			}
		}
		return true
	})

	// Cut off the node leading the most groups: the others elect new leaders and go on.
	count := map[uint64]int{}
	for _, l := range leaders {
		count[l]++
	}
	victim := c.ids[0]
	for _, id := range c.ids {
		if count[id] > count[victim] {
			victim = id
		}
	}
	t.Logf("closing the transport of node %d, leader of %d groups", victim, count[victim])
	c.nodes[victim].tr.Close()
	c.nodes[victim].down = true
	c.waitLeaders()
	c.propose(3, 10000)
	c.sameLogs(2 * (1 + 2 + 3))
	// The survivors elect at once (the victim's port refuses: raft/fastelect.go), so the
	// victim's own failed sends may not have been reported yet.
	waitFor(t, 20*time.Second, "the victim's failed sends reported", func() bool {
		st := c.nodes[victim].sender.Stats()
		return st.Failed > 0 && st.Reported > 0
	})
}
