package raft

import (
	"slices"
	"strings"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/cairn-io/cairn/internal/storage"
)

// replayConfs applies every configuration entry of ents from an empty configuration, as a
// replica that joins and replays the log from index 1 does.
func replayConfs(t *testing.T, ents []*pb.Entry) *pb.ConfState {
	t.Helper()
	trk := replayTracker(t, tracker.MakeProgressTracker(1, 0), ents)
	return trk.ConfState()
}

// A replica of {1 2 3} whose log ends in a joint configuration nobody applied is forced to
// be the only voter: after a restart raft runs it alone, with everything committed, and a
// replica that replays the log from the start ends in the same configuration.
func TestForceSoleVoterRewritesTheConfigurationThroughTheLog(t *testing.T) {
	fs := storage.NewMemFS()
	h, ls := addGroupOn(t, fs, &pb.ConfState{Voters: []uint64{1, 2, 3}})
	h.Close()
	joint := &pb.ConfChangeV2{Transition: pb.ConfChangeTransition_ConfChangeTransitionJointExplicit.Enum(),
		Changes: []*pb.ConfChangeSingle{
			{Type: pb.ConfChangeType_ConfChangeAddNode.Enum(), NodeId: new(uint64(4))},
			{Type: pb.ConfChangeType_ConfChangeRemoveNode.Enum(), NodeId: new(uint64(3))},
		}}
	data, err := proto.Marshal(joint)
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Append([]*pb.Entry{{Type: pb.EntryConfChangeV2.Enum(), Term: new(uint64(3)), Index: new(uint64(4)), Data: data}}); err != nil {
		t.Fatal(err)
	}
	// A replica that was still replaying as a joiner when the others died.
	if err := ls.setJoinGate(joinGate{Gated: true, Floor: 100}); err != nil {
		t.Fatal(err)
	}
	fv, err := ls.ForceSoleVoter(2)
	if err != nil {
		t.Fatal(err)
	}
	// Leave the unapplied joint configuration, enter one with 2 alone, leave it: 5, 6, 7,
	// at a term above the log's last.
	if !fv.Changed || fv.Index != 7 || fv.Term != 4 {
		t.Fatalf("forced: %+v, want index 7 at term 4", fv)
	}
	ents, err := ls.Entries(1, 8, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if cs := replayConfs(t, ents); !slices.Equal(cs.GetVoters(), []uint64{2}) || len(cs.GetLearners())+len(cs.GetVotersOutgoing())+len(cs.GetLearnersNext()) != 0 {
		t.Fatalf("a replica replaying the log ends in %v, want voters [2] alone", cs)
	}
	// The joint configuration at 4, committed by the recovery and never applied, is kept
	// as the one in force there: a snapshot taken at a log start of 4 must carry it.
	if cs, ok := ls.st.confAsOf(4); !ok || !slices.Equal(cs.GetVoters(), []uint64{1, 2, 4}) || !slices.Equal(cs.GetVotersOutgoing(), []uint64{1, 2, 3}) {
		t.Fatalf("configuration in force at 4: %v", cs)
	}
	if ls.Log().LogEndOffset() != 0 {
		t.Fatalf("the forced changes took Kafka offsets: log end offset %d", ls.Log().LogEndOffset())
	}
	ls.Close()

	ls, err = Open(storage.Options{FS: fs, Dir: "g", SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	h = newHost(HostOptions{NodeID: 2, Transport: netSender{}}, wallClock{})
	defer h.Close()
	if err := h.AddGroup(1, GroupConfig{Storage: ls, BootstrapInLog: true}); err != nil {
		t.Fatal(err)
	}
	st, err := h.Status(1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Voters, []uint64{2}) || len(st.VotersOutgoing) != 0 || len(st.Learners) != 0 || st.Committed != 7 || st.Applied != 7 || st.Term != 4 || st.JoinGated {
		t.Fatalf("after restart: %+v", st)
	}

	// Again (a crash before the broker recorded that it had recovered): nothing changes.
	fv, err = ls.ForceSoleVoter(2)
	if err != nil || fv.Changed || fv.Index != 7 {
		t.Fatalf("repeat: %+v, %v", fv, err)
	}
	if ls.WrittenIndex() != 7 {
		t.Fatalf("repeat wrote entries: last index %d", ls.WrittenIndex())
	}
}

func TestForceSoleVoterRefusesAReplicaWithoutAConfiguration(t *testing.T) {
	ls, err := Open(storage.Options{FS: storage.NewMemFS(), Dir: "g", SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	if _, err := ls.ForceSoleVoter(1); err == nil || !strings.Contains(err.Error(), "no configuration") {
		t.Fatalf("forcing an empty replica: %v", err)
	}
	if _, err := ls.ForceSoleVoter(0); err == nil {
		t.Fatal("forcing node id 0 was accepted")
	}
}

// FuzzForceSoleVoter: from any valid history of configuration changes, some applied and
// some not, forcing any replica to be the only voter leaves a log whose replay from its
// first entry ends in that replica alone, as the state file says.
func FuzzForceSoleVoter(f *testing.F) {
	f.Add([]byte{3, 1, 2, 0, 4, 1, 5, 2, 1})
	f.Add([]byte{1, 0, 9, 3, 2, 3, 4, 7, 7, 7})
	f.Fuzz(func(t *testing.T, b []byte) {
		next := func() byte {
			if len(b) == 0 {
				return 0
			}
			v := b[0]
			b = b[1:]
			return v
		}
		ls, err := Open(storage.Options{FS: storage.NewMemFS(), Dir: "g", SegmentBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		defer ls.Close()
		voters := []uint64{1, 2, 3}[:1+int(next())%3]
		if err := ls.bootstrapInLog(&pb.ConfState{Voters: voters}); err != nil {
			t.Fatal(err)
		}
		trk := tracker.MakeProgressTracker(1, 0)
		ents, _ := ls.Entries(1, ls.WrittenIndex()+1, 1<<30)
		trk = replayTracker(t, trk, ents)
		applied := int(next()) % 8
		for i := 0; i < 8 && len(b) > 0; i++ {
			var cc *pb.ConfChangeV2
			switch op := next() % 4; op {
			case 0:
				cc = &pb.ConfChangeV2{}
			default:
				typ := []pb.ConfChangeType{pb.ConfChangeType_ConfChangeAddNode, pb.ConfChangeType_ConfChangeAddLearnerNode, pb.ConfChangeType_ConfChangeRemoveNode}[op-1]
				cc = &pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: typ.Enum(), NodeId: new(uint64(1 + next()%5))}}}
				if next()%2 == 1 {
					cc.Transition = pb.ConfChangeTransition_ConfChangeTransitionJointExplicit.Enum()
				}
			}
			tried, err := applyConf(trk, cc, ls.WrittenIndex())
			if err != nil || len(tried.Voters[0]) == 0 {
				continue // not a change raft would accept here
			}
			trk = tried
			data, _ := proto.Marshal(cc)
			idx := ls.WrittenIndex() + 1
			if err := ls.Append([]*pb.Entry{{Type: pb.EntryConfChangeV2.Enum(), Term: new(uint64(2)), Index: new(idx), Data: data}}); err != nil {
				t.Fatal(err)
			}
			if i < applied {
				if err := ls.SetConfState(idx, trk.ConfState()); err != nil {
					t.Fatal(err)
				}
			}
		}
		cs := trk.ConfState()
		members := append(append(append(slices.Clone(cs.GetVoters()), cs.GetLearners()...), cs.GetVotersOutgoing()...), cs.GetLearnersNext()...)
		id := members[int(next())%len(members)]
		fv, err := ls.ForceSoleVoter(id)
		if err != nil {
			t.Fatalf("forcing %d in %v: %v", id, cs, err)
		}
		all, err := ls.Entries(1, fv.Index+1, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		got := replayConfs(t, all)
		if !slices.Equal(got.GetVoters(), []uint64{id}) || len(got.GetLearners())+len(got.GetVotersOutgoing())+len(got.GetLearnersNext()) != 0 {
			t.Fatalf("forcing %d in %v: the log replays to %v", id, cs, got)
		}
		if last := ls.st.Confs[len(ls.st.Confs)-1]; last.Index != fv.Index || !slices.Equal(last.CS.GetVoters(), []uint64{id}) {
			t.Fatalf("state: configuration %v at %d, forced to %d", last.CS, last.Index, fv.Index)
		}
		if _, _, commit := ls.HardState(); commit != fv.Index {
			t.Fatalf("commit %d, forced to %d", commit, fv.Index)
		}
	})
}

// replayTracker applies ents' configuration changes to trk.
func replayTracker(t *testing.T, trk tracker.ProgressTracker, ents []*pb.Entry) tracker.ProgressTracker {
	t.Helper()
	for _, e := range ents {
		var cc *pb.ConfChangeV2
		switch e.GetType() {
		case pb.EntryConfChange:
			v1 := &pb.ConfChange{}
			if err := proto.Unmarshal(e.GetData(), v1); err != nil {
				t.Fatal(err)
			}
			cc = v1.AsV2()
		case pb.EntryConfChangeV2:
			cc = &pb.ConfChangeV2{}
			if err := proto.Unmarshal(e.GetData(), cc); err != nil {
				t.Fatal(err)
			}
		default:
			continue
		}
		var err error
		if trk, err = applyConf(trk, cc, e.GetIndex()); err != nil {
			t.Fatalf("replaying the change at %d: %v", e.GetIndex(), err)
		}
	}
	return trk
}
