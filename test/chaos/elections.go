package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/cairn-io/cairn/test/chaos/faults"
)

// The calm session. With --faults none the session injects nothing: it waits until every
// partition is led by its preferred replica, runs the load (unthrottled unless --rate says
// otherwise), and reports how many partitions changed leader meanwhile (a leader epoch that
// rose). Any such change is an election that load alone caused, a follower that gave up
// on a leader busy with the load, and fails the session: fast failover must not buy
// spurious elections (issue 18).

// leaderState is one partition's leader and leader epoch as metadata shows them.
type leaderState struct {
	leader, epoch, preferred int32
}

// leaderStates reads every partition's leader, epoch and preferred replica (the first of
// its assignment) from one broker's metadata.
func leaderStates(ctx context.Context, cl *faults.Cluster, sec *security, partitions int) (map[int32]leaderState, error) {
	c, err := sec.client(cl, adminUser)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	md, err := kadm.NewClient(c).Metadata(mctx, topic)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("metadata of %s: %v", topic, td.Err)
	}
	out := map[int32]leaderState{}
	for p, pd := range td.Partitions {
		if pd.Err != nil || pd.Leader < 0 || len(pd.Replicas) == 0 {
			return nil, fmt.Errorf("partition %d has no leader yet (%v)", p, pd.Err)
		}
		out[p] = leaderState{leader: pd.Leader, epoch: pd.LeaderEpoch, preferred: pd.Replicas[0]}
	}
	if len(out) != partitions {
		return nil, fmt.Errorf("metadata lists %d of %d partitions", len(out), partitions)
	}
	return out, nil
}

// settledLeaders waits until every partition is led by its preferred replica, where the
// leader balancer leaves it, so that the count that follows sees no transfer the balancer
// was still to make, and returns that state.
func settledLeaders(ctx context.Context, cl *faults.Cluster, sec *security, partitions int, within time.Duration) (map[int32]leaderState, error) {
	deadline := time.Now().Add(within)
	for {
		states, err := leaderStates(ctx, cl, sec, partitions)
		if err == nil && unsettled(states) == nil {
			return states, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("partitions %v are not led by their preferred replica", unsettled(states))
			}
			return nil, fmt.Errorf("leaders did not settle within %v: %w", within, err)
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

func unsettled(states map[int32]leaderState) []int32 {
	var out []int32
	for p, s := range states {
		if s.leader != s.preferred {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// leaderChanges lists the partitions whose leader epoch rose between two readings.
func leaderChanges(before, after map[int32]leaderState) []string {
	var ps []int32
	for p := range after {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	var out []string
	for _, p := range ps {
		b, a := before[p], after[p]
		if a.epoch != b.epoch {
			out = append(out, fmt.Sprintf("partition %d: epoch %d → %d, leader %d → %d", p, b.epoch, a.epoch, b.leader, a.leader))
		}
	}
	return out
}

// electionReport prints the changes and turns any into the session's error.
func electionReport(changes []string, partitions int) error {
	fmt.Printf("chaos: elections: %d of %d partitions changed leader during the load\n", len(changes), partitions)
	for _, c := range changes {
		fmt.Println("  leader change:", c)
	}
	if len(changes) > 0 {
		return fmt.Errorf("%d partitions changed leader with no fault injected: %s", len(changes), strings.Join(changes, "; "))
	}
	return nil
}
