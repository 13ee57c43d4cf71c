package cluster

import (
	"context"
	"errors"
	"fmt"
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
