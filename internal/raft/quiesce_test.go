package raft

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	etcdraft "go.etcd.io/raft/v3"
)

// quiesced reports whether g's leader has quiesced it and every reachable follower is
// quiet (listed by the leader's host recently).
func (c *hostCluster) quiesced(g uint64) bool {
	l := c.leader(g)
	if l == 0 {
		return false
	}
	for _, id := range c.ids {
		gr, err := c.hosts[id].group(g)
		if err != nil {
			c.t.Fatal(err)
		}
		if id == l {
			if !gr.quiet.Load() {
				return false
			}
			continue
		}
		if c.net.isolated[id] {
			continue
		}
		if gr.quietFrom.Load() != l {
			return false
		}
	}
	return true
}

func (c *hostCluster) waitQuiesced(timeout time.Duration) {
	c.t.Helper()
	waitFor(c.t, timeout, "every group quiesced", func() bool {
		for _, g := range c.groups {
			if !c.quiesced(g) {
				return false
			}
		}
		return true
	})
}

// Idle replicated groups quiesce, and then cost next to nothing: 3 hosts, 2,000 groups
// (CAIRN_IDLE_GROUPS overrides), default 100ms tick; the figure is per host. The groups
// share their visible index, as under write caching: flushed and idle, they report none.
func TestHostQuiescedIdleCost(t *testing.T) {
	checkLeaks(t)
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("CAIRN_IDLE_GROUPS")); err == nil && v > 0 {
		n = v
	}
	if testing.Short() || raceEnabled {
		n = min(n, 300)
	}
	c := newHostClusterTick(t, 3, n, 100*time.Millisecond)
	c.shareVisible.Store(true)
	for _, g := range c.groups {
		if err := c.hosts[1+g%3].Campaign(g); err != nil {
			t.Fatal(err)
		}
	}
	c.waitLeaders(60 * time.Second)
	c.waitQuiesced(30 * time.Second)
	frac := measureIdle(t, c.hosts[1], 2*time.Second) / 3
	t.Logf("%d quiesced replicated groups per host: %.2f%% of one core per host (%.1f µs per replica per second)", n, frac*100, frac*1e6/float64(n))
	for _, g := range c.groups {
		if !c.quiesced(g) {
			t.Fatalf("group %d woke while idle", g)
		}
	}
	if !raceEnabled && frac > 0.10 {
		t.Fatalf("idle cost %.1f%% of a core per host for %d quiesced groups", frac*100, n)
	}
}

// A proposal to a quiesced group commits promptly (it wakes the group; no tick needed),
// and the group quiesces again afterwards.
func TestHostQuiescedProposalCommits(t *testing.T) {
	checkLeaks(t)
	c := newHostClusterTick(t, 3, 10, 50*time.Millisecond)
	for _, g := range c.groups {
		if err := c.hosts[1+g%3].Campaign(g); err != nil {
			t.Fatal(err)
		}
	}
	leaders := c.waitLeaders(10 * time.Second)
	c.waitQuiesced(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, g := range c.groups {
		start := time.Now()
		if _, _, err := c.propose(ctx, g, leaders[g], batch(1, int64(g))); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); !raceEnabled && d > 10*c.tick {
			t.Errorf("group %d: proposal to a quiesced group took %v", g, d)
		}
	}
	for _, g := range c.groups {
		c.waitCaughtUp(g, c.ids...)
		c.sameGroupLogs(g, c.ids...)
	}
	c.waitQuiesced(10 * time.Second)
}

