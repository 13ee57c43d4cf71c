package raft

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/storage"
)

func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// idleHost starts n single-voter groups on one host (default tick 100ms), elects them
// all and waits until they are idle.
func idleHost(t testing.TB, n int) *Host {
	fs := storage.NewMemFS()
	h := NewHost(HostOptions{NodeID: 1})
	for g := 1; g <= n; g++ {
		ls, err := Open(storage.Options{FS: fs, Dir: fmt.Sprintf("g%d", g), SegmentBytes: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AddGroup(uint64(g), GroupConfig{Storage: ls, Bootstrap: &pb.ConfState{Voters: []uint64{1}}}); err != nil {
			t.Fatal(err)
		}
		if err := h.Campaign(uint64(g)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for g := 1; g <= n; g++ {
		for {
			st, err := h.Status(uint64(g))
			if err != nil {
				t.Fatal(err)
			}
			if st.State == etcdraft.StateLeader && st.Applied >= 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("group %d not elected: %+v", g, st)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return h
}

// measureIdle returns the process CPU time per wall second, as a fraction of one core,
// over window, while h ticks its idle groups.
func measureIdle(t testing.TB, h *Host, window time.Duration) float64 {
	ticks0 := h.ticks.Load()
	if path := os.Getenv("CAIRN_IDLE_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	c0, w0 := cpuTime(t), time.Now()
	time.Sleep(window) // a measurement window, not a wait for a condition
	c1, w1 := cpuTime(t), time.Now()
	if h.ticks.Load()-ticks0 < uint64(window/h.opts.TickInterval)/2 {
		t.Fatalf("ticker fell behind: %d ticks in %v", h.ticks.Load()-ticks0, window)
	}
	return float64(c1-c0) / float64(w1.Sub(w0))
}

// TestHostIdleCost measures what ticking idle groups costs: 2,000 single-voter groups
// (CAIRN_IDLE_GROUPS overrides) at the default 100ms tick. It reports the figure and
// fails only on a gross regression (the target is 10,000 groups under 5% of a core).
func TestHostIdleCost(t *testing.T) {
	checkLeaks(t)
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("CAIRN_IDLE_GROUPS")); err == nil && v > 0 {
		n = v
	}
	h := idleHost(t, n)
	defer h.Close()
	frac := measureIdle(t, h, 2*time.Second)
	t.Logf("%d idle groups: %.2f%% of one core (%.1f µs per group per second)", n, frac*100, frac*1e6/float64(n))
	if !raceEnabled && frac > 0.25 {
		t.Fatalf("idle cost %.1f%% of a core for %d groups", frac*100, n)
	}
}

// TestHostIdleCostReplicated measures idle ticking with replication: 3 hosts in this
// process, each holding a replica of 500 groups (CAIRN_IDLE_GROUPS overrides), leaders
// spread, default 100ms tick and 1-tick heartbeats. The groups quiesce a few ticks after
// the election, so the window mostly measures quiesced groups (TestHostQuiescedIdleCost
// waits for quiescence first). The figure is per host.
func TestHostIdleCostReplicated(t *testing.T) {
	checkLeaks(t)
	n := 500
	if v, err := strconv.Atoi(os.Getenv("CAIRN_IDLE_GROUPS")); err == nil && v > 0 {
		n = v
	}
	c := newHostClusterTick(t, 3, n, 100*time.Millisecond)
	for _, g := range c.groups {
		if err := c.hosts[1+g%3].Campaign(g); err != nil {
			t.Fatal(err)
		}
	}
	c.waitLeaders(60 * time.Second)
	frac := measureIdle(t, c.hosts[1], 2*time.Second) / 3
	t.Logf("%d idle replicated groups per host: %.2f%% of one core per host (%.1f µs per replica per second)", n, frac*100, frac*1e6/float64(n))
}
