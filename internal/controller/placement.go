package controller

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// BrokerInfo is what placement needs to know of a broker.
type BrokerInfo struct {
	ID   int32
	Rack string
}

// PlacementError is a placement request that cannot be met, with the Kafka error to answer.
type PlacementError struct {
	Code *kerr.Error
	Msg  string
}

func (e *PlacementError) Error() string { return e.Code.Message + ": " + e.Msg }

func placementErr(code *kerr.Error, format string, args ...any) error {
	return &PlacementError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// rackKey names a rack. A broker without a rack is a rack of its own (solo), so that a
// cluster where no broker declares a rack spreads replicas across brokers exactly as one
// where every broker has a distinct rack, and a rackless broker never shares a "rack" with
// another rackless broker it may well not share power or network with.
type rackKey struct {
	name string
	solo bool
	id   int32
}

func keyOf(b BrokerInfo) rackKey {
	if b.Rack == "" {
		return rackKey{solo: true, id: b.ID}
	}
	return rackKey{name: b.Rack}
}

type placeBroker struct {
	id   int32
	rack int // index of its rack in the rack order
	load int
}

// Place assigns replicas for partitions new partitions of replication factor rf over
// brokers (normally the live brokers). load is the replicas each broker already holds
// (State.ReplicaLoad; missing means 0). seed rotates where the assignment starts: pass 0 to
// favour the least-loaded brokers, or a per-topic number when load says little. Each
// returned replica list starts with the preferred leader. The result is a function of the
// inputs only (the order of brokers does not matter).
//
// Let R be the number of racks (a broker without a rack is a rack of its own). Always:
//   - every partition's replicas are rf distinct brokers from the list;
//   - every partition's replicas span min(rf, R) racks;
//   - the preferred leaders of the new partitions differ in count by at most one between
//     any two brokers.
//
// When every rack holds the same number of brokers (including: no broker has a rack, or
// all share one), also: the replicas of the new partitions differ in count by at most one
// between any two brokers. Brokers are then laid out rack by rack in turn (least loaded
// first within each rack) and replica slots are dealt round robin from position seed, so
// existing load only decides who receives the remainder: with seed 0, the least loaded.
//
// When racks differ in size, per-broker balance cannot hold in general (with racks {a} and
// {b, c, d} and rf=2, the lone broker of rack a holds every partition). Placement is then
// greedy: each partition's leader is a broker with the fewest new leaders, the remaining
// replicas first cover new racks and then fill, each time with the broker holding the
// fewest new replicas of this call, then the least existing load. That is best effort, not
// a bound.
//
// Errors are *PlacementError: INVALID_PARTITIONS for partitions < 1, INVALID_REPLICATION_FACTOR
// for rf < 1 or rf above the number of brokers, INVALID_REQUEST for a broker listed twice.
func Place(brokers []BrokerInfo, load map[int32]int, partitions, rf int, seed int) ([][]int32, error) {
	if partitions < 1 {
		return nil, placementErr(kerr.InvalidPartitions, "partition count must be at least 1, got %d", partitions)
	}
	if rf < 1 {
		return nil, placementErr(kerr.InvalidReplicationFactor, "replication factor must be at least 1, got %d", rf)
	}
	if rf > len(brokers) {
		return nil, placementErr(kerr.InvalidReplicationFactor, "replication factor %d is larger than the %d available brokers", rf, len(brokers))
	}
	seen := make(map[int32]bool, len(brokers))
	for _, b := range brokers {
		if seen[b.ID] {
			return nil, placementErr(kerr.InvalidRequest, "broker %d listed twice", b.ID)
		}
		seen[b.ID] = true
	}

	// Group brokers by rack, least loaded first within a rack.
	byRack := map[rackKey][]placeBroker{}
	for _, b := range brokers {
		k := keyOf(b)
		byRack[k] = append(byRack[k], placeBroker{id: b.ID, load: load[b.ID]})
	}
	keys := make([]rackKey, 0, len(byRack))
	for k, bs := range byRack {
		slices.SortFunc(bs, func(x, y placeBroker) int {
			return cmp.Or(cmp.Compare(x.load, y.load), cmp.Compare(x.id, y.id))
		})
		keys = append(keys, k)
	}
	// Racks in order: largest first, then the one whose least-loaded broker is least
	// loaded, then by name (named racks before solo brokers, solo brokers by id).
	slices.SortFunc(keys, func(x, y rackKey) int {
		bx, by := byRack[x], byRack[y]
		return cmp.Or(
			-cmp.Compare(len(bx), len(by)),
			cmp.Compare(bx[0].load, by[0].load),
			boolCmp(x.solo, y.solo),
			cmp.Compare(x.name, y.name),
			cmp.Compare(x.id, y.id),
		)
	})
	// Interleave: the first broker of each rack, then the second of each, and so on.
	var order []placeBroker
	balanced := true
	for i := 0; ; i++ {
		added := false
		for r, k := range keys {
			if bs := byRack[k]; i < len(bs) {
				b := bs[i]
				b.rack = r
				order = append(order, b)
				added = true
			}
		}
		if !added {
			break
		}
	}
	for _, k := range keys {
		if len(byRack[k]) != len(byRack[keys[0]]) {
			balanced = false
		}
	}
	n := len(order)
	start := ((seed % n) + n) % n
	if balanced {
		return placeBalanced(order, start, partitions, rf), nil
	}
	return placeGreedy(order, len(keys), start, partitions, rf), nil
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// placeBalanced deals replica slots round robin over order, whose position i lies in rack
// i mod R (every rack has the same size). Partition p owns slots [p*rf, p*rf+rf), so any
// partition spans min(rf, R) racks and replica counts differ by at most one. Its leader is
// slot p*rf + off with off = (p / (n/g)) mod g, g = gcd(rf, n): within a run of n/g
// partitions the leaders p*rf mod n are the distinct multiples of g, and each run moves to
// the next residue mod g, so every n partitions lead on every broker exactly once.
func placeBalanced(order []placeBroker, start, partitions, rf int) [][]int32 {
	n := len(order)
	g := gcd(rf, n)
	period := n / g
	out := make([][]int32, partitions)
	for p := range out {
		base := p * rf
		off := (p / period) % g
		reps := make([]int32, 0, rf)
		for j := range rf {
			slot := base + (off+j)%rf
			reps = append(reps, order[(start+slot)%n].id)
		}
		out[p] = reps
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// placeGreedy places partition by partition: the leader is the broker with the fewest new
// leaders, then fewest new replicas, then least load, then position after start; the other
// replicas first take new racks, each time the broker with the fewest new replicas, then
// least load, then position.
func placeGreedy(order []placeBroker, racks, start, partitions, rf int) [][]int32 {
	n := len(order)
	leaders := make([]int, n)
	replicas := make([]int, n)
	rot := func(i int) int { return (i - start + n) % n }
	need := min(rf, racks)
	out := make([][]int32, partitions)
	chosen := make([]bool, n)
	usedRack := make([]bool, racks)
	for p := range out {
		clear(chosen)
		clear(usedRack)
		best := 0
		for i := 1; i < n; i++ {
			if cmp.Or(cmp.Compare(leaders[i], leaders[best]), cmp.Compare(replicas[i], replicas[best]),
				cmp.Compare(order[i].load, order[best].load), cmp.Compare(rot(i), rot(best))) < 0 {
				best = i
			}
		}
		pick := func(i int) {
			chosen[i] = true
			usedRack[order[i].rack] = true
			replicas[i]++
			out[p] = append(out[p], order[i].id)
		}
		leaders[best]++
		pick(best)
		covered := 1
		for len(out[p]) < rf {
			newRack := covered < need
			best = -1
			for i := range n {
				if chosen[i] || (newRack && usedRack[order[i].rack]) {
					continue
				}
				if best < 0 || cmp.Or(cmp.Compare(replicas[i], replicas[best]),
					cmp.Compare(order[i].load, order[best].load), cmp.Compare(rot(i), rot(best))) < 0 {
					best = i
				}
			}
			if newRack {
				covered++
			}
			pick(best)
		}
	}
	return out
}
