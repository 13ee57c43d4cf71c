package broker

import (
	"bytes"
	"errors"
	"io/fs"
	"os"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/raft"
)

// A test gate, not a feature: `cairn start --test-hold-moves=PATH` (a hidden flag) lets an
// end-to-end test stop a move at a point the driver normally passes within one round, so
// that it can act there and observe the outcome. The joint configuration is left within
// 100 ms of being entered, too short a window to cancel in by timing. What the file at PATH
// says holds every move this broker drives, for as long as it says it:
//
//	joint  in the joint configuration, before the leader records MarkReassignmentFinal:
//	       a cancel is still accepted (and a cancelled move is not held)
//	final  after MarkReassignmentFinal, before proposing to leave the joint
//	       configuration: a cancel is refused
//
// No file, an empty one or any other content holds nothing. The file is read on every
// round of a move at the point it could hold, so a test changes it (atomically, by rename)
// and the drivers follow. Without the flag none of this runs.

// Where a move may be held.
const (
	moveHoldInJoint    = "joint"
	moveHoldAfterFinal = "final"
)

// moveHold returns the hold the gate file names now, "" for none.
func (b *Broker) moveHold() string {
	if b.cfg.TestHoldMoves == "" {
		return ""
	}
	raw, err := os.ReadFile(b.cfg.TestHoldMoves)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			b.lg.Warn("test gate: reading the move hold file", "path", b.cfg.TestHoldMoves, "err", err)
		}
		return ""
	}
	switch h := string(bytes.TrimSpace(raw)); h {
	case moveHoldInJoint, moveHoldAfterFinal, "":
		return h
	default:
		b.lg.Warn("test gate: the move hold file names no hold point (joint or final); holding nothing",
			"path", b.cfg.TestHoldMoves, "content", h)
		return ""
	}
}

// heldMove reports whether the gate holds move m at step, noting why in its progress.
func (b *Broker) heldMove(m controller.PartitionReassignment, run *moveRun, step raft.ReconfigStep) bool {
	if b.cfg.TestHoldMoves == "" || step.Kind != raft.ReconfigPropose || step.Phase != raft.PhaseLeaving || m.Cancelled {
		return false
	}
	hold := b.moveHold()
	if (hold != moveHoldInJoint || m.Final) && (hold != moveHoldAfterFinal || !m.Final) {
		return false
	}
	why := "held in the joint configuration by the test gate --test-hold-moves=" + hold
	b.moves.mu.Lock()
	run.progress.Waiting = why
	b.moves.mu.Unlock()
	if !run.held {
		run.held = true
		b.lg.Warn("partition move: "+why, "topic", m.Topic, "partition", m.Partition, "final", m.Final)
	}
	return true
}
