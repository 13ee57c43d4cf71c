package console

import (
	"net/http"
	"slices"

	"github.com/cairn-io/cairn/internal/broker"
)

// The five boundaries of every replica of a topic, as each replica's own broker reports
// them (docs/durability.md): a bar per boundary, scaled per partition from the lowest log
// start to the highest log end of its replicas, so that a follower behind its leader, or
// flushed behind written under write caching, shows as a shorter bar.

// boundaryNames are in the order of docs/durability.md.
var boundaryNames = [5]string{"log end", "flushed", "majority replicated", "committed", "visible"}

type barsData struct {
	Partitions []partitionBars
	More       int
}

type partitionBars struct {
	ID       int32
	Replicas []replicaBars
}

type replicaBars struct {
	Broker   int32
	Rack     string
	Leader   bool
	Answered bool // its broker answered in time
	Found    bool // and holds a replica of the partition
	Bars     [5]bar
}

type bar struct {
	Name   string
	Offset int64
	Pct    float64
}

// bars gathers the topic's replicas from every broker.
func (h *Handler) bars(r *http.Request, topic string) barsData {
	views := h.src.PartitionViews(topic)
	racks, _ := h.brokerRacks()
	nodes := h.src.NodeViews(r.Context(), broker.NodeViewQuery{Topics: []string{topic}})
	type key struct {
		broker    int32
		partition int32
	}
	held := map[key]broker.ReplicaView{}
	answered := map[int32]bool{}
	for _, n := range nodes {
		answered[n.Broker] = n.Answered
		for _, rv := range n.Replicas {
			if rv.Topic == topic {
				held[key{n.Broker, rv.Partition}] = rv
			}
		}
	}
	var d barsData
	for i, v := range views {
		if i == maxRows {
			d.More = len(views) - maxRows
			break
		}
		pb := partitionBars{ID: int32(i)}
		lo, hi := int64(-1), int64(0)
		for _, id := range v.Replicas {
			if rv, ok := held[key{id, int32(i)}]; ok {
				if lo < 0 || rv.LogStart < lo {
					lo = rv.LogStart
				}
				hi = max(hi, rv.LogEnd)
			}
		}
		for _, id := range slices.Sorted(slices.Values(v.Replicas)) {
			rb := replicaBars{Broker: id, Rack: racks[id], Answered: answered[id]}
			if rv, ok := held[key{id, int32(i)}]; ok {
				rb.Found, rb.Leader = true, rv.IsLeader
				for j, off := range [5]int64{rv.LogEnd, rv.Flushed, rv.MajorityReplicated, rv.Committed, rv.LastVisible} {
					rb.Bars[j] = bar{Name: boundaryNames[j], Offset: off, Pct: scale(off, lo, hi)}
				}
			}
			pb.Replicas = append(pb.Replicas, rb)
		}
		d.Partitions = append(d.Partitions, pb)
	}
	return d
}

// scale places off on [lo, hi] as a percentage; an empty range is full when off reached it.
func scale(off, lo, hi int64) float64 {
	if hi <= lo {
		if off >= hi && hi > 0 {
			return 100
		}
		return 0
	}
	return 100 * float64(min(max(off, lo), hi)-lo) / float64(hi-lo)
}
