package broker

import (
	"reflect"
	"testing"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/raft"
)

func TestMoveProgressRoundTrip(t *testing.T) {
	in := []moveReport{
		{group: 7, progress: MoveProgress{Phase: "catching_up", Waiting: "learner 4 at 120 of 5000", BytesMoved: 10, BytesLeft: 1 << 40}},
		{group: 1 << 40, progress: MoveProgress{Phase: "joint"}},
	}
	out, err := decodeMoveProgress(encodeMoveProgress(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: got %+v, want %+v", out, in)
	}
	for _, bad := range [][]byte{nil, {2, 0}, {1}, {1, 1}, {1, 0, 0}, {1, 1, 7, 200}} {
		if _, err := decodeMoveProgress(bad); err == nil {
			t.Errorf("decoded % x", bad)
		}
	}
}

func FuzzDecodeMoveProgress(f *testing.F) {
	f.Add(encodeMoveProgress([]moveReport{{group: 3, progress: MoveProgress{Phase: "joint", BytesLeft: 5}}}))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		list, err := decodeMoveProgress(b)
		if err != nil {
			return
		}
		again, err := decodeMoveProgress(encodeMoveProgress(list))
		if err != nil || !reflect.DeepEqual(list, again) {
			t.Fatalf("re-encoding %+v: %v %+v", list, err, again)
		}
	})
}

// TestMovePhaseSaysJointUntilFinal: the planner's step out of the joint configuration is
// reported as "joint" while a cancel would still be accepted, and as "leaving" only once
// the controller holds Final (or the move was cancelled and goes back without a record).
func TestMovePhaseSaysJointUntilFinal(t *testing.T) {
	mv := func(final, cancelled bool) controller.PartitionReassignment {
		return controller.PartitionReassignment{Reassignment: controller.Reassignment{Final: final, Cancelled: cancelled}}
	}
	for _, c := range []struct {
		ph               raft.ReconfigPhase
		final, cancelled bool
		want             string
	}{
		{raft.PhaseCatchingUp, false, false, "catching_up"},
		{raft.PhaseJoint, false, false, "joint"},
		{raft.PhaseLeaving, false, false, "joint"},
		{raft.PhaseLeaving, true, false, "leaving"},
		{raft.PhaseLeaving, false, true, "leaving"},
		{raft.PhaseRemovingLearners, true, false, "removing_learners"},
		{raft.PhaseAddingLearners, false, false, "adding_learners"},
	} {
		if got := movePhase(c.ph, mv(c.final, c.cancelled)); got != c.want {
			t.Errorf("movePhase(%v, final=%v cancelled=%v) = %q, want %q", c.ph, c.final, c.cancelled, got, c.want)
		}
	}
}
