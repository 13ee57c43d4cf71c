package raftrpc

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/rpc"
)

// fakeHost records what a Sender reports and what Register's handler steps.
type fakeHost struct {
	mu          sync.Mutex
	unreachable []string // "group→peer"
	snapshots   []string // "group→peer ok"
	batches     []*raft.Batch
}

func (f *fakeHost) ReportUnreachable(group, peer uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unreachable = append(f.unreachable, fmt.Sprintf("%d→%d", group, peer))
	return nil
}

func (f *fakeHost) ReportSnapshot(group, peer uint64, ok bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapshots = append(f.snapshots, fmt.Sprintf("%d→%d %v", group, peer, ok))
	return nil
}

func (f *fakeHost) Step(b *raft.Batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, b)
}

func (f *fakeHost) reports() (unreachable, snapshots []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, s := slices.Clone(f.unreachable), slices.Clone(f.snapshots)
	f.unreachable, f.snapshots = nil, nil
	slices.Sort(u)
	slices.Sort(s)
	return u, s
}

func msg(typ pb.MessageType, data int) *pb.Message {
	m := &pb.Message{Type: typ.Enum(), Term: proto.Uint64(1)}
	if data > 0 {
		m.Entries = []*pb.Entry{{Term: proto.Uint64(1), Index: proto.Uint64(1), Data: bytes.Repeat([]byte{'x'}, data)}}
	}
	if typ == pb.MsgSnap {
		m.Snapshot = &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(5), Term: proto.Uint64(1)}}
	}
	return m
}

