package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/rpc"
)

// Force recovery of partitions that lost a majority of their replicas for good
// (controller/recover.go has the semantics). Any broker plans it: it asks every surviving
// replica's broker how much of the group's log it holds (msgReplicaStateRequest), picks as
// the base the survivor whose log raft would call the most up to date (last term, then
// last index), and estimates what the recovery loses: what the survivors know to have
// been committed beyond the base's log end. The operator confirms (the CLI asks), and the
// plan's partitions are proposed to the controller one by one. The base's broker then
// rewrites its replica (reincarnate, below) and the other survivors drop theirs and join
// the new group as learners.
//
// Wire (versioned, big endian):
//
//	request  = version u8 | corr u64 | group u64
//	response = version u8 | corr u64 | found u8 | last index u64 | last term u64 | term u64 |
//	           log end i64 | flushed i64 | committed i64

const (
	msgReplicaStateRequest  = rpc.MsgReplicaStateRequest
	msgReplicaStateResponse = rpc.MsgReplicaStateResponse
	replicaStateVersion     = 1
	replicaStateWait        = 3 * time.Second
)

var errBadReplicaState = errors.New("malformed replica state message")

// ReplicaState is how much of a partition group's log one broker holds.
type ReplicaState struct {
	Broker    int32
	Reachable bool // the broker answered
	Found     bool // it holds a replica of the group
	// LastIndex and LastTerm are its log's last entry; Term its current raft term.
	LastIndex, LastTerm, Term uint64
	// LogEnd, Flushed and Committed are Kafka offsets: its log end, what it has fsynced,
	// and the commit it knows (its leader's, as last heard).
	LogEnd, Flushed, Committed int64
}

// moreUpToDate is raft's comparison of two logs: the later last term wins, then the longer.
func (s ReplicaState) moreUpToDate(o ReplicaState) bool {
	if s.LastTerm != o.LastTerm {
		return s.LastTerm > o.LastTerm
	}
	return s.LastIndex > o.LastIndex
}

type stateQueries struct {
	corr    atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]chan ReplicaState
}

func encodeReplicaStateRequest(corr, group uint64) []byte {
	buf := []byte{replicaStateVersion}
	buf = binary.BigEndian.AppendUint64(buf, corr)
	return binary.BigEndian.AppendUint64(buf, group)
}

func decodeReplicaStateRequest(b []byte) (corr, group uint64, err error) {
	if len(b) != 17 || b[0] != replicaStateVersion {
		return 0, 0, errBadReplicaState
	}
	return binary.BigEndian.Uint64(b[1:]), binary.BigEndian.Uint64(b[9:]), nil
}

func encodeReplicaStateResponse(corr uint64, s ReplicaState) []byte {
	buf := make([]byte, 0, 66)
	buf = append(buf, replicaStateVersion)
	buf = binary.BigEndian.AppendUint64(buf, corr)
	found := byte(0)
	if s.Found {
		found = 1
	}
	buf = append(buf, found)
	for _, v := range []uint64{s.LastIndex, s.LastTerm, s.Term, uint64(s.LogEnd), uint64(s.Flushed), uint64(s.Committed)} {
		buf = binary.BigEndian.AppendUint64(buf, v)
	}
	return buf
}

func decodeReplicaStateResponse(b []byte) (uint64, ReplicaState, error) {
	var s ReplicaState
	if len(b) != 58 || b[0] != replicaStateVersion || b[9] > 1 {
		return 0, s, errBadReplicaState
	}
	corr := binary.BigEndian.Uint64(b[1:])
	s.Found = b[9] == 1
	v := func(i int) uint64 { return binary.BigEndian.Uint64(b[10+8*i:]) }
	s.LastIndex, s.LastTerm, s.Term = v(0), v(1), v(2)
	s.LogEnd, s.Flushed, s.Committed = int64(v(3)), int64(v(4)), int64(v(5))
	if s.LogEnd < 0 || s.Flushed < 0 || s.Committed < 0 {
		return 0, ReplicaState{}, errBadReplicaState
	}
	return corr, s, nil
}

// localReplicaState is this broker's answer for group.
func (b *Broker) localReplicaState(group uint64) ReplicaState {
	s := ReplicaState{Broker: b.cfg.NodeID, Reachable: true}
	r := b.replicaOfGroup(group)
	if r == nil {
		return s
	}
	s.Found = true
	s.LastIndex, s.LastTerm = r.p.LogPosition()
	bd := r.p.Boundaries()
	s.LogEnd, s.Flushed, s.Committed = bd.LogEnd, bd.Flushed, bd.Committed
	if st, err := b.host.Status(group); err == nil {
		s.Term = st.Term
	}
	return s
}

func (b *Broker) handleReplicaStateRequest(from int32, _ uint8, payload []byte) {
	corr, group, err := decodeReplicaStateRequest(payload)
	if err != nil {
		b.lg.Warn("dropping a malformed replica state request", "from", from, "err", err)
		return
	}
	_ = b.transport.Send(from, msgReplicaStateResponse, encodeReplicaStateResponse(corr, b.localReplicaState(group)))
}

