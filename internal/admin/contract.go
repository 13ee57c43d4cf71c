package admin

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/contract"
)

// GET /v1/topics/{topic}/contract: the topic's effective durability contract now
// (internal/contract), from this broker's view of its settings, placement and ISR.
// ?partition=N narrows the live state (warnings, racks) to one partition.

// contractSettings are the properties the contract depends on, in the order shown.
var contractSettings = []string{config.TopicWriteCaching, config.TopicMinInsyncReplicas, config.TopicMinInsyncRacks,
	config.TopicFlushMs, config.TopicFlushBytes}

func (s *Server) handleContract(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	q := r.URL.Query()
	for k := range q {
		if k != "partition" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unknown query parameter " + strconv.Quote(k) + "; the only one is partition"})
			return
		}
	}
	if _, _, ok := s.b.TopicConfigOverrides(name); !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such topic " + strconv.Quote(name)})
		return
	}
	views := s.b.PartitionViews(name)
	only := -1
	if v, set := q["partition"]; set {
		n, err := strconv.Atoi(v[0])
		if len(v) != 1 || err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "partition must be one non-negative number"})
			return
		}
		if n >= len(views) {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "topic " + strconv.Quote(name) + " has no partition " + v[0] +
				" (it has " + strconv.Itoa(len(views)) + ")"})
			return
		}
		only = n
	}
	c, ok := s.topicContract(name, only)
	if !ok { // deleted since
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such topic " + strconv.Quote(name)})
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// topicContract is the topic's contract now; only >= 0 narrows the live state to one
// partition. False: no such topic.
func (s *Server) topicContract(name string, only int) (contract.Contract, bool) {
	topicOv, clusterOv, ok := s.b.TopicConfigOverrides(name)
	if !ok {
		return contract.Contract{}, false
	}
	return contract.Explain(contractTopic(name, topicOv, clusterOv, s.b.PartitionViews(name), s.b.ClusterStatus(), only),
		contract.RefusedForDurability()), true
}

// contractTopic gathers what the contract is computed from.
func contractTopic(name string, topicOv, clusterOv map[string]string, views []broker.PartitionView, cl broker.ClusterStatus, only int) contract.Topic {
	cfg := config.ResolveTopic(topicOv, clusterOv)
	t := contract.Topic{Name: name, WriteCaching: cfg.WriteCaching, MinInsyncReplicas: cfg.MinInsyncReplicas,
		MinInsyncRacks: cfg.MinInsyncRacks, FlushMs: cfg.FlushMs, FlushBytes: cfg.FlushBytes}
	for _, v := range config.DescribeTopic(topicOv, clusterOv) {
		if slices.Contains(contractSettings, v.Name) {
			t.Settings = append(t.Settings, contract.Setting{Name: v.Name, Value: v.Value, Source: settingSource(v.Source)})
		}
	}
	slices.SortFunc(t.Settings, func(a, b contract.Setting) int {
		return slices.Index(contractSettings, a.Name) - slices.Index(contractSettings, b.Name)
	})
	rack, live := map[int32]string{}, map[int32]bool{}
	for _, b := range cl.Brokers {
		rack[b.ID], live[b.ID] = b.Rack, b.Live
	}
	for i, v := range views {
		if only >= 0 && i != only {
			continue
		}
		p := contract.Partition{ID: int32(i), Leader: v.Leader}
		for _, id := range v.Replicas {
			p.Replicas = append(p.Replicas, contract.Replica{ID: id, Rack: rack[id], Live: live[id], InSync: slices.Contains(v.ISR, id)})
		}
		t.Partitions = append(t.Partitions, p)
	}
	return t
}

// settingSource names a DescribeConfigs source the way an operator says it.
func settingSource(s config.Source) string {
	switch s {
	case config.SourceDynamicTopic:
		return "topic"
	case config.SourceDynamicDefaultBroker, config.SourceStaticBroker:
		return "cluster"
	default:
		return "default"
	}
}
