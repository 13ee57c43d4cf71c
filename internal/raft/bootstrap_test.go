package raft

import (
	"errors"
	"testing"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairn-io/cairn/internal/storage"
)

// addGroupOn starts group 1 on a goroutine-free host over a storage reopened on fs.
func addGroupOn(t *testing.T, fs storage.FS, bootstrap *pb.ConfState) (*Host, *LogStorage) {
	t.Helper()
	ls, err := Open(storage.Options{FS: fs, Dir: "g", SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	h := newHost(HostOptions{NodeID: 1, Transport: netSender{}}, wallClock{})
	if err := h.AddGroup(1, GroupConfig{Storage: ls, Bootstrap: bootstrap, BootstrapInLog: true}); err != nil {
		t.Fatal(err)
	}
	return h, ls
}

func TestBootstrapInLogWritesTheConfigurationAsEntries(t *testing.T) {
	fs := storage.NewMemFS()
	cs := &pb.ConfState{Voters: []uint64{1, 2, 3}}
	h, ls := addGroupOn(t, fs, cs)
	st, err := h.Status(1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Term != 1 || st.Committed != 3 || st.Applied != 3 || len(st.Voters) != 3 {
		t.Fatalf("status after bootstrap: %+v", st)
	}
	ents, err := ls.Entries(1, 4, 1<<30)
	if err != nil || len(ents) != 3 {
		t.Fatalf("entries %v, %v", ents, err)
	}
	for i, e := range ents {
		cc := &pb.ConfChange{}
		if e.GetType() != pb.EntryConfChange || e.GetTerm() != 1 || proto.Unmarshal(e.GetData(), cc) != nil ||
			cc.GetType() != pb.ConfChangeType_ConfChangeAddNode || cc.GetNodeId() != uint64(i+1) {
			t.Fatalf("entry %d: %v", i+1, e)
		}
	}
	if ls.Log().LogEndOffset() != 0 {
		t.Fatalf("configuration entries took Kafka offsets: log end offset %d", ls.Log().LogEndOffset())
	}
	if ok, _ := h.JoinableLog(1); !ok {
		t.Fatal("a log that holds its configuration is not joinable")
	}
	h.Close()
	ls.Close()

	// A restart keeps it as it is, whatever Bootstrap says now.
	h, ls = addGroupOn(t, fs, &pb.ConfState{Voters: []uint64{7}})
	defer ls.Close()
	defer h.Close()
	if st, _ := h.Status(1); st.Applied != 3 || len(st.Voters) != 3 || ls.WrittenIndex() != 3 {
		t.Fatalf("after restart: %+v, log end %d", st, ls.WrittenIndex())
	}
}

// A crash after the entries but before the state write leaves no configuration: the next
// start writes the same entries again and finishes.
func TestBootstrapInLogAfterACrashBeforeTheState(t *testing.T) {
	fs := storage.NewMemFS()
	cs := &pb.ConfState{Voters: []uint64{1, 2}}
	ls, err := Open(storage.Options{FS: fs, Dir: "g", SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := bootstrapEntries(cs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ls.appendEntries(ents[:1], false); err != nil {
		t.Fatal(err)
	}
	if err := ls.Flush(); err != nil {
		t.Fatal(err)
	}
	ls.Close()
	h, ls := addGroupOn(t, fs, cs)
	defer ls.Close()
	defer h.Close()
	if st, _ := h.Status(1); st.Applied != 2 || st.Committed != 2 || len(st.Voters) != 2 {
		t.Fatalf("after the crash: %+v", st)
	}

	// Entries of another configuration are refused, never mixed.
	other := storage.NewMemFS()
	ls2, err := Open(storage.Options{FS: other, Dir: "g", SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ls2.appendEntries(ents[:1], false); err != nil {
		t.Fatal(err)
	}
	defer ls2.Close()
	if err := ls2.bootstrapInLog(&pb.ConfState{Voters: []uint64{2, 1}}); err == nil {
		t.Fatal("bootstrap over another configuration's entry succeeded")
	}
}

func TestJoiningReplicaStartsEmpty(t *testing.T) {
	h, ls := addGroupOn(t, storage.NewMemFS(), nil)
	defer ls.Close()
	defer h.Close()
	st, _ := h.Status(1)
	if len(st.Voters) != 0 || len(st.Learners) != 0 || st.Term != 0 || ls.WrittenIndex() != 0 {
		t.Fatalf("joining replica: %+v, log end %d", st, ls.WrittenIndex())
	}
}

func TestLegacyBootstrapIsNotJoinable(t *testing.T) {
	ls, err := Open(storage.Options{FS: storage.NewMemFS(), Dir: "g", SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	h := newHost(HostOptions{NodeID: 1, Transport: netSender{}}, wallClock{})
	defer h.Close()
	if err := h.AddGroup(1, GroupConfig{Storage: ls, Bootstrap: &pb.ConfState{Voters: []uint64{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if ok, err := h.JoinableLog(1); ok || err != nil {
		t.Fatalf("joinable %v, %v", ok, err)
	}
	if _, err := h.JoinableLog(9); err == nil {
		t.Fatal("unknown group: no error")
	}
}

// A log that still starts at index 1 has no prefix to send: a leader that asks for a
// snapshot (it failed to read what a follower needs) is told to try again rather than be
// handed an empty snapshot, on which etcd raft panics.
func TestSnapshotOfAWholeLogIsTemporarilyUnavailable(t *testing.T) {
	_, ls := addGroupOn(t, storage.NewMemFS(), &pb.ConfState{Voters: []uint64{1, 2, 3}})
	if first, _ := ls.FirstIndex(); first != 1 {
		t.Fatalf("first index %d, want 1", first)
	}
	if snap, err := ls.Snapshot(); !errors.Is(err, etcdraft.ErrSnapshotTemporarilyUnavailable) {
		t.Fatalf("Snapshot of a log from index 1: %v, %v; want ErrSnapshotTemporarilyUnavailable", snap, err)
	}
}
