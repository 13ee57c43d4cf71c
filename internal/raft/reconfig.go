package raft

import (
	"fmt"
	"slices"
	"strings"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The membership-change planner (DESIGN.md §8). It only plans: given a leader's Status it
// names the one next step towards a target voter set, and the caller (the partition
// leader's driver) executes it: ProposeConfChange, TransferLeadership, or wait and ask
// again. Every step is computed from the applied configuration, so a proposal that raft
// dropped (while another change was pending, or on a replica that lost leadership) is
// simply planned again on the next call.

// ReconfigKind is what the caller does with a step.
type ReconfigKind int

const (
	// ReconfigWait: nothing to do now; ask again after the next change or tick.
	ReconfigWait ReconfigKind = iota
	// ReconfigPropose: propose Change (Host.ProposeConfChange).
	ReconfigPropose
	// ReconfigTransfer: hand leadership to To (Host.TransferLeadership); the new leader
	// starts a Reconfig of its own.
	ReconfigTransfer
	// ReconfigDone: the voters are the target and no learner is left.
	ReconfigDone
)

func (k ReconfigKind) String() string {
	return [...]string{"wait", "propose", "transfer", "done"}[k]
}

// ReconfigPhase is where a move stands.
type ReconfigPhase int

const (
	// PhaseAddingLearners: target members are being added as learners.
	PhaseAddingLearners ReconfigPhase = iota
	// PhaseCatchingUp: waiting for the target learners to reach their catch-up marks.
	PhaseCatchingUp
	// PhaseJoint: entering, or in, the joint configuration (a cancel is still possible).
	PhaseJoint
	// PhaseLeaving: leaving the joint configuration. The driver records this before it
	// proposes the step: from then on a cancel is refused.
	PhaseLeaving
	// PhaseRemovingLearners: removing the members not in the target.
	PhaseRemovingLearners
	// PhaseDone: the configuration is the target.
	PhaseDone
)

func (p ReconfigPhase) String() string {
	return [...]string{"adding-learners", "catching-up", "joint", "leaving", "removing-learners", "done"}[p]
}

// Reconfig drives one group from its configuration to Target, one change at a time. The
// partition leader keeps one per group it moves; a new leader starts a new one.
type Reconfig struct {
	// Target is the voter set to reach (order matters only for leadership: Target[0] is
	// preferred when leadership must move).
	Target []uint64
	// marks are the commit index the leader had when this Reconfig first saw each target
	// learner: a learner is caught up once its Match reaches its mark, so a commit index
	// that keeps moving under load cannot starve it.
	marks map[uint64]uint64
}

// ReconfigStep is one step of a Reconfig.
type ReconfigStep struct {
	Kind  ReconfigKind
	Phase ReconfigPhase
	// Change (Kind == ReconfigPropose) is the configuration change to propose.
	Change *pb.ConfChangeV2
	// To (Kind == ReconfigTransfer) is a caught-up voter of Target.
	To uint64
	// Waiting (Kind == ReconfigWait) says why, for status.
	Waiting string
	// Lag is, per learner, the leader's commit index minus the learner's Match.
	Lag map[uint64]uint64
}

// Next plans the next step from st, the Status of the group's replica on the caller's
// host. It is idempotent: calling it again before the step's effect is applied returns the
// same step (or a Wait while the change is pending).
func (r *Reconfig) Next(st Status) ReconfigStep {
	if why := checkTarget(r.Target); why != "" {
		return ReconfigStep{Kind: ReconfigWait, Waiting: why}
	}
	if st.State != etcdraft.StateLeader {
		return ReconfigStep{Kind: ReconfigWait, Waiting: "not the leader"}
	}
	lag := r.lags(st)
	wait := func(ph ReconfigPhase, why string) ReconfigStep {
		return ReconfigStep{Kind: ReconfigWait, Phase: ph, Waiting: why, Lag: lag}
	}
	target := idSet(r.Target)
	voters := idSet(st.Voters)
	learners := idSet(append(slices.Clone(st.Learners), st.LearnersNext...))
	if len(st.VotersOutgoing) > 0 {
		ph := PhaseLeaving
		if !sameSet(voters, target) {
			// The target changed during the joint configuration (a cancel): the only way
			// out is forward, to the incoming half, whose members are all caught up;
			// planning starts again from there, the old voters being learners then.
			ph = PhaseJoint
		}
		if st.PendingConf {
			return wait(ph, "configuration change pending")
		}
		if !voters[st.ID] {
			return r.transfer(st, st.Voters, PhaseJoint, lag)
		}
		return ReconfigStep{Kind: ReconfigPropose, Phase: ph, Change: &pb.ConfChangeV2{}, Lag: lag}
	}
	if st.PendingConf {
		return wait(r.phaseOf(voters, learners, target), "configuration change pending")
	}
	for _, id := range r.Target {
		if !voters[id] && !learners[id] {
			return propose(PhaseAddingLearners, lag, &pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{
				{Type: pb.ConfChangeType_ConfChangeAddLearnerNode.Enum(), NodeId: new(id)}}})
		}
	}
	if !sameSet(voters, target) {
		var behind []string
		for _, id := range r.Target {
			if voters[id] {
				continue
			}
			if m, mark := st.Progress[id].Match, r.marks[id]; m < mark {
				behind = append(behind, fmt.Sprintf("learner %d at %d of %d", id, m, mark))
			}
		}
		if len(behind) > 0 {
			return wait(PhaseCatchingUp, strings.Join(behind, ", "))
		}
		cc := &pb.ConfChangeV2{Transition: pb.ConfChangeTransition_ConfChangeTransitionJointExplicit.Enum()}
		for _, id := range r.Target {
			if !voters[id] {
				cc.Changes = append(cc.Changes, &pb.ConfChangeSingle{Type: pb.ConfChangeType_ConfChangeAddNode.Enum(), NodeId: new(id)})
			}
		}
		for _, id := range st.Voters {
			if !target[id] {
				// Demoted, not removed: the old voters keep their data as learners, so a
				// cancel in the joint configuration can go back to them.
				cc.Changes = append(cc.Changes, &pb.ConfChangeSingle{Type: pb.ConfChangeType_ConfChangeAddLearnerNode.Enum(), NodeId: new(id)})
			}
		}
		return propose(PhaseJoint, lag, cc)
	}
	for _, id := range sortedIDs(toStructSet(learners)) {
		if !target[id] {
			return propose(PhaseRemovingLearners, lag, &pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{
				{Type: pb.ConfChangeType_ConfChangeRemoveNode.Enum(), NodeId: new(id)}}})
		}
	}
	return ReconfigStep{Kind: ReconfigDone, Phase: PhaseDone}
}

