package controller

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"
)

type layout struct {
	brokers    []BrokerInfo
	load       map[int32]int
	partitions int
	rf         int
	seed       int
}

// genBrokers draws brokers with distinct ids; balanced layouts give every rack the same
// number of brokers (or no broker a rack).
func genLayout(t *rapid.T, balanced bool) layout {
	var racks []string
	switch {
	case balanced && rapid.Bool().Draw(t, "rackless"):
		n := rapid.IntRange(1, 12).Draw(t, "brokers")
		racks = make([]string, n) // every broker its own rack
	case balanced:
		r := rapid.IntRange(1, 5).Draw(t, "racks")
		k := rapid.IntRange(1, 4).Draw(t, "per rack")
		for i := range r * k {
			racks = append(racks, fmt.Sprintf("rack-%d", i%r))
		}
	default:
		n := rapid.IntRange(1, 12).Draw(t, "brokers")
		for i := range n {
			racks = append(racks, rapid.SampledFrom([]string{"", "a", "b", "c", "d"}).Draw(t, fmt.Sprintf("rack %d", i)))
		}
	}
	ids := rapid.SliceOfNDistinct(rapid.Int32Range(0, 1000), len(racks), len(racks), rapid.ID[int32]).Draw(t, "ids")
	l := layout{load: map[int32]int{}}
	for i, id := range ids {
		l.brokers = append(l.brokers, BrokerInfo{ID: id, Rack: racks[i]})
		if rapid.Bool().Draw(t, "has load") {
			l.load[id] = rapid.IntRange(0, 50).Draw(t, "load")
		}
	}
	l.rf = rapid.IntRange(1, len(ids)).Draw(t, "rf")
	l.partitions = rapid.IntRange(1, 60).Draw(t, "partitions")
	l.seed = rapid.IntRange(-100, 100).Draw(t, "seed")
	return l
}

func countRacks(brokers []BrokerInfo, replicas []int32) int {
	seen := map[rackKey]bool{}
	for _, b := range brokers {
		if slices.Contains(replicas, b.ID) {
			seen[keyOf(b)] = true
		}
	}
	return len(seen)
}

func spread(brokers []BrokerInfo, count map[int32]int) int {
	lo, hi := int(^uint(0)>>1), 0
	for _, b := range brokers {
		lo, hi = min(lo, count[b.ID]), max(hi, count[b.ID])
	}
	return hi - lo
}

// checkPlacement checks what Place guarantees for every layout and returns the replica
// counts per broker.
func checkPlacement(t *rapid.T, l layout) map[int32]int {
	got, err := Place(l.brokers, l.load, l.partitions, l.rf, l.seed)
	if err != nil {
		t.Fatal(err)
	}
	racks := map[rackKey]bool{}
	known := map[int32]bool{}
	for _, b := range l.brokers {
		racks[keyOf(b)] = true
		known[b.ID] = true
	}
	want := min(l.rf, len(racks))
	if len(got) != l.partitions {
		t.Fatalf("%d partitions, want %d", len(got), l.partitions)
	}
	replicas, leaders := map[int32]int{}, map[int32]int{}
	for p, r := range got {
		if len(r) != l.rf {
			t.Fatalf("partition %d: %v has not %d replicas", p, r, l.rf)
		}
		for i, b := range r {
			if !known[b] {
				t.Fatalf("partition %d: unknown broker %d", p, b)
			}
			if slices.Contains(r[:i], b) {
				t.Fatalf("partition %d: %v repeats broker %d", p, r, b)
			}
			replicas[b]++
		}
		leaders[r[0]]++
		if n := countRacks(l.brokers, r); n != want {
			t.Fatalf("partition %d: %v spans %d racks, want %d", p, r, n, want)
		}
	}
	if d := spread(l.brokers, leaders); d > 1 {
		t.Fatalf("leader counts %v differ by %d", leaders, d)
	}
	// Deterministic, and blind to the order of the broker list.
	shuffled := slices.Clone(l.brokers)
	slices.Reverse(shuffled)
	again, _ := Place(shuffled, l.load, l.partitions, l.rf, l.seed)
	if !slices.EqualFunc(got, again, slices.Equal) {
		t.Fatalf("placement depends on broker order:\n%v\n%v", got, again)
	}
	return replicas
}

func TestPlaceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkPlacement(t, genLayout(t, false))
	})
}

func TestPlaceBalancedRacksBalanceReplicas(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t, true)
		replicas := checkPlacement(t, l)
		if d := spread(l.brokers, replicas); d > 1 {
			t.Fatalf("replica counts %v differ by %d", replicas, d)
		}
	})
}

func TestPlaceExamples(t *testing.T) {
	six := []BrokerInfo{{1, "a"}, {2, "a"}, {3, "b"}, {4, "b"}, {5, "c"}, {6, "c"}}
	got, err := Place(six, nil, 6, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Racks in turn (a, b, c), slots dealt round robin, leaders rotating over all six.
	eq(t, got, [][]int32{{1, 3, 5}, {2, 4, 6}, {3, 5, 1}, {4, 6, 2}, {5, 1, 3}, {6, 2, 4}})

	// Existing load: the least loaded broker of each rack comes first.
	got, _ = Place(six, map[int32]int{1: 10, 3: 10, 5: 10}, 1, 3, 0)
	eq(t, got, [][]int32{{2, 4, 6}})

	// The seed rotates the start.
	got, _ = Place(six, nil, 1, 2, 1)
	eq(t, got, [][]int32{{3, 5}})

	// rf=2 over 4 brokers: gcd 2 means leaders shift to the odd positions after 2 partitions.
	four := []BrokerInfo{{1, ""}, {2, ""}, {3, ""}, {4, ""}}
	got, _ = Place(four, nil, 4, 2, 0)
	eq(t, got, [][]int32{{1, 2}, {3, 4}, {2, 1}, {4, 3}})

	// Unbalanced racks: the lone broker of rack x is in every partition.
	uneven := []BrokerInfo{{1, "x"}, {2, "y"}, {3, "y"}, {4, "y"}}
	got, _ = Place(uneven, nil, 4, 2, 0)
	for _, r := range got {
		if !slices.Contains(r, 1) {
			t.Fatalf("%v misses rack x", got)
		}
	}
}

func TestPlaceErrors(t *testing.T) {
	three := []BrokerInfo{{1, "a"}, {2, "b"}, {3, "c"}}
	cases := []struct {
		brokers       []BrokerInfo
		partitions, r int
		want          *kerr.Error
	}{
		{three, 1, 4, kerr.InvalidReplicationFactor},
		{three, 1, 0, kerr.InvalidReplicationFactor},
		{nil, 1, 1, kerr.InvalidReplicationFactor},
		{three, 0, 1, kerr.InvalidPartitions},
		{[]BrokerInfo{{1, "a"}, {1, "b"}}, 1, 1, kerr.InvalidRequest},
	}
	for _, tc := range cases {
		_, err := Place(tc.brokers, nil, tc.partitions, tc.r, 0)
		var pe *PlacementError
		if !errors.As(err, &pe) || pe.Code != tc.want {
			t.Errorf("Place(%v, %d, %d): got %v, want %v", tc.brokers, tc.partitions, tc.r, err, tc.want)
		}
	}
}

// TestPlaceFeedsCreateTopic runs the intended flow: the proposer places over the live
// brokers with the state's load, apply accepts the result, and the cluster stays balanced
// across topics.
func TestPlaceFeedsCreateTopic(t *testing.T) {
	h := newHarness(t)
	h.brokers(6, "a", "b", "c")
	for i := range 5 {
		var bs []BrokerInfo
		for _, b := range h.s.LiveBrokers() {
			bs = append(bs, BrokerInfo{ID: b.ID, Rack: b.Rack})
		}
		// Seed 0: the remainder of each topic goes to the least-loaded brokers.
		a, err := Place(bs, h.s.ReplicaLoad(), 5, 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		h.ok(CreateTopic{Name: fmt.Sprintf("t%d", i), ID: tid(byte(i + 1)), Partitions: 5, RF: 3, Assignment: a})
	}
	load := h.s.ReplicaLoad()
	lo, hi := 1<<30, 0
	for _, n := range load {
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi-lo > 1 {
		t.Fatalf("cluster load %v differs by %d", load, hi-lo)
	}
}