func TestSenderReportsFailedSends(t *testing.T) {
	tr, err := rpc.New(rpc.Options{NodeID: 1, ClusterID: "c", ListenAddr: "127.0.0.1:0", MaxQueueBytes: 4096,
		DropAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.SetPeer(2, "127.0.0.1:1") // nothing listens: what is queued stays queued
	s := NewSender(tr, nil)
	// Fill the peer's queue so that the next sends meet backpressure.
	for i := 0; s.Stats().Failed == 0; i++ {
		if i == 10 {
			t.Fatalf("no backpressure: %+v", s.Stats())
		}
		s.Send(2, &raft.Batch{From: 1, Messages: []raft.GroupMessage{{Group: 5, Msg: msg(pb.MsgApp, 1000)}}})
	}
	sent := s.Stats().Sent
	batch := func() *raft.Batch {
		return &raft.Batch{From: 1, Messages: []raft.GroupMessage{
			{Group: 1, Msg: msg(pb.MsgApp, 1100)}, {Group: 1, Msg: msg(pb.MsgHeartbeat, 0)}, {Group: 2, Msg: msg(pb.MsgSnap, 0)},
		}, Written: []raft.WrittenReport{{Group: 3, Term: 1, Index: 1}}}
	}

	s.Send(2, batch()) // no reporter: counted only
	if st := s.Stats(); st.Failed != 2 || st.Reported != 0 || st.Sent != sent {
		t.Fatalf("stats %+v", st)
	}
	// The same full queue, with a sender that has a host to tell.
	f := &fakeHost{}
	s = NewSender(tr, f)
	for _, to := range []uint64{2 /* backpressure */, 3 /* unknown peer */, math.MaxInt32 + 1 /* not an rpc id */} {
		s.Send(to, batch())
		u, sn := f.reports()
		wantU := []string{fmt.Sprintf("1→%d", to), fmt.Sprintf("2→%d", to)}
		wantS := []string{fmt.Sprintf("2→%d false", to)}
		if !slices.Equal(u, wantU) || !slices.Equal(sn, wantS) {
			t.Fatalf("send to %d: unreachable %v (want %v), snapshots %v (want %v)", to, u, wantU, sn, wantS)
		}
	}
	if st := s.Stats(); st.Failed != 3 || st.Reported != 9 {
		t.Fatalf("stats %+v", st)
	}
	tr.Close()
	s.Send(2, batch()) // closed transport: reported too
	if u, _ := f.reports(); len(u) != 2 {
		t.Fatalf("after close: unreachable %v", u)
	}
}

func TestSenderSplitsLargeBatches(t *testing.T) {
	const frame = 64 << 10
	f := &fakeHost{}
	recv := &ReceiveStats{}
	reg := rpc.NewRegistry(nil)
	if err := Register(reg, f, recv); err != nil {
		t.Fatal(err)
	}
	rx, err := rpc.New(rpc.Options{NodeID: 2, ClusterID: "c", ListenAddr: "127.0.0.1:0", MaxFrameBytes: frame, Handler: reg.Dispatch})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := rx.Start(); err != nil {
		t.Fatal(err)
	}
	// MaxBatchBytes below the frame limit: the rpc writer does not cap its batches at
	// MaxFrameBytes by itself.
	tx, err := rpc.New(rpc.Options{NodeID: 1, ClusterID: "c", ListenAddr: "127.0.0.1:0", MaxFrameBytes: frame, MaxBatchBytes: frame / 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	tx.SetPeer(2, rx.Addr().String())
	s := NewSender(tx, f)

	b := &raft.Batch{From: 1, Written: []raft.WrittenReport{{Group: 9, Term: 2, Index: 7}}}
	for g := range uint64(5) {
		b.Messages = append(b.Messages, raft.GroupMessage{Group: g, Msg: msg(pb.MsgApp, 20<<10)})
	}
	s.Send(2, b)
	// One message alone above the limit cannot be split: it is reported.
	s.Send(2, &raft.Batch{From: 1, Messages: []raft.GroupMessage{{Group: 7, Msg: msg(pb.MsgApp, frame)}}})
	if u, _ := f.reports(); !slices.Equal(u, []string{"7→2"}) {
		t.Fatalf("unreachable %v", u)
	}

	waitFor(t, 10*time.Second, "every message delivered", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, b := range f.batches {
			n += len(b.Messages)
		}
		return n == 5
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	var groups []uint64
	var written []raft.WrittenReport
	for _, rb := range f.batches {
		if rb.From != 1 {
			t.Fatalf("batch from %d, want 1", rb.From)
		}
		for _, m := range rb.Messages {
			groups = append(groups, m.Group)
		}
		written = append(written, rb.Written...)
	}
	if len(f.batches) < 2 || !slices.Equal(groups, []uint64{0, 1, 2, 3, 4}) || !slices.Equal(written, b.Written) {
		t.Fatalf("%d batches, groups %v, written %v", len(f.batches), groups, written)
	}
	if recv.Dropped.Load() != 0 || recv.Batches.Load() != uint64(len(f.batches)) {
		t.Fatalf("receive stats: %d batches, %d dropped", recv.Batches.Load(), recv.Dropped.Load())
	}
}

func TestHandlerDropsGarbage(t *testing.T) {
	f := &fakeHost{}
	stats := &ReceiveStats{}
	reg := rpc.NewRegistry(nil)
	if err := Register(reg, f, stats); err != nil {
		t.Fatal(err)
	}
	h := reg.Dispatch
	good, err := EncodeBatch(&raft.Batch{Written: []raft.WrittenReport{{Group: 1, Term: 1, Index: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	h(3, MsgType, []byte{wireVersion, 1, 1, 5, 0xff}) // truncated
	h(3, MsgType, nil)
	h(0, MsgType, good)            // not a node id
	h(-4, MsgType, good)           // not a node id
	h(3, rpc.MsgLeaders, []byte{}) // another message type: not ours, not counted
	if len(f.batches) != 0 || stats.Dropped.Load() != 4 || stats.Batches.Load() != 0 || reg.Dropped() != 1 {
		t.Fatalf("stepped %d, stats %d/%d, registry dropped %d", len(f.batches), stats.Batches.Load(), stats.Dropped.Load(), reg.Dropped())
	}
	h(3, MsgType, good)
	if len(f.batches) != 1 || f.batches[0].From != 3 || stats.Batches.Load() != 1 {
		t.Fatalf("stepped %+v, stats %d/%d", f.batches, stats.Batches.Load(), stats.Dropped.Load())
	}
	unstated := rpc.NewRegistry(nil)
	if err := Register(unstated, f, nil); err != nil { // nil stats is allowed
		t.Fatal(err)
	}
	unstated.Dispatch(3, MsgType, nil)
}
