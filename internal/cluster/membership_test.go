package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/controller"
)

func TestRemoveMemberLeavesTheControllerQuorum(t *testing.T) {
	c := formCluster(t, 3)
	lead := c.leader()
	var gone, stays *node
	for _, n := range c.nodes {
		if n != lead {
			if gone == nil {
				gone = n
			} else {
				stays = n
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := stays.service().RemoveMember(ctx, gone.id); !errors.Is(err, ErrNoController) {
		t.Fatalf("a follower removed a member: %v", err)
	}
	if err := lead.service().RemoveMember(ctx, lead.id); !errors.Is(err, ErrRemoveSelf) {
		t.Fatalf("the leader removed itself: %v", err)
	}
	if err := lead.service().RemoveMember(ctx, gone.id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "every remaining replica to apply the removal", func() bool {
		return !lead.service().IsMember(gone.id) && !stays.service().IsMember(gone.id)
	})
	if v := lead.service().ControllerStatus().Voters; len(v) != 2 {
		t.Fatalf("voters after the removal: %v", v)
	}
	// A second removal is a no-op; the two voters left commit without the removed broker.
	if err := lead.service().RemoveMember(ctx, gone.id); err != nil {
		t.Fatal(err)
	}
	gone.kill()
	createTopic(t, stays.service(), "after", 1, 2)
	_ = propose(t, stays.service(), controller.AllocateProducerIDBlock{Broker: stays.id, Size: 1})
}