// lags records the catch-up mark of every target learner seen for the first time and
// returns each learner's lag behind the commit index.
func (r *Reconfig) lags(st Status) map[uint64]uint64 {
	var lag map[uint64]uint64
	for _, id := range st.Learners {
		if r.marks == nil {
			r.marks = map[uint64]uint64{}
		}
		if _, ok := r.marks[id]; !ok && slices.Contains(r.Target, id) {
			r.marks[id] = st.Committed
		}
		if lag == nil {
			lag = map[uint64]uint64{}
		}
		m := st.Progress[id].Match
		lag[id] = st.Committed - min(m, st.Committed)
	}
	return lag
}

// transfer hands leadership to a caught-up member of to, preferring Target's order.
func (r *Reconfig) transfer(st Status, to []uint64, ph ReconfigPhase, lag map[uint64]uint64) ReconfigStep {
	cands := slices.Clone(r.Target)
	cands = append(cands, to...)
	for _, id := range cands {
		if id == st.ID || !slices.Contains(to, id) {
			continue
		}
		if st.Progress[id].Match >= st.Committed {
			return ReconfigStep{Kind: ReconfigTransfer, Phase: ph, To: id, Lag: lag}
		}
	}
	return ReconfigStep{Kind: ReconfigWait, Phase: ph, Lag: lag,
		Waiting: fmt.Sprintf("no member of %v caught up to take leadership", to)}
}

// phaseOf names the phase a pending change belongs to.
func (r *Reconfig) phaseOf(voters, learners, target map[uint64]bool) ReconfigPhase {
	if sameSet(voters, target) {
		return PhaseRemovingLearners
	}
	for _, id := range r.Target {
		if !voters[id] && !learners[id] {
			return PhaseAddingLearners
		}
	}
	return PhaseCatchingUp
}

// checkTarget says what is wrong with a target (the controller refuses such a move; the
// planner never acts on one).
func checkTarget(target []uint64) string {
	if len(target) == 0 {
		return "empty target"
	}
	seen := map[uint64]bool{}
	for _, id := range target {
		if id == 0 {
			return "invalid target: replica id 0"
		}
		if seen[id] {
			return fmt.Sprintf("invalid target: replica %d twice", id)
		}
		seen[id] = true
	}
	return ""
}

func propose(ph ReconfigPhase, lag map[uint64]uint64, cc *pb.ConfChangeV2) ReconfigStep {
	return ReconfigStep{Kind: ReconfigPropose, Phase: ph, Change: cc, Lag: lag}
}

func idSet(ids []uint64) map[uint64]bool {
	m := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func toStructSet(m map[uint64]bool) map[uint64]struct{} {
	s := make(map[uint64]struct{}, len(m))
	for id := range m {
		s[id] = struct{}{}
	}
	return s
}

func sameSet(a, b map[uint64]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for id := range a {
		if !b[id] {
			return false
		}
	}
	return true
}
