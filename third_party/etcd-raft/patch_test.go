package raft

import (
	"testing"
	"unsafe"

	pb "go.etcd.io/raft/v3/raftpb"
)

// TestProposalSharesData checks the one change this copy carries (README.md): the entry a
// leader appends for a proposal shares the proposal's Data, and the proposer's message is
// not modified.
func TestProposalSharesData(t *testing.T) {
	storage := NewMemoryStorage()
	if err := storage.ApplySnapshot(&pb.Snapshot{Metadata: &pb.SnapshotMetadata{
		Index: new(uint64(1)), Term: new(uint64(1)),
		ConfState: &pb.ConfState{Voters: []uint64{1}},
	}}); err != nil {
		t.Fatal(err)
	}
	rn, err := NewRawNode(&Config{ID: 1, ElectionTick: 10, HeartbeatTick: 1, Storage: storage,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256})
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.Campaign(); err != nil {
		t.Fatal(err)
	}
	for rn.HasReady() {
		rd := rn.Ready()
		if err := storage.Append(rd.Entries); err != nil {
			t.Fatal(err)
		}
		rn.Advance(rd)
	}
	if rn.Status().RaftState != StateLeader {
		t.Fatalf("state %v, want leader", rn.Status().RaftState)
	}

	data := []byte("a proposed batch")
	prop := &pb.Entry{Data: data}
	if err := rn.Step(&pb.Message{Type: new(pb.MessageType_MsgProp), From: new(uint64(1)), Entries: []*pb.Entry{prop}}); err != nil {
		t.Fatal(err)
	}
	if prop.Term != nil || prop.Index != nil {
		t.Fatalf("the proposer's entry was modified: term %v index %v", prop.Term, prop.Index)
	}
	rd := rn.Ready()
	var found *pb.Entry
	for _, e := range rd.Entries {
		if string(e.GetData()) == string(data) {
			found = e
		}
	}
	if found == nil {
		t.Fatalf("the proposal is not among the Ready's entries: %v", rd.Entries)
	}
	if found == prop {
		t.Fatal("raft appended the proposer's own Entry, not a new one")
	}
	if unsafe.SliceData(found.GetData()) != unsafe.SliceData(data) {
		t.Fatal("the appended entry holds a copy of the proposal's Data")
	}
	if found.GetTerm() == 0 || found.GetIndex() != 3 {
		t.Fatalf("appended entry has term %d index %d, want a term and index 3", found.GetTerm(), found.GetIndex())
	}
	if found.Type != nil && found.GetType() != pb.EntryType_EntryNormal {
		t.Fatalf("appended entry has type %v", found.GetType())
	}
}
