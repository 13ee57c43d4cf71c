package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/storage"
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

func TestPromoteKeepsTheQuorumWhenAVoterLeaves(t *testing.T) {
	c := formCluster(t, 3)
	n4 := newNode(t, 4, "127.0.0.1:0", storage.NewMemFS())
	c.nodes = append(c.nodes, n4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n4.start(ctx, c.seeds); err != nil {
		t.Fatal(err)
	}
	lead := c.leader()
	if _, learners := lead.service().Members(); !slices.Contains(learners, 4) {
		t.Fatalf("the joiner is not a learner: %v", learners)
	}
	if err := lead.service().Promote(ctx, 9); err == nil {
		t.Fatal("promoted a broker that is not a member")
	}
	if err := lead.service().Promote(ctx, 4); err != nil {
		t.Fatal(err)
	}
	var gone *node
	for _, n := range c.nodes[:3] {
		if n != lead {
			gone = n
			break
		}
	}
	if err := lead.service().RemoveMember(ctx, gone.id); err != nil {
		t.Fatal(err)
	}
	voters, learners := lead.service().Members()
	slices.Sort(voters)
	if len(voters) != 3 || !slices.Contains(voters, 4) || slices.Contains(voters, gone.id) || len(learners) != 0 {
		t.Fatalf("voters %v learners %v", voters, learners)
	}
	// The promoted joiner counts: with the removed broker and the third founder down, the
	// leader and broker 4 are a majority and still commit.
	gone.kill()
	for _, n := range c.nodes[:3] {
		if n != lead && n != gone {
			n.kill()
		}
	}
	_ = propose(t, n4.service(), controller.AllocateProducerIDBlock{Broker: 4, Size: 1})
}
