package raftrpc

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/storage"
)

var sampleVisible = []raft.VisibleReport{{Group: 1, Term: 4, Index: 13}, {Group: math.MaxUint64, Term: math.MaxUint64, Index: math.MaxUint64}, {}}

func TestVisibleRoundTrip(t *testing.T) {
	for _, reports := range [][]raft.VisibleReport{nil, sampleVisible[:1], sampleVisible} {
		p := EncodeVisible(reports)
		if len(p) > visibleSize(reports) {
			t.Fatalf("%d bytes encoded, bound %d", len(p), visibleSize(reports))
		}
		got, err := DecodeVisible(p)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, reports) {
			t.Fatalf("decoded %+v, want %+v", got, reports)
		}
	}
}

func TestDecodeVisibleRejects(t *testing.T) {
	good := EncodeVisible(sampleVisible)
	cases := map[string][]byte{
		"empty":      nil,
		"version":    append([]byte{visibleVersion + 1}, good[1:]...),
		"batch":      {wireVersion, 0, 0, 0},
		"trailing":   append(slices.Clone(good), 0),
		"huge count": {visibleVersion, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"no count":   {visibleVersion},
		"short":      {visibleVersion, 1, 1, 1},
	}
	for i := 1; i < len(good); i++ {
		cases[fmt.Sprintf("truncated at %d", i)] = good[:i]
	}
	for name, p := range cases {
		if r, err := DecodeVisible(p); err == nil {
			t.Errorf("%s: decoded %+v", name, r)
		}
	}
}

func FuzzDecodeVisible(f *testing.F) {
	f.Add(EncodeVisible(nil))
	f.Add(EncodeVisible(sampleVisible))
	f.Add([]byte{visibleVersion, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := DecodeVisible(p)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode to something that decodes to the same reports.
		r2, err := DecodeVisible(EncodeVisible(r))
		if err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		if !slices.Equal(r2, r) {
			t.Fatalf("re-decoded %+v, want %+v", r2, r)
		}
	})
}

// receiver is a transport whose registry routes raft traffic to f: the whole of Register
// (this release) or only the raft batches (a broker of the previous release, which knows
// no visible reports).
func receiver(t *testing.T, f *fakeHost, previous bool) (*rpc.Transport, *rpc.Registry, *ReceiveStats) {
	t.Helper()
	stats := &ReceiveStats{}
	reg := rpc.NewRegistry(nil)
	var err error
	if previous {
		err = reg.Register(handler(f, stats), MsgType)
	} else {
		err = Register(reg, f, stats)
	}
	if err != nil {
		t.Fatal(err)
	}
	rx, err := rpc.New(rpc.Options{NodeID: 2, ClusterID: "c", ListenAddr: "127.0.0.1:0", Handler: reg.Dispatch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rx.Close)
	if err := rx.Start(); err != nil {
		t.Fatal(err)
	}
	return rx, reg, stats
}

// TestSenderSendsVisibleApart: a batch's visible reports travel as a message of their own
// type after its raft traffic, queued with it as one send; a receiver of this release steps both, one of the previous
// release drops and counts the reports and steps the raft traffic untouched.
func TestSenderSendsVisibleApart(t *testing.T) {
	for _, previous := range []bool{false, true} {
		t.Run(fmt.Sprintf("previous-release=%v", previous), func(t *testing.T) {
			f := &fakeHost{}
			rx, reg, stats := receiver(t, f, previous)
			tx, err := rpc.New(rpc.Options{NodeID: 1, ClusterID: "c", ListenAddr: "127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			tx.SetPeer(2, rx.Addr().String())
			s := NewSender(tx, f)
			s.Send(2, &raft.Batch{From: 1, Messages: []raft.GroupMessage{{Group: 5, Msg: msg(pb.MsgHeartbeat, 0)}},
				Visible: []raft.VisibleReport{{Group: 5, Term: 1, Index: 9}}})
			s.Send(2, &raft.Batch{From: 1, Visible: []raft.VisibleReport{{Group: 6, Term: 2, Index: 3}}})
			s.Send(2, &raft.Batch{From: 1, Written: []raft.WrittenReport{{Group: 7, Term: 1, Index: 1}}}) // a marker: the last one
			waitFor(t, 10*time.Second, "the written marker", func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				return len(f.batches) > 0 && len(f.batches[len(f.batches)-1].Written) == 1
			})
			if st := s.Stats(); st.Sent != 3 || st.Failed != 0 {
				t.Fatalf("sender stats %+v", st)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			var got []string
			for _, b := range f.batches {
				if b.From != 1 {
					t.Fatalf("batch from %d, want 1", b.From)
				}
				for _, m := range b.Messages {
					got = append(got, fmt.Sprintf("%d:%s", m.Group, m.Msg.GetType()))
				}
				for _, v := range b.Visible {
					got = append(got, fmt.Sprintf("%d:visible %d/%d", v.Group, v.Term, v.Index))
				}
				for _, w := range b.Written {
					got = append(got, fmt.Sprintf("%d:written", w.Group))
				}
			}
			want := []string{"5:MsgHeartbeat", "5:visible 1/9", "6:visible 2/3", "7:written"}
			dropped := uint64(0)
			if previous {
				want, dropped = []string{"5:MsgHeartbeat", "7:written"}, 2
			}
			if !slices.Equal(got, want) {
				t.Fatalf("stepped %v, want %v", got, want)
			}
			if reg.Dropped() != dropped || stats.Dropped.Load() != 0 {
				t.Fatalf("registry dropped %d (want %d), handler dropped %d", reg.Dropped(), dropped, stats.Dropped.Load())
			}
		})
	}
}

func TestHandlerDropsBadVisible(t *testing.T) {
	f := &fakeHost{}
	stats := &ReceiveStats{}
	reg := rpc.NewRegistry(nil)
	if err := Register(reg, f, stats); err != nil {
		t.Fatal(err)
	}
	good := EncodeVisible(sampleVisible)
	reg.Dispatch(3, VisibleType, good[:len(good)-1])
	reg.Dispatch(0, VisibleType, good)
	if len(f.batches) != 0 || stats.Dropped.Load() != 2 {
		t.Fatalf("stepped %d, dropped %d", len(f.batches), stats.Dropped.Load())
	}
	reg.Dispatch(3, VisibleType, good)
	if len(f.batches) != 1 || f.batches[0].From != 3 || !slices.Equal(f.batches[0].Visible, sampleVisible) {
		t.Fatalf("stepped %+v", f.batches)
	}
}

// TestClusterVisibleOverRPC: under write caching whose flushes never come, nothing
// commits, yet the followers learn over the wire the index their leader has
// majority-replicated.
func TestClusterVisibleOverRPC(t *testing.T) {
	c := newCluster(t, 3, 0)
	const g = 99
	hold := func(int64, time.Duration) time.Duration { return time.Hour }
	for _, id := range c.ids {
		ls, err := raft.Open(storage.Options{FS: storage.NewMemFS(), Dir: "held", SegmentBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.nodes[id].host.AddGroup(g, raft.GroupConfig{Storage: ls, Bootstrap: &pb.ConfState{Voters: c.ids}, FlushDelay: hold,
			ShareVisible: func() bool { return true }}); err != nil {
			t.Fatal(err)
		}
	}
	leader := c.nodes[1].host
	if err := leader.Campaign(g); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "node 1 leading", func() bool { return c.status(1, g).State == etcdraft.StateLeader })
	p, err := leader.ProposeAsync(g, kafkatest.Plain(2, 0).Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(context.Background(), raft.StageReplicated); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the followers' leader-visible at the proposal", func() bool {
		for _, id := range c.ids[1:] {
			if st := c.status(id, g); st.LeaderVisible < p.Index() {
				return false
			}
		}
		return true
	})
	for _, id := range c.ids {
		if st := c.status(id, g); st.Committed >= p.Index() || st.LeaderVisible > st.LogEnd {
			t.Fatalf("node %d: %+v: committed with no flush, or visible above its log end", id, st)
		}
	}
}
