package console

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/cairn-io/cairn/internal/broker"
)

// Consumer groups, from every broker's coordinator (each knows only the groups whose
// __consumer_offsets partition it leads), with the lag of each partition the group
// commits or is assigned: the partition leader's high watermark (what a consumer can read)
// less the group's committed offset, as kafka-consumer-groups.sh --describe shows it.

type groupsData struct {
	Groups []groupRow
	More   int
	// Silent are brokers that did not answer: their groups are missing from the page.
	Silent []int32
}

type groupRow struct {
	broker.GroupView
	Coordinator int32
	Partitions  []lagRow
	TotalLag    int64
	LagUnknown  bool // some partition's end is not known (its leader did not answer)
}

type lagRow struct {
	Topic     string
	Partition int32
	Committed int64 // -1: none
	End       int64 // -1: unknown
	Lag       int64 // -1: unknown
	Owner     string
}

func (h *Handler) groups(w http.ResponseWriter, r *http.Request) {
	var d groupsData
	topics := map[string]bool{}
	for _, n := range h.src.NodeViews(r.Context(), broker.NodeViewQuery{Groups: true}) {
		if !n.Answered {
			d.Silent = append(d.Silent, n.Broker)
		}
		for _, g := range n.Groups {
			if len(d.Groups) == maxRows {
				d.More++
				continue
			}
			d.Groups = append(d.Groups, groupRow{GroupView: g, Coordinator: n.Broker})
			for _, o := range g.Offsets {
				topics[o.Topic] = true
			}
			for _, m := range g.Members {
				for _, a := range m.Assigned {
					topics[a.Topic] = true
				}
			}
		}
	}
	slices.SortFunc(d.Groups, func(a, b groupRow) int { return strings.Compare(a.Group, b.Group) })
	ends := h.highWatermarks(r, slices.Sorted(maps.Keys(topics)))
	for i := range d.Groups {
		d.Groups[i].lag(ends)
	}
	h.render(w, http.StatusOK, "groups", "Consumer groups", d)
}

// highWatermarks are the leaders' last visible offsets of the topics' partitions.
func (h *Handler) highWatermarks(r *http.Request, topics []string) map[broker.TopicPartition]int64 {
	ends := map[broker.TopicPartition]int64{}
	if len(topics) == 0 {
		return ends
	}
	for _, n := range h.src.NodeViews(r.Context(), broker.NodeViewQuery{Topics: topics}) {
		for _, rv := range n.Replicas {
			if rv.IsLeader {
				ends[broker.TopicPartition{Topic: rv.Topic, Partition: rv.Partition}] = rv.LastVisible
			}
		}
	}
	return ends
}

// lag fills the group's partitions: those it committed and those assigned to a member.
func (g *groupRow) lag(ends map[broker.TopicPartition]int64) {
	rows := map[broker.TopicPartition]*lagRow{}
	row := func(tp broker.TopicPartition) *lagRow {
		if r := rows[tp]; r != nil {
			return r
		}
		r := &lagRow{Topic: tp.Topic, Partition: tp.Partition, Committed: -1, End: -1, Lag: -1}
		rows[tp] = r
		return r
	}
	for _, o := range g.Offsets {
		row(broker.TopicPartition{Topic: o.Topic, Partition: o.Partition}).Committed = o.Offset
	}
	for _, m := range g.Members {
		for _, a := range m.Assigned {
			row(a).Owner = m.ClientID
		}
	}
	for tp, r := range rows {
		end, ok := ends[tp]
		if !ok {
			g.LagUnknown = true
		} else {
			r.End = end
			if r.Committed >= 0 {
				r.Lag = max(0, end-r.Committed)
				g.TotalLag += r.Lag
			}
		}
		g.Partitions = append(g.Partitions, *r)
	}
	slices.SortFunc(g.Partitions, func(a, b lagRow) int {
		if n := strings.Compare(a.Topic, b.Topic); n != 0 {
			return n
		}
		return int(a.Partition - b.Partition)
	})
}
