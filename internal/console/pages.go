package console

import (
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/contract"
)

// maxRows bounds every list a page shows, so that a cluster of 50,000 partitions gives a
// page a browser can still draw; the page says how many it left out.
const maxRows = 1000

var funcs = template.FuncMap{
	"ids": func(ids []int32) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = strconv.Itoa(int(id))
		}
		return strings.Join(s, ", ")
	},
	"keptClass": func(k contract.Kept) string {
		switch k {
		case contract.KeptYes:
			return "ok"
		case contract.KeptWindow:
			return "warn"
		}
		return "bad"
	},
	"pct": func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
}

// clusterData is the cluster page.
type clusterData struct {
	Health   broker.HealthOverview
	Brokers  []brokerRow
	Problems []problem
}

type brokerRow struct {
	broker.BrokerSummary
	Controller, This bool
}

// problem is one of the health overview's lists, named for an operator.
type problem struct {
	What       string
	Partitions []broker.PartitionRef
	More       int
}

func problemOf(what string, refs []broker.PartitionRef) problem {
	p := problem{What: what, Partitions: refs}
	if len(refs) > 20 {
		p.Partitions, p.More = refs[:20], len(refs)-20
	}
	return p
}

func (h *Handler) cluster(w http.ResponseWriter, r *http.Request) {
	hv := h.src.HealthOverview()
	d := clusterData{Health: hv}
	for _, b := range h.src.BrokerSummaries() {
		d.Brokers = append(d.Brokers, brokerRow{BrokerSummary: b, Controller: b.NodeID == hv.ControllerID, This: b.NodeID == h.src.NodeID()})
	}
	for _, p := range []problem{
		problemOf("Leaderless: no leader, or a leader on a broker that is down; neither produce nor fetch is served", hv.LeaderlessPartitions),
		problemOf("Under min.insync.replicas: acks=all produce is refused", hv.UnderMinISRPartitions),
		problemOf("Under min.insync.racks: acks=all produce is refused", hv.UnderMinRacksPartitions),
		problemOf("Under-replicated: a replica is out of the ISR or on a broker that is down", hv.UnderReplicatedPartitions),
	} {
		if len(p.Partitions) > 0 {
			d.Problems = append(d.Problems, p)
		}
	}
	h.render(w, http.StatusOK, "cluster", "Cluster", d)
}

// topicRow is one line of the topics page.
type topicRow struct {
	broker.TopicInfo
	Leaderless, UnderReplicated int
	AcksAll                     string // what acks=all proves, in a few words
	Warnings                    int
}

type topicsData struct {
	Topics []topicRow
	More   int
}

func (h *Handler) topics(w http.ResponseWriter, r *http.Request) {
	var d topicsData
	for _, t := range h.src.Topics() {
		if len(d.Topics) == maxRows {
			d.More++
			continue
		}
		row := topicRow{TopicInfo: t}
		for _, v := range h.src.PartitionViews(t.Name) {
			if v.Leader < 0 {
				row.Leaderless++
			}
			if len(v.ISR) < len(v.Replicas) {
				row.UnderReplicated++
			}
		}
		if c, ok := h.src.Contract(t.Name); ok {
			if p, ok := c.Promise("all"); ok {
				row.AcksAll = stageWords(p)
			}
			row.Warnings = len(c.Warnings)
		}
		d.Topics = append(d.Topics, row)
	}
	h.render(w, http.StatusOK, "topics", "Topics", d)
}

// stageWords is a promise's stage in the words of docs/durability.md.
func stageWords(p contract.Promise) string {
	switch p.Stage {
	case "written", "fsynced":
		s := fmt.Sprintf("%s on %d %s", p.Stage, p.Replicas, plural(p.Replicas, "replica", "replicas"))
		if p.Racks > 0 { // 0: the brokers declare no racks
			s += fmt.Sprintf(" in %d %s", p.Racks, plural(p.Racks, "rack", "racks"))
		}
		return s
	case "appended":
		return "appended on the leader"
	}
	return "nothing"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

type topicData struct {
	Name       string
	Partitions []partitionRow
	Bars       barsData
	Contract   contract.Contract
}

type partitionRow struct {
	ID       int
	Leader   int32
	Epoch    int32
	Replicas []replicaCell
}

type replicaCell struct {
	ID     int32
	Rack   string
	InSync bool
	Live   bool
	Leader bool
}

func (h *Handler) topic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	c, ok := h.src.Contract(name)
	if !ok {
		h.render(w, http.StatusNotFound, "error", "No such topic", errorPage{Message: "There is no topic " + strconv.Quote(name) + "."})
		return
	}
	racks, live := h.brokerRacks()
	d := topicData{Name: name, Contract: c, Bars: h.bars(r, name)}
	for i, v := range h.src.PartitionViews(name) {
		if i == maxRows {
			break
		}
		row := partitionRow{ID: i, Leader: v.Leader, Epoch: v.LeaderEpoch}
		for _, id := range v.Replicas {
			row.Replicas = append(row.Replicas, replicaCell{ID: id, Rack: racks[id], Live: live[id],
				InSync: slices.Contains(v.ISR, id), Leader: id == v.Leader})
		}
		d.Partitions = append(d.Partitions, row)
	}
	h.render(w, http.StatusOK, "topic", "Topic "+name, d)
}

func (h *Handler) topicBoundaries(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	if _, ok := h.src.Contract(name); !ok {
		http.Error(w, "no such topic "+strconv.Quote(name), http.StatusNotFound)
		return
	}
	h.fragment(w, "topic", "bars", h.bars(r, name))
}

func (h *Handler) brokerRacks() (map[int32]string, map[int32]bool) {
	racks, live := map[int32]string{}, map[int32]bool{}
	for _, b := range h.src.BrokerSummaries() {
		racks[b.NodeID], live[b.NodeID] = b.Rack, b.IsAlive
	}
	return racks, live
}

// reconfigurationRow is a move and how far it has come.
type reconfigurationRow struct {
	Reconfiguration
	Percent float64 // -1: no byte counts reported yet
}

func (h *Handler) reconfigurations(w http.ResponseWriter, r *http.Request) {
	h.render(w, http.StatusOK, "reconfigurations", "Reconfigurations", h.reconfigurationRows())
}

func (h *Handler) reconfigurationsTable(w http.ResponseWriter, r *http.Request) {
	h.fragment(w, "reconfigurations", "table", h.reconfigurationRows())
}

func (h *Handler) reconfigurationRows() []reconfigurationRow {
	var rows []reconfigurationRow
	for _, rc := range h.src.Reconfigurations() {
		pct := -1.0
		if rc.BytesLeft >= 0 && rc.BytesMoved+rc.BytesLeft > 0 {
			pct = 100 * float64(rc.BytesMoved) / float64(rc.BytesMoved+rc.BytesLeft)
		} else if rc.BytesLeft == 0 {
			pct = 100
		}
		rows = append(rows, reconfigurationRow{Reconfiguration: rc, Percent: pct})
	}
	return rows
}
