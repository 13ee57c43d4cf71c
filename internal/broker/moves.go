package broker

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/raft"
)

// Partition moves (DESIGN.md §8). The controller records a move first
// (BeginReassignment); from then on the partition's leader, wherever it is, drives the
// group's configuration towards the move's goal one raft change at a time with a
// raft.Reconfig: learners added, caught up, the joint configuration, leadership off a
// leaving leader, leave joint, learners removed. It records in the controller that it is
// about to leave the joint configuration (MarkReassignmentFinal: cancel is refused from
// then on) and, once the final configuration is applied, that the move is complete
// (CompleteReassignment), which is what tells removed replicas they are out: reconcile
// deletes their data only then.
//
// Every decision is planned again from the applied configuration, the controller record
// and the leader's view of its peers, after every change and on a timer, so a proposal
// raft dropped, a leader that died mid-step or a controller that changed leader is
// simply planned again: nothing of a move lives only in this loop's memory.

// moveRetry spaces repeated proposals of the same step: raft drops a second
// configuration change proposed while one is pending, and a transfer takes an election
// round trip.
const moveRetry = 500 * time.Millisecond

// moveTick is how often the driver plans again while a move runs here.
const moveTick = 100 * time.Millisecond

// MoveProgress is what the leader driving a move knows of it.
type MoveProgress struct {
	Phase string // the planner's phase (adding_learners, catching_up, joint, leaving, removing_learners, done)
	// Waiting says why the move waits, when it does.
	Waiting string
	// BytesMoved and BytesLeft estimate the catch-up of the learners: the leader's log size
	// split by the slowest learner's position in it.
	BytesMoved, BytesLeft int64
	Updated               time.Time
	// From is the broker that drives the move and reported it.
	From int32
}

// moveRun is the driver's state for one group this broker leads and moves.
type moveRun struct {
	rc       *raft.Reconfig
	term     uint64
	goal     []int32
	lastKind raft.ReconfigKind
	lastAt   time.Time
	lastWhat string
	progress MoveProgress
	held     bool // the test gate held it (moves_gate.go), logged once
}

// mover is the move driver of one broker.
type mover struct {
	mu     sync.Mutex
	runs   map[uint64]*moveRun // by group
	kick   chan struct{}
	remote remoteMoves // what the brokers driving other moves report
}

func newMover() *mover { return &mover{runs: map[uint64]*moveRun{}, kick: make(chan struct{}, 1)} }

// kickMoves wakes the move driver.
func (b *Broker) kickMoves() {
	select {
	case b.moves.kick <- struct{}{}:
	default:
	}
}

// moveLoop plans every move this broker leads on each controller change, each role
// change and every moveTick while one runs here.
func (b *Broker) moveLoop() {
	tick := time.NewTicker(moveTick)
	defer tick.Stop()
	var reported time.Time
	for {
		ch := b.svc.Load().Changed()
		select {
		case <-b.ctx.Done():
			return
		case <-ch:
		case <-b.moves.kick:
		case <-tick.C:
		}
		b.driveMoves()
		if time.Since(reported) >= moveProgressEvery {
			b.sendMoveProgress()
			reported = time.Now()
		}
	}
}

// driveMoves takes one step of every move whose partition this broker leads.
func (b *Broker) driveMoves() {
	moves := b.state().Reassignments()
	active := map[uint64]bool{}
	for _, m := range moves {
		t, ok := b.topic(m.Topic)
		if !ok {
			continue
		}
		b.mu.RLock()
		r := b.replicas[replicaKey{t.ID, m.Partition}]
		b.mu.RUnlock()
		if r == nil || !r.p.IsLeader() {
			continue
		}
		active[r.group] = true
		b.driveMove(r, m)
	}
	b.moves.mu.Lock()
	for g := range b.moves.runs {
		if !active[g] {
			delete(b.moves.runs, g)
		}
	}
	b.moves.mu.Unlock()
}

