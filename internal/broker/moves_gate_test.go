package broker

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/raft"
)

// TestMoveHoldGate: the gate holds only the step out of the joint configuration, only at
// the point its file names, never a cancelled move, and nothing without its flag.
func TestMoveHoldGate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hold")
	b := &Broker{cfg: Config{TestHoldMoves: path}, lg: slog.New(slog.NewTextHandler(io.Discard, nil)), moves: newMover()}
	leave := raft.ReconfigStep{Kind: raft.ReconfigPropose, Phase: raft.PhaseLeaving}
	enter := raft.ReconfigStep{Kind: raft.ReconfigPropose, Phase: raft.PhaseJoint}
	mv := func(final, cancelled bool) controller.PartitionReassignment {
		return controller.PartitionReassignment{Reassignment: controller.Reassignment{Final: final, Cancelled: cancelled}}
	}
	set := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		file             string // "-": no file
		step             raft.ReconfigStep
		final, cancelled bool
		held             bool
	}{
		{"-", leave, false, false, false},
		{"joint\n", leave, false, false, true},
		{"joint", leave, true, false, false},
		{"joint", leave, false, true, false},
		{"joint", enter, false, false, false},
		{"final", leave, false, false, false},
		{"final", leave, true, false, true},
		{"", leave, false, false, false},
		{"jo", leave, false, false, false},
	} {
		os.Remove(path)
		if c.file != "-" {
			set(c.file)
		}
		run := &moveRun{}
		if got := b.heldMove(mv(c.final, c.cancelled), run, c.step); got != c.held {
			t.Errorf("file %q, step %v, final=%v cancelled=%v: held %v, want %v", c.file, c.step.Phase, c.final, c.cancelled, got, c.held)
		}
		if c.held && run.progress.Waiting == "" {
			t.Errorf("file %q: held without saying why", c.file)
		}
	}
	set("joint")
	b.cfg.TestHoldMoves = ""
	if b.heldMove(mv(false, false), &moveRun{}, leave) {
		t.Error("held without the flag")
	}
}
