package raft

import (
	"strconv"
	"testing"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// leaderStatus is the Status of leader id with the given configuration, every member's
// Match at match (learners' from lagging) and the commit index at commit.
func leaderStatus(id uint64, voters, outgoing, learners []uint64, commit uint64, lagging map[uint64]uint64) Status {
	st := Status{ID: id, State: etcdraft.StateLeader, Leader: id, Committed: commit,
		Voters: voters, VotersOutgoing: outgoing, Progress: map[uint64]PeerProgress{}}
	for _, ids := range [][]uint64{voters, outgoing, learners} {
		for _, m := range ids {
			st.Progress[m] = PeerProgress{Match: commit}
		}
	}
	for _, l := range learners {
		found := false
		for _, v := range outgoing {
			found = found || v == l
		}
		if found {
			st.LearnersNext = append(st.LearnersNext, l)
		} else {
			st.Learners = append(st.Learners, l)
		}
	}
	for m, match := range lagging {
		st.Progress[m] = PeerProgress{Match: match}
	}
	return st
}

func TestReconfigWaitsOffLeaderAndWhilePending(t *testing.T) {
	r := &Reconfig{Target: []uint64{4, 5, 6}}
	st := leaderStatus(1, []uint64{1, 2, 3}, nil, nil, 10, nil)
	st.State = etcdraft.StateFollower
	if s := r.Next(st); s.Kind != ReconfigWait || s.Waiting != "not the leader" {
		t.Fatalf("follower: %+v", s)
	}
	st.State, st.PendingConf = etcdraft.StateLeader, true
	if s := r.Next(st); s.Kind != ReconfigWait || s.Phase != PhaseAddingLearners {
		t.Fatalf("pending: %+v", s)
	}
	for _, target := range [][]uint64{nil, {1, 0}, {2, 3, 2}} {
		r := &Reconfig{Target: target}
		if s := r.Next(leaderStatus(1, []uint64{1}, nil, nil, 1, nil)); s.Kind != ReconfigWait || s.Change != nil || s.Waiting == "" {
			t.Fatalf("bad target %v: %+v", target, s)
		}
	}
}

func TestReconfigIsIdempotent(t *testing.T) {
	r := &Reconfig{Target: []uint64{4, 5, 6}}
	st := leaderStatus(1, []uint64{1, 2, 3}, nil, nil, 10, nil)
	a, b := r.Next(st), r.Next(st)
	if a.Kind != ReconfigPropose || describe(a.Change) != describe(b.Change) || describe(a.Change) != "learner(4)" {
		t.Fatalf("steps differ or wrong: %v then %v", describe(a.Change), describe(b.Change))
	}
}

// The catch-up mark is the commit index when the learner was first seen: a commit index
// that moves on does not move it.
func TestReconfigCatchUpMarkDoesNotMove(t *testing.T) {
	r := &Reconfig{Target: []uint64{1, 2, 4}}
	st := leaderStatus(1, []uint64{1, 2, 3}, nil, []uint64{4}, 100, map[uint64]uint64{4: 40})
	s := r.Next(st)
	if s.Kind != ReconfigWait || s.Phase != PhaseCatchingUp || s.Lag[4] != 60 || s.Waiting != "learner 4 at 40 of 100" {
		t.Fatalf("first look: %+v", s)
	}
	st = leaderStatus(1, []uint64{1, 2, 3}, nil, []uint64{4}, 500, map[uint64]uint64{4: 100})
	s = r.Next(st)
	if s.Kind != ReconfigPropose || s.Phase != PhaseJoint {
		t.Fatalf("at its mark under a moving commit: %+v", s)
	}
	if got := describe(s.Change); got != "enter-joint voter(4) learner(3)" {
		t.Fatalf("change %s", got)
	}
	if s.Lag[4] != 400 {
		t.Fatalf("lag %d", s.Lag[4])
	}
}

func TestReconfigJoint(t *testing.T) {
	r := &Reconfig{Target: []uint64{4, 5, 6}}
	joint := leaderStatus(1, []uint64{4, 5, 6}, []uint64{1, 2, 3}, []uint64{1, 2, 3}, 50, map[uint64]uint64{4: 49})
	if s := r.Next(joint); s.Kind != ReconfigTransfer || s.To != 5 || s.Phase != PhaseJoint {
		t.Fatalf("leader outside the target, 4 behind: %+v", s)
	}
	joint.Progress[4] = PeerProgress{Match: 50}
	if s := r.Next(joint); s.Kind != ReconfigTransfer || s.To != 4 {
		t.Fatalf("prefers Target[0]: %+v", s)
	}
	joint.ID = 4
	if s := r.Next(joint); s.Kind != ReconfigPropose || s.Phase != PhaseLeaving || describe(s.Change) != "leave-joint" {
		t.Fatalf("target leader: %+v", s)
	}
	// Cancel in joint: the planner for {1,2,3} must still leave to the incoming half.
	c := &Reconfig{Target: []uint64{1, 2, 3}}
	joint.ID = 1
	if s := c.Next(joint); s.Kind != ReconfigTransfer || s.Phase != PhaseJoint {
		t.Fatalf("cancel, leader in the outgoing half: %+v", s)
	}
	joint.ID = 4
	if s := c.Next(joint); s.Kind != ReconfigPropose || s.Phase != PhaseJoint || describe(s.Change) != "leave-joint" {
		t.Fatalf("cancel, leader in the incoming half: %+v", s)
	}
	// Then home: the old voters are learners, caught up.
	after := leaderStatus(4, []uint64{4, 5, 6}, nil, []uint64{1, 2, 3}, 60, nil)
	if s := c.Next(after); s.Kind != ReconfigPropose || describe(s.Change) != "enter-joint voter(1) voter(2) voter(3) learner(4) learner(5) learner(6)" {
		t.Fatalf("way home: %+v", s)
	}
	nobody := leaderStatus(1, []uint64{4, 5, 6}, []uint64{1, 2, 3}, []uint64{1, 2, 3}, 50, map[uint64]uint64{4: 1, 5: 1, 6: 1})
	if s := r.Next(nobody); s.Kind != ReconfigWait {
		t.Fatalf("no caught-up target member: %+v", s)
	}
}

func TestReconfigRemovesLearnersThenDone(t *testing.T) {
	r := &Reconfig{Target: []uint64{1}}
	st := leaderStatus(1, []uint64{1}, nil, []uint64{3, 2}, 9, nil)
	if s := r.Next(st); s.Kind != ReconfigPropose || s.Phase != PhaseRemovingLearners || describe(s.Change) != "remove(2)" {
		t.Fatalf("%+v", s)
	}
	if s := r.Next(leaderStatus(1, []uint64{1}, nil, nil, 9, nil)); s.Kind != ReconfigDone || s.Phase != PhaseDone {
		t.Fatalf("%+v", s)
	}
	// 3 -> 1: no learner to add, the others demoted in one joint change.
	if s := r.Next(leaderStatus(1, []uint64{1, 2, 3}, nil, nil, 9, nil)); describe(s.Change) != "enter-joint learner(2) learner(3)" {
		t.Fatalf("%+v", s)
	}
}

func describe(cc *pb.ConfChangeV2) string {
	if cc == nil {
		return "<nil>"
	}
	if len(cc.GetChanges()) == 0 {
		return "leave-joint"
	}
	out := ""
	if cc.GetTransition() == pb.ConfChangeTransition_ConfChangeTransitionJointExplicit {
		out = "enter-joint"
	}
	for _, c := range cc.GetChanges() {
		name := map[pb.ConfChangeType]string{pb.ConfChangeType_ConfChangeAddNode: "voter",
			pb.ConfChangeType_ConfChangeAddLearnerNode: "learner", pb.ConfChangeType_ConfChangeRemoveNode: "remove"}[c.GetType()]
		if out != "" {
			out += " "
		}
		out += name + "(" + strconv.FormatUint(c.GetNodeId(), 10) + ")"
	}
	return out
}