// When the host leading quiesced groups is cut off, the followers miss its coalesced
// heartbeats, tick again, and elect new leaders within an election timeout and a margin;
// the old leader wakes (its peers went silent) and steps down; after healing, all logs
// agree and the groups quiesce again.
func TestHostQuiescedLeaderIsolated(t *testing.T) {
	checkLeaks(t)
	c := newHostClusterTick(t, 3, 30, 20*time.Millisecond)
	for _, g := range c.groups {
		if err := c.hosts[1].Campaign(g); err != nil {
			t.Fatal(err)
		}
	}
	c.waitLeaders(10 * time.Second)
	c.waitQuiesced(10 * time.Second)
	c.net.isolate(1, true)
	start := time.Now()
	// raft's randomized election timeout is below 2×ElectionTicks; add the quiet slack,
	// a pre-vote round and scheduling margin.
	bound := time.Duration(2*c.hosts[2].opts.ElectionTicks+quietSlack+10) * c.tick
	if raceEnabled {
		bound *= 3
	}
	leaders := c.waitLeaders(bound)
	t.Logf("new leaders for %d groups after %v (bound %v)", len(c.groups), time.Since(start), bound)
	for _, g := range c.groups {
		if leaders[g] == 1 {
			t.Fatalf("group %d: isolated host leads", g)
		}
	}
	waitFor(t, 10*time.Second, "the isolated host to step down", func() bool {
		for _, g := range c.groups {
			if c.status(1, g).State == etcdraft.StateLeader {
				return false
			}
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, g := range c.groups {
		if _, _, err := c.propose(ctx, g, leaders[g], batch(1, int64(g))); err != nil {
			t.Fatal(err)
		}
	}
	c.net.isolate(1, false)
	for _, g := range c.groups {
		c.waitCaughtUp(g, c.ids...)
		c.sameGroupLogs(g, c.ids...)
	}
	c.waitQuiesced(10 * time.Second)
}

// A follower cut off from its quiesced leader resumes ticking and pre-votes in vain; the
// leader stays quiesced (the hosts it hears are a quorum of every group) and takes writes
// with the remaining majority, quiescing again without the silent follower; once healed
// the follower, behind, learns its leader from the listing, catches up, and the groups
// quiesce again.
func TestHostQuiescedFollowerPartitionHeals(t *testing.T) {
	checkLeaks(t)
	c := newHostClusterTick(t, 3, 20, 20*time.Millisecond)
	for _, g := range c.groups {
		if err := c.hosts[1].Campaign(g); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range c.groups {
		c.waitLeads(g, 1)
	}
	c.waitQuiesced(10 * time.Second)
	c.net.isolate(3, true)
	waitFor(t, 10*time.Second, "host 1 to find host 3 silent", func() bool { return !c.hosts[1].PeerLive(3) })
	for _, g := range c.groups {
		if gr, _ := c.hosts[1].group(g); !gr.quiet.Load() {
			t.Fatalf("group %d woke when one follower's host went silent", g)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, g := range c.groups {
		if _, _, err := c.hosts[1].Propose(ctx, g, batch(2, int64(g))); err != nil {
			t.Fatal(err)
		}
	}
	c.waitQuiesced(10 * time.Second) // host 3 silent: the groups quiesce without it
	c.net.isolate(3, false)
	for _, g := range c.groups {
		c.waitCaughtUp(g, c.ids...)
		c.sameGroupLogs(g, c.ids...)
		if l := c.leader(g); l != 1 {
			t.Logf("group %d: leader %d after healing", g, l)
		}
	}
	c.waitQuiesced(10 * time.Second)
}

// Once every group is quiesced, the only traffic between two hosts is one batch per tick
// (the coalesced heartbeat): no raft message at all, and no visible report though the
// groups share them.
func TestHostQuiescedOneBatchPerPeerPerTick(t *testing.T) {
	checkLeaks(t)
	c := newHostClusterTick(t, 3, 60, 20*time.Millisecond)
	c.shareVisible.Store(true)
	for _, g := range c.groups {
		if err := c.hosts[1+g%3].Campaign(g); err != nil {
			t.Fatal(err)
		}
	}
	c.waitLeaders(10 * time.Second)
	c.waitQuiesced(10 * time.Second)
	counts := func() (b, m, v map[uint64]int, ticks map[uint64]uint64) {
		c.net.mu.Lock()
		defer c.net.mu.Unlock()
		b, m, v, ticks = map[uint64]int{}, map[uint64]int{}, map[uint64]int{}, map[uint64]uint64{}
		for _, id := range c.ids {
			b[id], m[id], v[id], ticks[id] = c.net.batches[id], c.net.msgs[id], c.net.visible[id], c.hosts[id].ticks.Load()
		}
		return
	}
	b0, m0, v0, t0 := counts()
	waitFor(t, 10*time.Second, "20 ticks", func() bool { return c.hosts[1].ticks.Load() >= t0[1]+20 })
	b1, m1, v1, t1 := counts()
	for _, id := range c.ids {
		if m1[id] != m0[id] || v1[id] != v0[id] {
			t.Errorf("host %d sent %d raft messages and %d visible reports while quiesced", id, m1[id]-m0[id], v1[id]-v0[id])
		}
		ticks := int(t1[id] - t0[id])
		peers := len(c.ids) - 1
		if got := b1[id] - b0[id]; got < peers*(ticks-1) || got > peers*(ticks+1) {
			t.Errorf("host %d sent %d batches in %d ticks to %d peers", id, got, ticks, peers)
		}
	}
	for _, g := range c.groups {
		if !c.quiesced(g) {
			t.Fatalf("group %d woke while idle", g)
		}
	}
}
