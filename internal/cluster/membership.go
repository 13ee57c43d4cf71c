package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// ErrRemoveSelf refuses removing the controller leader from group 0 by itself: it must hand
// its leadership to another voter first, so that no configuration change is left to a
// leader on its way out.
var ErrRemoveSelf = errors.New("cluster: the controller leader cannot remove itself from the controller group; transfer its leadership first")

// IsMember reports whether broker id is a voter or a learner of group 0 as applied on this
// replica.
func (s *Service) IsMember(id int32) bool { return s.isMember(uint64(id)) }

// RemoveMember removes broker id from group 0 (a voter or a learner), so that it no longer
// receives the controller log nor counts for its quorum, and returns once this replica has
// applied the change. It must run on the controller leader (ErrNoController otherwise),
// never for the leader itself (ErrRemoveSelf). Removing a non-member does nothing. Raft
// takes one configuration change at a time: a dropped proposal is retried until ctx ends.
func (s *Service) RemoveMember(ctx context.Context, id int32) error {
	if s.Leader() != s.opts.NodeID {
		return ErrNoController
	}
	if id == s.opts.NodeID {
		return ErrRemoveSelf
	}
	for s.isMember(uint64(id)) {
		cc := &pb.ConfChange{Type: pb.ConfChangeRemoveNode.Enum(), NodeId: new(uint64(id))}
		if err := s.host.ProposeConfChange(ControllerGroup, cc); err != nil {
			return fmt.Errorf("cluster: removing broker %d from the controller group: %w", id, err)
		}
		deadline := time.Now().Add(s.opts.RequestTimeout)
		for s.isMember(uint64(id)) && time.Now().Before(deadline) {
			if err := s.sleep(ctx, 10*time.Millisecond); err != nil {
				return err
			}
		}
		if s.Leader() != s.opts.NodeID {
			return ErrNoController
		}
	}
	s.log.Info("removed a broker from the controller group", "broker", id)
	return nil
}

// Members returns group 0's voters and learners as applied on this replica.
func (s *Service) Members() (voters, learners []int32) {
	_, cs, err := s.ls.InitialState()
	if err != nil {
		return nil, nil
	}
	for _, v := range cs.GetVoters() {
		voters = append(voters, int32(v))
	}
	for _, l := range cs.GetLearners() {
		learners = append(learners, int32(l))
	}
	return voters, learners
}

// Promote makes learner id a voter of group 0 and returns once this replica has applied
// it, so that removing a voter for a decommission need not shrink the controller's quorum.
// It must run on the controller leader (ErrNoController otherwise); promoting a voter does
// nothing, and a broker that is not a member is refused.
func (s *Service) Promote(ctx context.Context, id int32) error {
	if s.Leader() != s.opts.NodeID {
		return ErrNoController
	}
	isVoter := func() bool {
		voters, _ := s.Members()
		return slices.Contains(voters, id)
	}
	for !isVoter() {
		if !s.isMember(uint64(id)) {
			return fmt.Errorf("cluster: broker %d is not a member of the controller group", id)
		}
		cc := &pb.ConfChange{Type: pb.ConfChangeAddNode.Enum(), NodeId: new(uint64(id))}
		if err := s.host.ProposeConfChange(ControllerGroup, cc); err != nil {
			return fmt.Errorf("cluster: promoting broker %d to a controller voter: %w", id, err)
		}
		deadline := time.Now().Add(s.opts.RequestTimeout)
		for !isVoter() && time.Now().Before(deadline) {
			if err := s.sleep(ctx, 10*time.Millisecond); err != nil {
				return err
			}
		}
		if s.Leader() != s.opts.NodeID {
			return ErrNoController
		}
	}
	s.log.Info("promoted a broker to a controller voter", "broker", id)
	return nil
}
