package broker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/cluster"
	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/controller"
)

// Decommission (DESIGN.md §8): the controller records that a broker drains
// (controller.DecommissionBroker); the driver here, on the controller leader, then starts
// partition moves off it, at most decommissionInFlight at a time, each to a target that
// controller.ReplaceReplica picks (rack-aware, the topic's min.insync.racks met); the
// partitions' leaders drive them as any move. Once no replica is left on it, the driver
// removes it from group 0 (cluster.Service.RemoveMember, after promoting a live learner
// where a voter leaves; when it is itself the controller leader, it hands that leadership
// on first) and records MarkBrokerDecommissioned. All of
// it is derived from the controller state, so a new controller leader resumes it. A dead
// broker is decommissioned the same way: each move keeps a live majority of both the old
// and the new replica set (RF >= 3 with one replica down), and its replica is rebuilt on
// the target from the survivors.

const (
	decommissionTick     = time.Second
	decommissionInFlight = 8 // partitions moving off a draining broker at once
)

// DecommissionStatus is a decommission as GET /v1/brokers/{id}/decommission shows it.
type DecommissionStatus struct {
	Finished           bool                    `json:"finished"`
	ReplicasLeft       int                     `json:"replicas_left"`
	AllocationFailures []string                `json:"allocation_failures"`
	Partitions         []DecommissionPartition `json:"partitions"`
}

// DecommissionPartition is one partition moving off the broker.
type DecommissionPartition struct {
	Topic      string  `json:"topic"`
	Partition  int32   `json:"partition"`
	MovingTo   []int32 `json:"moving_to"`
	BytesMoved int64   `json:"bytes_moved"`
	BytesLeft  int64   `json:"bytes_left"`
}

// decommissionCandidates are the brokers that may take a replica off id: live, active,
// not id.
func (b *Broker) decommissionCandidates(st *controller.State, id int32) []controller.BrokerInfo {
	var out []controller.BrokerInfo
	for _, br := range st.LiveBrokers() {
		if br.ID != id && br.Active() {
			out = append(out, controller.BrokerInfo{ID: br.ID, Rack: br.Rack})
		}
	}
	return out
}

func (b *Broker) planDecommission(st *controller.State, id int32) controller.DecommissionPlan {
	cc := st.ClusterConfig()
	return st.PlanDecommission(id, b.decommissionCandidates(st, id), st.ReplicaLoad(), func(t controller.Topic) int {
		return config.ResolveTopic(t.Configs, cc).MinInsyncRacks
	})
}

// Decommission starts moving every replica off broker id and then out of the controller
// group. Refused, with nothing changed: an unknown broker (BROKER_ID_NOT_REGISTERED), one
// already draining or decommissioned, the last active broker (INVALID_REQUEST), and a
// broker some of whose partitions the other live, active brokers cannot hold with their
// replica count and min.insync.racks (INVALID_REPLICA_ASSIGNMENT, naming them and why).
func (b *Broker) Decommission(id int32) *Error {
	st := b.state()
	if code, msg := st.CheckDecommission(id); code != nil {
		return &Error{Code: code, Msg: msg}
	}
	if plan := b.planDecommission(st, id); len(plan.Blocked) > 0 {
		return errorf(kerr.InvalidReplicaAssignment, "broker %d cannot be decommissioned: %s", id, strings.Join(plan.Blocked, "; "))
	}
	if _, err := b.propose(controller.DecommissionBroker{ID: id}); err != nil {
		return err
	}
	b.lg.Info("decommissioning broker", "broker", id)
	return nil
}

// Recommission stops broker id's decommission: the moves off it that can still be
// cancelled go back, and it takes replicas again. Refused once it is decommissioned, and
// for a broker that is not being decommissioned.
func (b *Broker) Recommission(id int32) *Error {
	if _, err := b.propose(controller.RecommissionBroker{ID: id}); err != nil {
		return err
	}
	b.lg.Info("recommissioned broker", "broker", id)
	return nil
}

