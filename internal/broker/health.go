package broker

import (
	"slices"
	"strings"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/partition"
)

// The health overview is this broker's own view, computed without asking any other broker:
// the controller replica gives the brokers and their liveness, and the leadership lists
// every broker gossips (leaders.go) carry each partition's leader and ISR, so a broker that
// holds no replica of a partition still knows its ISR. That ISR is as old as the leader's
// last list (a role change is sent within leadershipMinInterval, an ISR change only at the
// next leadershipTick), which is fresh enough for an operator's overview; asking every
// broker instead would make the answer as slow as the slowest broker, and would hang on
// the down broker the overview is meant to report.

// PartitionRef names one partition.
type PartitionRef struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// HealthOverview is the cluster's health as this broker sees it (GET
// /v1/cluster/health_overview). Every list is sorted and never null.
type HealthOverview struct {
	// Healthy: a controller leader is known and every other list is empty.
	Healthy bool `json:"healthy"`
	// ControllerID leads the controller group; -1 while none does.
	ControllerID int32 `json:"controller_id"`
	// AllNodes are the registered brokers; NodesDown those the controller holds not live.
	AllNodes  []int32 `json:"all_nodes"`
	NodesDown []int32 `json:"nodes_down"`
	// LeaderlessPartitions have no leader, or one on a broker that is down.
	LeaderlessPartitions []PartitionRef `json:"leaderless_partitions"`
	// UnderReplicatedPartitions have a replica out of the ISR or on a broker that is down
	// (the second counts at once, before the leader's lag window drops it from the ISR).
	UnderReplicatedPartitions []PartitionRef `json:"under_replicated_partitions"`
	// UnderMinISRPartitions have an ISR smaller than the effective min.insync.replicas:
	// acks=all produce to them is refused.
	UnderMinISRPartitions []PartitionRef `json:"under_min_isr_partitions"`
	// UnderMinRacksPartitions have an ISR spanning fewer declared racks than the topic's
	// min.insync.racks (when above 1): acks=all produce to them is refused.
	UnderMinRacksPartitions []PartitionRef `json:"under_min_racks_partitions"`
}

// healthView is what the overview needs of one partition: its leader (-1: none known) and,
// when isrKnown, its ISR as the leader last reported it.
type healthView struct {
	leader   int32
	isr      []int32
	isrKnown bool
}

// HealthOverview computes the cluster's health from this broker's knowledge.
func (b *Broker) HealthOverview() HealthOverview {
	svc := b.svc.Load()
	st := svc.State()
	return computeHealth(svc.Leader(), st.Brokers(), st.Topics(), st.ClusterConfig(), b.healthView)
}

// healthView reads one partition as PartitionView does (this broker's replica when it
// leads, else the newest leadership list), but says when the ISR is unknown: a follower
// replica knows its leader before that leader's list arrives.
func (b *Broker) healthView(t controller.Topic, p int32) healthView {
	v := healthView{leader: -1}
	var term int64 = -1
	b.mu.RLock()
	r := b.replicas[replicaKey{t.ID, p}]
	b.mu.RUnlock()
	if r != nil {
		bd := r.p.Boundaries()
		if bd.IsLeader {
			return healthView{leader: b.cfg.NodeID, isr: nodeIDs(r.p.ISR()), isrKnown: true}
		}
		if bd.Leader != 0 {
			v.leader, term = int32(bd.Leader), int64(bd.LeaderEpoch)
		}
	}
	if int(p) < len(t.Groups) {
		if li, ok := b.leaders.get(t.Groups[p]); ok && int64(li.term) >= term {
			v = healthView{leader: li.leader, isr: li.isr, isrKnown: true}
		}
	}
	return v
}

// computeHealth builds the overview from the controller's brokers, topics and cluster
// overrides, and view, which reads one partition's leader and ISR.
func computeHealth(controllerID int32, brokers []controller.Broker, topics []controller.Topic, clusterOverrides map[string]string,
	view func(controller.Topic, int32) healthView) HealthOverview {
	h := HealthOverview{
		ControllerID: controllerID, AllNodes: []int32{}, NodesDown: []int32{},
		LeaderlessPartitions: []PartitionRef{}, UnderReplicatedPartitions: []PartitionRef{},
		UnderMinISRPartitions: []PartitionRef{}, UnderMinRacksPartitions: []PartitionRef{},
	}
	live := map[int32]bool{}
	for _, br := range brokers {
		h.AllNodes = append(h.AllNodes, br.ID)
		if br.Live {
			live[br.ID] = true
		} else {
			h.NodesDown = append(h.NodesDown, br.ID)
		}
	}
	racks := partitionRacks(brokers)
	topics = slices.SortedFunc(slices.Values(topics), func(a, b controller.Topic) int { return strings.Compare(a.Name, b.Name) })
	for _, t := range topics {
		cfg := config.ResolveTopic(t.Configs, clusterOverrides)
		for p, replicas := range t.Assignment {
			ref := PartitionRef{Topic: t.Name, Partition: int32(p)}
			v := view(t, int32(p))
			if v.leader < 0 || !live[v.leader] {
				h.LeaderlessPartitions = append(h.LeaderlessPartitions, ref)
				continue
			}
			if !v.isrKnown {
				continue // only until the leader's first list arrives
			}
			down := slices.ContainsFunc(replicas, func(id int32) bool { return !live[id] })
			if down || len(v.isr) < len(replicas) {
				h.UnderReplicatedPartitions = append(h.UnderReplicatedPartitions, ref)
			}
			if len(v.isr) < max(1, min(cfg.MinInsyncReplicas, len(replicas))) {
				h.UnderMinISRPartitions = append(h.UnderMinISRPartitions, ref)
			}
			if cfg.MinInsyncRacks > 1 && len(partition.SpannedRacks(racks, v.isr)) < cfg.MinInsyncRacks {
				h.UnderMinRacksPartitions = append(h.UnderMinRacksPartitions, ref)
			}
		}
	}
	h.Healthy = controllerID >= 0 && len(h.NodesDown) == 0 && len(h.LeaderlessPartitions) == 0 &&
		len(h.UnderReplicatedPartitions) == 0 && len(h.UnderMinISRPartitions) == 0 && len(h.UnderMinRacksPartitions) == 0
	return h
}
