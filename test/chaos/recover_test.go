package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-io/cairn/test/chaos/history"
)

func TestRecoverConfigRefusesWhatCanLose(t *testing.T) {
	ok := config{mode: history.Strict, brokers: 5, minInsyncRacks: 3, faults: map[string]bool{"recover": true, "kill": true}}
	if err := recoverConfigError(ok); err != nil {
		t.Fatalf("strict, 5 brokers, min.insync.racks 3: %v", err)
	}
	withRacks := ok
	withRacks.racks = []string{"a", "b", "c", "d", "e"}
	if err := recoverConfigError(withRacks); err != nil {
		t.Fatalf("a rack per broker: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*config)
		want string
	}{
		{"write caching", func(c *config) { c.mode = history.WriteCaching }, "--mode strict"},
		{"acks1", func(c *config) { c.mode = history.Acks1 }, "--mode strict"},
		{"three brokers", func(c *config) { c.brokers = 3 }, "--brokers 5 or more"},
		{"four brokers", func(c *config) { c.brokers = 4 }, "--brokers 5 or more"},
		{"two brokers", func(c *config) { c.brokers = 2 }, "replication factor of 3"},
		{"no rack rule", func(c *config) { c.minInsyncRacks = 0 }, "--min-insync-racks 3"},
		{"two racks asked", func(c *config) { c.minInsyncRacks = 2 }, "--min-insync-racks 3"},
		{"a shared rack", func(c *config) { c.racks = []string{"a", "a", "b", "c", "d"} }, "rack of its own"},
		{"with moves", func(c *config) { c.faults = map[string]bool{"recover": true, "move": true} }, "leave move out"},
	} {
		c := ok
		tc.edit(&c)
		err := recoverConfigError(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	without := ok
	without.faults = map[string]bool{"kill": true}
	without.brokers = 3
	if err := recoverConfigError(without); err != nil {
		t.Errorf("a session without recover: %v", err)
	}
}

func TestDrawVictimsTakesAMajority(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[int32]bool{}
	for range 200 {
		replicas := []int32{4, 1, 5}
		victims, survivors := drawVictims(rng, replicas)
		if len(victims) != 2 || len(survivors) != 1 || !slices.IsSorted(victims) {
			t.Fatalf("drawVictims(%v) = %v, %v: want two victims, sorted, and one survivor", replicas, victims, survivors)
		}
		all := append(slices.Clone(victims), survivors...)
		if !sameSet(all, replicas) {
			t.Fatalf("drawVictims(%v) = %v, %v: not a split of the replicas", replicas, victims, survivors)
		}
		if !lostMajority(replicas, victims) || lostMajority(replicas, survivors) {
			t.Fatalf("lostMajority disagrees with drawVictims(%v) = %v, %v", replicas, victims, survivors)
		}
		seen[survivors[0]] = true
	}
	if len(seen) != 3 {
		t.Errorf("survivors drawn: %v, want every replica now and then", seen)
	}
	if lostMajority([]int32{1, 2, 3, 4}, []int32{1, 2}) {
		t.Error("two of four replicas is no majority")
	}
}

func TestDrawRestoreSpreadsOverRacks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	racks := []string{"r1", "r2", "r3", "r4", "r5"}
	for range 200 {
		got := drawRestore(rng, 4, 3, 5, racks)
		if len(got) != 3 || got[0] != 4 || rackCount(got, racks) != 3 {
			t.Fatalf("drawRestore(base 4) = %v: want three brokers in three racks, the base first", got)
		}
	}
	// Fewer racks than replicas: distinct brokers all the same, as many racks as there are.
	shared := []string{"a", "a", "b", "b", "b"}
	for range 200 {
		got := drawRestore(rng, 1, 3, 5, shared)
		if len(got) != 3 || got[0] != 1 || len(slices.Compact(slices.Sorted(slices.Values(got)))) != 3 || rackCount(got, shared) != 2 {
			t.Fatalf("drawRestore on two racks = %v", got)
		}
	}
}

// fakeRecoveryAdmin answers majority_lost and force_recover_from_nodes as a cluster would
// whose controller sees the dead down only from the second plan on, and which records a
// recovery at once.
type fakeRecoveryAdmin struct {
	mu        sync.Mutex
	plans     int
	recovered map[int32]bool
	posts     [][]recoverPartition
}

func (f *fakeRecoveryAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/partitions/majority_lost":
		if r.URL.Query().Get("dead_nodes") != "2,3" {
			http.Error(w, `{"message":"wrong dead_nodes"}`, http.StatusBadRequest)
			return
		}
		f.plans++
		plan := []lostPlan{}
		for _, p := range []int32{0, 2} {
			if f.recovered[p] {
				continue
			}
			pl := lostPlan{Topic: topic, Partition: p, Replicas: []int32{1, 2, 3}, Base: 1, MayLose: int64(p)}
			if f.plans == 1 {
				pl.Problem = "broker 2 is alive; a live replica is not lost"
			}
			plan = append(plan, pl)
		}
		json.NewEncoder(w).Encode(plan)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/partitions/force_recover_from_nodes":
		var body struct {
			DeadNodes  []int32            `json:"dead_nodes"`
			Partitions []recoverPartition `json:"partitions"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !slices.Equal(body.DeadNodes, []int32{2, 3}) {
			http.Error(w, `{"message":"bad body"}`, http.StatusBadRequest)
			return
		}
		f.posts = append(f.posts, body.Partitions)
		var out []recoverResult
		for _, p := range body.Partitions {
			res := recoverResult{Topic: p.Topic, Partition: p.Partition, Base: p.Base, MayLose: int64(p.Partition)}
			// The first POST finds partition 2's plan changed; the next one takes it.
			if p.Partition == 2 && len(f.posts) == 1 {
				res.Error = "the plan changed"
			} else {
				f.recovered[p.Partition] = true
			}
			out = append(out, res)
		}
		json.NewEncoder(w).Encode(out)
	default:
		http.NotFound(w, r)
	}
}

func TestRecoverAllPlansUntilNothingIsLeft(t *testing.T) {
	fake := &fakeRecoveryAdmin{recovered: map[int32]bool{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := &recoverer{hc: srv.Client()}
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done, err := r.recoverAll(ctx, func() string { return addr }, []int32{2, 3})
	if err != nil {
		t.Fatalf("recoverAll: %v", err)
	}
	var got []int32
	for _, d := range done {
		got = append(got, d.p)
		if d.base != 1 || !slices.Equal(d.replicas, []int32{1, 2, 3}) {
			t.Errorf("recovered %+v, want base 1 and the replicas before", d)
		}
	}
	if !slices.Equal(got, []int32{0, 2}) {
		t.Errorf("recovered partitions %v, want [0 2]", got)
	}
	if r.stats.Recoveries != 2 || r.stats.MayLose != 2 {
		t.Errorf("stats %+v, want 2 recoveries losing 0+2", r.stats)
	}
	// No POST while the plan had a problem; the refused partition was asked for again.
	if len(fake.posts) != 2 || len(fake.posts[0]) != 2 || len(fake.posts[1]) != 1 || fake.posts[1][0].Partition != 2 {
		t.Errorf("posts %+v, want both partitions, then partition 2 again", fake.posts)
	}
}

func TestRecoverAllFailsWhenThePlanNeverClears(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("%s %s while the plan has a problem", r.Method, r.URL.Path)
		}
		json.NewEncoder(w).Encode([]lostPlan{{Topic: topic, Partition: 1, Base: 1, Problem: "broker 3 is alive"}})
	}))
	defer srv.Close()
	r := &recoverer{hc: srv.Client()}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done, err := r.recoverAll(ctx, func() string { return strings.TrimPrefix(srv.URL, "http://") }, []int32{2, 3})
	if err == nil || len(done) != 0 || !strings.Contains(err.Error(), "broker 3 is alive") {
		t.Fatalf("recoverAll = %v, %v: want no recovery and the plan's problem", done, err)
	}
}
