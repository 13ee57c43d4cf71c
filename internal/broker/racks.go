package broker

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/controller"
)

// The broker refuses a min.insync.racks value that a partition's replicas could never meet,
// rather than capping it: a cap would let an operator believe that writes are held in more
// racks than they are. The check runs in the proposer, before the change is proposed, so a
// broker that registers again with another rack between check and apply can still leave a
// partition short; the partition's acks=all admission is what keeps the rule honest then.

// maxShortfallsNamed bounds how many partitions one refusal message names.
const maxShortfallsNamed = 3

// topicShortfalls is one topic's partitions that cannot meet a min.insync.racks value.
type topicShortfalls struct {
	topic      string
	shortfalls []controller.RackShortfall
}

// declaredRacks maps every registered broker to its declared rack ("" declares none).
// Brokers that are down still hold their replicas, so they count with the rack they declared.
func declaredRacks(st *controller.State) map[int32]string {
	racks := map[int32]string{}
	for _, br := range st.Brokers() {
		racks[br.ID] = br.Rack
	}
	return racks
}

// describeShortfalls names, for an operator, the first maxShortfallsNamed partitions of
// short with their replicas' racks, then how many more there are.
func describeShortfalls(short []topicShortfalls) string {
	var parts []string
	total := 0
	for _, ts := range short {
		for _, s := range ts.shortfalls {
			if total < maxShortfallsNamed {
				parts = append(parts, s.Describe(ts.topic))
			}
			total++
		}
	}
	if total > maxShortfallsNamed {
		parts = append(parts, fmt.Sprintf("and %d more", total-maxShortfallsNamed))
	}
	return strings.Join(parts, "; ")
}

// racksRefusal is the INVALID_CONFIG answer for a min.insync.racks value (what, e.g.
// "min.insync.racks=3 (cluster default)") that the listed partitions cannot meet. A cluster
// default's refusal first names every topic that takes it.
func racksRefusal(what string, short []topicShortfalls, clusterDefault bool) *Error {
	by := ""
	if clusterDefault {
		names := make([]string, len(short))
		for i, ts := range short {
			names[i] = ts.topic
		}
		by = "the topics that take it (" + strings.Join(names, ", ") + "): "
	}
	return errorf(kerr.InvalidConfig, "%s cannot be met by %s%s; it is not capped", what, by, describeShortfalls(short))
}

// warnRackShortfalls runs at each reconcile. A broker that registers again with another
// rack, or none, is accepted (a restart cannot be refused), and can leave a topic's
// partitions spanning fewer declared racks than its min.insync.racks: acks=all to them is
// then refused with NOT_ENOUGH_RACKS until the racks are back. The broker that leads the
// controller logs one WARN per topic when that starts (or when what is short changes), and
// one INFO when it ends, not one at every controller change; the other brokers stay quiet
// and forget, so that a broker which comes to lead the controller reports what stands.
func (b *Broker) warnRackShortfalls(st *controller.State) {
	if b.svc.Load().Leader() != b.cfg.NodeID {
		clear(b.rackShort)
		return
	}
	if b.rackShort == nil {
		b.rackShort = map[string]string{}
	}
	cluster := st.ClusterConfig()
	var racks map[int32]string // built once a topic has the rule on
	seen := map[string]bool{}
	for _, t := range st.Topics() {
		need := config.ResolveTopic(t.Configs, cluster).MinInsyncRacks
		if need <= 1 {
			continue
		}
		if racks == nil {
			racks = declaredRacks(st)
		}
		short := controller.RackShortfalls(racks, t.Assignment, 0, need)
		if len(short) == 0 {
			continue
		}
		seen[t.Name] = true
		said := describeShortfalls([]topicShortfalls{{t.Name, short}})
		if b.rackShort[t.Name] == said {
			continue
		}
		b.rackShort[t.Name] = said
		b.lg.Warn("topic's replicas span fewer declared racks than its min.insync.racks (a broker registered again with another rack, or none): acks=all to these partitions is refused with NOT_ENOUGH_RACKS",
			"topic", t.Name, "min_insync_racks", need, "short", said)
	}
	for name := range b.rackShort {
		if seen[name] {
			continue
		}
		delete(b.rackShort, name)
		if _, exists := st.Topic(name); exists {
			b.lg.Info("topic's replicas span its min.insync.racks again", "topic", name)
		}
	}
}

// checkNewPartitionRacks refuses partitions of topic about to be created (assignment, the
// first of them numbered first) whose replicas cannot meet the min.insync.racks that
// overrides, over the cluster's, put in force.
func (b *Broker) checkNewPartitionRacks(topic string, overrides map[string]string, assignment [][]int32, first int32) *Error {
	st := b.state()
	need := config.ResolveTopic(overrides, st.ClusterConfig()).MinInsyncRacks
	short := controller.RackShortfalls(declaredRacks(st), assignment, first, need)
	if len(short) == 0 {
		return nil
	}
	what := fmt.Sprintf("min.insync.racks=%d", need)
	if _, own := overrides[config.TopicMinInsyncRacks]; !own {
		what += " (cluster default, in force for topic " + topic + ")"
	}
	return racksRefusal(what, []topicShortfalls{{topic, short}}, false)
}

// CheckTopicConfig refuses next, a topic's complete new set of overrides, when it changes
// the topic's effective min.insync.racks to a value that one of its partitions cannot
// meet. An unchanged value passes, so that a topic left short by a broker that declared
// another rack can still have its other properties changed.
func (b *Broker) CheckTopicConfig(name string, next map[string]string) *Error {
	st := b.state()
	t, ok := st.Topic(name)
	if !ok {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	cluster := st.ClusterConfig()
	need := config.ResolveTopic(next, cluster).MinInsyncRacks
	if need == config.ResolveTopic(t.Configs, cluster).MinInsyncRacks {
		return nil
	}
	short := controller.RackShortfalls(declaredRacks(st), t.Assignment, 0, need)
	if len(short) == 0 {
		return nil
	}
	what := fmt.Sprintf("min.insync.racks=%d", need)
	if _, own := next[config.TopicMinInsyncRacks]; !own {
		what += " (cluster default)"
	}
	return racksRefusal(what, []topicShortfalls{{name, short}}, false)
}

// CheckClusterConfig refuses next, the complete new set of cluster overrides, when it
// changes the cluster default of min.insync.racks to a value that a partition of a topic
// without its own value (internal topics included) cannot meet.
func (b *Broker) CheckClusterConfig(next map[string]string) *Error {
	st := b.state()
	need := config.ResolveTopic(nil, next).MinInsyncRacks
	if need == config.ResolveTopic(nil, st.ClusterConfig()).MinInsyncRacks {
		return nil
	}
	racks := declaredRacks(st)
	var short []topicShortfalls
	for _, t := range st.Topics() {
		if _, own := t.Configs[config.TopicMinInsyncRacks]; own {
			continue
		}
		if s := controller.RackShortfalls(racks, t.Assignment, 0, need); len(s) > 0 {
			short = append(short, topicShortfalls{t.Name, s})
		}
	}
	if len(short) == 0 {
		return nil
	}
	return racksRefusal(fmt.Sprintf("min.insync.racks=%d (cluster default)", need), short, true)
}