func (b *Broker) handleReplicaStateResponse(from int32, _ uint8, payload []byte) {
	corr, s, err := decodeReplicaStateResponse(payload)
	if err != nil {
		b.lg.Warn("dropping a malformed replica state response", "from", from, "err", err)
		return
	}
	s.Broker, s.Reachable = from, true
	q := &b.stateQueries
	q.mu.Lock()
	ch := q.pending[corr]
	delete(q.pending, corr)
	q.mu.Unlock()
	if ch != nil {
		ch <- s // buffered: one answer per request
	}
}

// ReplicaStates asks each broker (this one directly) how much of group's log it holds. A
// broker that does not answer within replicaStateWait is listed as not reachable.
func (b *Broker) ReplicaStates(ctx context.Context, group uint64, brokers []int32) []ReplicaState {
	ctx, cancel := context.WithTimeout(ctx, replicaStateWait)
	defer cancel()
	out := make([]ReplicaState, len(brokers))
	q := &b.stateQueries
	chans := make([]chan ReplicaState, len(brokers))
	for i, id := range brokers {
		out[i] = ReplicaState{Broker: id}
		if id == b.cfg.NodeID {
			out[i] = b.localReplicaState(group)
			continue
		}
		corr := q.corr.Add(1)
		ch := make(chan ReplicaState, 1)
		q.mu.Lock()
		if q.pending == nil {
			q.pending = map[uint64]chan ReplicaState{}
		}
		q.pending[corr] = ch
		q.mu.Unlock()
		defer func() {
			q.mu.Lock()
			delete(q.pending, corr)
			q.mu.Unlock()
		}()
		if b.transport.Send(id, msgReplicaStateRequest, encodeReplicaStateRequest(corr, group)) == nil {
			chans[i] = ch
		}
	}
	for i, ch := range chans {
		if ch == nil {
			continue
		}
		select {
		case s := <-ch:
			out[i] = s
		case <-ctx.Done():
		}
	}
	return out
}

// RecoveryPlan is what force-recovering one partition would do.
type RecoveryPlan struct {
	controller.LostMajority
	// States has one entry per survivor.
	States []ReplicaState
	// Base is the survivor to rebuild from (-1: none can be).
	Base int32
	// LastKnownCommit is the highest committed offset any survivor knows of; the dead
	// leader may have committed (and acknowledged) up to a heartbeat more, unknown to all.
	LastKnownCommit int64
	// MayLose is how many offsets below LastKnownCommit the base does not hold: committed,
	// so perhaps acknowledged, and lost by the recovery.
	MayLose int64
	// Problem, if set, is why the partition cannot be force-recovered now.
	Problem string
}

// PlanForceRecovery plans the recovery of every partition that loses its majority once
// the brokers in dead are gone for good.
func (b *Broker) PlanForceRecovery(ctx context.Context, dead []int32) ([]RecoveryPlan, *Error) {
	st := b.state()
	for i, id := range dead {
		if _, ok := st.Broker(id); !ok {
			return nil, errorf(kerr.InvalidRequest, "broker %d is not registered", id)
		}
		if slices.Contains(dead[:i], id) {
			return nil, errorf(kerr.InvalidRequest, "broker %d is named twice", id)
		}
	}
	if len(dead) == 0 {
		return nil, errorf(kerr.InvalidRequest, "name the dead brokers")
	}
	var plans []RecoveryPlan
	for _, lm := range st.MajorityLost(dead) {
		pl := RecoveryPlan{LostMajority: lm, Base: -1, States: b.ReplicaStates(ctx, lm.Group, lm.Survivors)}
		for _, s := range pl.States {
			if !s.Reachable || !s.Found {
				continue
			}
			pl.LastKnownCommit = max(pl.LastKnownCommit, s.Committed)
			if pl.Base < 0 || s.moreUpToDate(pl.state(pl.Base)) {
				pl.Base = s.Broker
			}
		}
		switch {
		case len(lm.Survivors) == 0:
			pl.Problem = "no replica survives: the partition's data is gone"
		case pl.Base < 0:
			pl.Problem = "no surviving replica answered with its data"
		default:
			pl.MayLose = max(0, pl.LastKnownCommit-pl.state(pl.Base).LogEnd)
			if code, msg := st.CheckForceRecover(pl.command()); code != nil {
				pl.Problem = msg
			}
		}
		plans = append(plans, pl)
	}
	return plans, nil
}

func (pl RecoveryPlan) state(id int32) ReplicaState {
	for _, s := range pl.States {
		if s.Broker == id {
			return s
		}
	}
	return ReplicaState{Broker: id}
}

func (pl RecoveryPlan) command() controller.ForceRecoverPartition {
	return controller.ForceRecoverPartition{Topic: pl.Topic, Partition: pl.Partition, Dead: pl.Dead, Base: pl.Base}
}

// ForceRecover records the recovery of one planned partition. The plan must be fresh: the
// controller refuses it if the partition's replicas or the brokers' liveness changed.
func (b *Broker) ForceRecover(pl RecoveryPlan) *Error {
	if pl.Problem != "" {
		return errorf(kerr.InvalidRequest, "partition %s-%d: %s", pl.Topic, pl.Partition, pl.Problem)
	}
	b.lg.Warn("force-recovering a partition that lost its majority", "topic", pl.Topic, "partition", pl.Partition,
		"dead", pl.Dead, "base", pl.Base, "survivors", pl.Survivors, "may_lose_offsets", pl.MayLose)
	_, err := b.propose(pl.command())
	return err
}