// DecommissionStatus reports broker id's decommission. Errors: an unknown broker
// (BROKER_ID_NOT_REGISTERED), one that is not being decommissioned (INVALID_REQUEST).
func (b *Broker) DecommissionStatus(id int32) (DecommissionStatus, *Error) {
	st := b.state()
	br, ok := st.Broker(id)
	if !ok {
		return DecommissionStatus{}, errorf(kerr.BrokerIDNotRegistered, "broker %d is not registered", id)
	}
	if br.Active() {
		return DecommissionStatus{}, errorf(kerr.InvalidRequest, "broker %d is not being decommissioned", id)
	}
	out := DecommissionStatus{Finished: br.Membership == controller.MembershipDecommissioned,
		ReplicasLeft: st.ReplicaLoad()[id], AllocationFailures: []string{}, Partitions: []DecommissionPartition{}}
	if out.Finished {
		return out, nil
	}
	out.AllocationFailures = append(out.AllocationFailures, b.planDecommission(st, id).Blocked...)
	for _, r := range st.Reassignments() {
		if !slices.Contains(r.Removing(), id) {
			continue
		}
		dp := DecommissionPartition{Topic: r.Topic, Partition: r.Partition, MovingTo: r.Adding()}
		if pr, ok := b.MoveProgress(r.Group); ok {
			dp.BytesMoved, dp.BytesLeft = pr.BytesMoved, pr.BytesLeft
		}
		out.Partitions = append(out.Partitions, dp)
	}
	return out, nil
}

// decommissionLoop drives every decommission while this broker leads the controller.
func (b *Broker) decommissionLoop() {
	tick := time.NewTicker(decommissionTick)
	defer tick.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-tick.C:
		}
		if b.ControllerID() != b.cfg.NodeID {
			continue
		}
		for _, br := range b.state().Brokers() {
			if br.Membership == controller.MembershipDraining {
				b.decommissionRound(br.ID)
			}
		}
	}
}

// keepControllerVoters promotes a live, active learner of group 0 (the lowest id) to a
// voter before voter id leaves, so that a decommission does not shrink the controller's
// quorum: replacing founder 3 by a joined broker 5 keeps three voters, not two.
func (b *Broker) keepControllerVoters(ctx context.Context, id int32) error {
	svc := b.svc.Load()
	voters, learners := svc.Members()
	if !slices.Contains(voters, id) {
		return nil
	}
	for _, l := range learners {
		if br, ok := b.state().Broker(l); ok && br.Live && br.Active() && b.host.PeerLive(uint64(l)) {
			return svc.Promote(ctx, l)
		}
	}
	return nil
}

// decommissionRound takes broker id's decommission one step further.
func (b *Broker) decommissionRound(id int32) {
	st := b.state()
	plan := b.planDecommission(st, id)
	for _, m := range plan.Moves[:min(len(plan.Moves), max(0, decommissionInFlight-plan.Moving))] {
		if _, err := b.propose(controller.BeginReassignment{Topic: m.Topic, Partition: m.Partition, Replicas: m.Replicas}); err != nil {
			b.lg.Warn("decommission: could not start a move", "broker", id, "topic", m.Topic, "partition", m.Partition, "err", err.Msg)
			return
		}
		b.lg.Info("decommission: moving a replica off the broker", "broker", id, "topic", m.Topic, "partition", m.Partition, "to", m.Replicas)
	}
	if len(plan.Moves) > 0 || plan.Moving > 0 || len(plan.Blocked) > 0 || st.ReplicaLoad()[id] > 0 {
		return
	}
	svc := b.svc.Load()
	if svc.IsMember(id) {
		if id == b.cfg.NodeID {
			if to := b.controllerTarget(id); to >= 0 {
				_ = b.host.TransferLeadership(0, uint64(to))
			}
			return // the next controller leader removes this broker
		}
		ctx, cancel := context.WithTimeout(b.ctx, metadataTimeout)
		err := b.keepControllerVoters(ctx, id)
		if err == nil {
			err = svc.RemoveMember(ctx, id)
		}
		cancel()
		if err != nil {
			if !errors.Is(err, cluster.ErrNoController) {
				b.lg.Warn("decommission: could not remove the broker from the controller group", "broker", id, "err", err)
			}
			return
		}
	}
	if _, err := b.propose(controller.MarkBrokerDecommissioned{ID: id}); err != nil {
		b.lg.Warn("decommission: could not record the end", "broker", id, "err", err.Msg)
		return
	}
	b.lg.Info("broker decommissioned", "broker", id)
}