// driveMove plans and takes the next step of one move.
func (b *Broker) driveMove(r *replica, m controller.PartitionReassignment) {
	st, err := b.host.Status(r.group)
	if err != nil || st.Leader != uint64(b.cfg.NodeID) {
		return
	}
	goal := m.Goal()
	b.moves.mu.Lock()
	run := b.moves.runs[r.group]
	if run == nil || run.term != st.Term || !slices.Equal(run.goal, goal) {
		// A new leader (or a new goal: a cancel) plans afresh: its catch-up marks are its own.
		run = &moveRun{rc: &raft.Reconfig{Target: raftIDs(goal)}, term: st.Term, goal: slices.Clone(goal)}
		b.moves.runs[r.group] = run
	}
	b.moves.mu.Unlock()
	if ok, err := b.host.JoinableLog(r.group); err == nil && !ok {
		b.refuseUnjoinable(r, m, run)
		return
	}
	step := run.rc.Next(st)
	b.noteProgress(r, run, step, st, m)
	if b.heldMove(m, run, step) {
		return
	}
	what := describeStep(step)
	if what == run.lastWhat && time.Since(run.lastAt) < moveRetry {
		return // that step was taken a moment ago: give raft time to apply it
	}
	switch step.Kind {
	case raft.ReconfigWait:
		return
	case raft.ReconfigPropose:
		if step.Phase == raft.PhaseLeaving && !m.Cancelled && !m.Final {
			// Recorded first: from this entry on, the controller refuses a cancel, so the
			// partition cannot be asked to go back once it has left the joint configuration.
			if _, perr := b.propose(controller.MarkReassignmentFinal{Topic: m.Topic, Partition: m.Partition, Goal: goal}); perr != nil {
				b.lg.Info("partition move: not leaving the joint configuration yet", "topic", m.Topic, "partition", m.Partition, "reason", perr.Msg)
			}
			return // the next round sees the record (or the cancel that beat it)
		}
		if err := b.host.ProposeConfChange(r.group, step.Change); err != nil {
			b.lg.Debug("partition move: proposing a configuration change", "topic", m.Topic, "partition", m.Partition, "err", err)
		} else {
			b.lg.Info("partition move", "topic", m.Topic, "partition", m.Partition, "phase", step.Phase.String(), "change", what)
		}
	case raft.ReconfigTransfer:
		b.lg.Info("partition move: moving leadership to a replica that stays", "topic", m.Topic, "partition", m.Partition, "to", step.To)
		_ = b.host.TransferLeadership(r.group, step.To)
	case raft.ReconfigDone:
		if _, perr := b.propose(controller.CompleteReassignment{Topic: m.Topic, Partition: m.Partition, Replicas: goal}); perr != nil {
			b.lg.Warn("partition move: recording its completion", "topic", m.Topic, "partition", m.Partition, "err", perr.Msg)
		} else {
			b.lg.Info("partition move complete", "topic", m.Topic, "partition", m.Partition, "replicas", goal, "cancelled", m.Cancelled)
		}
	}
	run.lastWhat, run.lastAt, run.lastKind = what, time.Now(), step.Kind
}

// describeStep names a step, to tell a repeat of the same step from a new one.
func describeStep(s raft.ReconfigStep) string {
	return fmt.Sprintf("%v %v to=%d %v", s.Kind, s.Phase, s.To, s.Change)
}

// refuseUnjoinable cancels a move of a group whose log cannot be joined: a group created
// by a release that kept its initial configuration outside the log, whose log still
// starts at its first entry. A replica added to it could not learn its configuration.
func (b *Broker) refuseUnjoinable(r *replica, m controller.PartitionReassignment, run *moveRun) {
	run.progress.Waiting = "this partition was created by an earlier release and its log still starts at its first entry: " +
		"a new replica could not learn its configuration; the move is cancelled"
	if m.Cancelled || m.Final {
		return
	}
	if time.Since(run.lastAt) < moveRetry {
		return
	}
	run.lastAt = time.Now()
	b.lg.Error("partition move refused", "topic", m.Topic, "partition", m.Partition, "reason", run.progress.Waiting)
	_, _ = b.propose(controller.CancelReassignment{Topic: m.Topic, Partition: m.Partition})
}

// noteProgress records the step for MoveProgress.
func (b *Broker) noteProgress(r *replica, run *moveRun, step raft.ReconfigStep, st raft.Status, m controller.PartitionReassignment) {
	pr := MoveProgress{Phase: movePhase(step.Phase, m), Waiting: step.Waiting, Updated: time.Now()}
	size := r.p.SizeBytes()
	var worst uint64
	for _, lag := range step.Lag {
		worst = max(worst, lag)
	}
	if span := st.LogEnd; span > 0 && len(step.Lag) > 0 {
		left := int64(float64(size) * float64(min(worst, span)) / float64(span))
		pr.BytesLeft, pr.BytesMoved = left, size-left
	} else if step.Phase != raft.PhaseAddingLearners {
		pr.BytesMoved = size
	}
	b.moves.mu.Lock()
	run.progress = pr
	b.moves.mu.Unlock()
}

// movePhase names the phase a move reports. The planner plans the step out of the joint
// configuration as "leaving" as soon as the group is in it, but until the controller holds
// MarkReassignmentFinal the move is still cancellable, which is what "joint" tells an
// operator (docs/operations.md): "leaving" is reported only once a cancel is refused, or
// for a cancelled move on its way back, which records nothing before it leaves.
func movePhase(ph raft.ReconfigPhase, m controller.PartitionReassignment) string {
	if ph == raft.PhaseLeaving && !m.Final && !m.Cancelled {
		ph = raft.PhaseJoint
	}
	return strings.ReplaceAll(ph.String(), "-", "_")
}

// moveProgress returns what this broker knows of the move of group g, if it drives it.
func (b *Broker) moveProgress(g uint64) (MoveProgress, bool) {
	b.moves.mu.Lock()
	defer b.moves.mu.Unlock()
	run := b.moves.runs[g]
	if run == nil {
		return MoveProgress{}, false
	}
	return run.progress, true
}
