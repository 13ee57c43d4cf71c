package config

import (
	"slices"
	"strconv"
	"strings"
)

// Resolution reads override maps as callers stored them. Entries that are unknown, belong to
// another scope or fail validation are skipped, so the next level (cluster override, then
// default) applies; callers are expected to have validated them on the way in.

// from returns the canonical form of overrides[p.Name] when it is set and valid.
func (p *Property) from(overrides map[string]string) (string, bool) {
	v, ok := overrides[p.Name]
	if !ok {
		return "", false
	}
	c, err := p.Validate(v)
	if err != nil {
		return "", false
	}
	return c, true
}

// topicSynonyms lists where a topic property's value could come from, most specific
// first: the topic override, the cluster override, the built-in default under the cluster
// property's name. The first entry is the effective value and its source, except for
// write.caching under write_caching_default=disabled (see topicEffective).
func topicSynonyms(p *Property, topicOverrides, clusterOverrides map[string]string) []Synonym {
	syn := make([]Synonym, 0, 3)
	if v, ok := p.from(topicOverrides); ok {
		syn = append(syn, Synonym{Name: p.Name, Value: v, Source: SourceDynamicTopic})
	}
	c := lookup(ScopeCluster, p.Synonym)
	if v, ok := c.from(clusterOverrides); ok {
		syn = append(syn, Synonym{Name: c.Name, Value: v, Source: SourceDynamicDefaultBroker})
	}
	return append(syn, Synonym{Name: c.Name, Value: c.Default, Source: SourceDefault})
}

// topicEffective returns a topic property's effective value, its source and its synonyms.
func topicEffective(p *Property, topicOverrides, clusterOverrides map[string]string) (string, Source, []Synonym) {
	syn := topicSynonyms(p, topicOverrides, clusterOverrides)
	if p.Name == TopicWriteCaching {
		// The cluster value is an enum; "disabled" wins over any topic setting.
		wc := lookup(ScopeCluster, ClusterWriteCachingDefault)
		if v, ok := wc.from(clusterOverrides); ok && v == WriteCachingDisabled {
			return "false", SourceDynamicDefaultBroker, syn
		}
	}
	return syn[0].Value, syn[0].Source, syn
}

func clusterEffective(p *Property, clusterOverrides map[string]string) (string, Source, []Synonym) {
	syn := make([]Synonym, 0, 2)
	if v, ok := p.from(clusterOverrides); ok {
		syn = append(syn, Synonym{Name: p.Name, Value: v, Source: SourceDynamicDefaultBroker})
	}
	syn = append(syn, Synonym{Name: p.Name, Value: p.Default, Source: SourceDefault})
	return syn[0].Value, syn[0].Source, syn
}

func nodeEffective(p *Property, nodeValues map[string]string) (string, Source, []Synonym) {
	var syn []Synonym
	if v, ok := nodeValues[p.Name]; ok && !(v == "" && p.DefaultFrom != "") {
		if c, err := p.Validate(v); err == nil {
			v = c
		}
		syn = append(syn, Synonym{Name: p.Name, Value: v, Source: SourceStaticBroker})
	}
	if p.DefaultFrom != "" {
		_, _, from := nodeEffective(lookup(ScopeNode, p.DefaultFrom), nodeValues)
		syn = append(syn, from...)
	} else {
		syn = append(syn, Synonym{Name: p.Name, Value: p.Default, Source: SourceDefault})
	}
	return syn[0].Value, syn[0].Source, syn
}

func mustInt(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic("config: canonical value " + strconv.Quote(s) + " is not a number")
	}
	return n
}

// ResolveTopic returns a topic's effective configuration: for each property, the topic
// override, else the cluster override, else the default. Write caching is off whenever
// write_caching_default is "disabled"; otherwise it is the topic's write.caching if set,
// else write_caching_default == "true".
func ResolveTopic(topicOverrides, clusterOverrides map[string]string) TopicConfig {
	get := func(name string) string {
		v, _, _ := topicEffective(lookup(ScopeTopic, name), topicOverrides, clusterOverrides)
		return v
	}
	return TopicConfig{
		CleanupPolicy:     get(TopicCleanupPolicy),
		DeleteRetentionMs: mustInt(get(TopicDeleteRetentionMs)),
		RetentionMs:       mustInt(get(TopicRetentionMs)),
		RetentionBytes:    mustInt(get(TopicRetentionBytes)),
		SegmentBytes:      mustInt(get(TopicSegmentBytes)),
		SegmentMs:         mustInt(get(TopicSegmentMs)),
		MaxMessageBytes:   int32(mustInt(get(TopicMaxMessageBytes))),
		WriteCaching:      get(TopicWriteCaching) == "true",
		FlushMs:           mustInt(get(TopicFlushMs)),
		FlushBytes:        mustInt(get(TopicFlushBytes)),
		MinInsyncReplicas: int(mustInt(get(TopicMinInsyncReplicas))),
		MinInsyncRacks:    int(mustInt(get(TopicMinInsyncRacks))),
	}
}

// ResolveCluster returns the effective cluster-wide configuration: each property's
// override, else its default.
func ResolveCluster(clusterOverrides map[string]string) ClusterConfig {
	get := func(name string) string {
		v, _, _ := clusterEffective(lookup(ScopeCluster, name), clusterOverrides)
		return v
	}
	return ClusterConfig{
		AutoCreateTopics:         get(ClusterAutoCreateTopicsEnable) == "true",
		NumPartitions:            int32(mustInt(get(ClusterNumPartitions))),
		DefaultReplicationFactor: int16(mustInt(get(ClusterDefaultReplicationFactor))),
		WriteCachingDefault:      get(ClusterWriteCachingDefault),
		RetentionCheckMs:         mustInt(get(ClusterLogRetentionCheckIntervalMs)),
		FollowerFetching:         get(ClusterReplicaSelectorClass) == RackAwareReplicaSelector,

		AutoLeaderRebalance:         get(ClusterAutoLeaderRebalanceEnable) == "true",
		LeaderImbalanceCheckSeconds: mustInt(get(ClusterLeaderImbalanceCheckIntervalSecs)),
		LeaderImbalancePerBrokerPct: int(mustInt(get(ClusterLeaderImbalancePerBrokerPct))),
		LearnerRecoveryRate:         mustInt(get(ClusterLearnerRecoveryRate)),

		AuthorizerEnabled:         get(ClusterAuthorizerClassName) != "",
		SuperUsers:                get(ClusterSuperUsers),
		AllowEveryoneIfNoACLFound: get(ClusterAllowEveryoneIfNoACLFound) == "true",

		OffsetsTopicNumPartitions:     int32(mustInt(get(ClusterOffsetsTopicNumPartitions))),
		OffsetsTopicReplicationFactor: int16(mustInt(get(ClusterOffsetsTopicReplicationFactor))),
		OffsetsTopicSegmentBytes:      int32(mustInt(get(ClusterOffsetsTopicSegmentBytes))),
		OffsetsRetentionMinutes:       mustInt(get(ClusterOffsetsRetentionMinutes)),
		OffsetsRetentionCheckMs:       mustInt(get(ClusterOffsetsRetentionCheckInterval)),
		OffsetsCommitTimeoutMs:        mustInt(get(ClusterOffsetsCommitTimeoutMs)),
		OffsetMetadataMaxBytes:        int32(mustInt(get(ClusterOffsetMetadataMaxBytes))),
		GroupMinSessionTimeoutMs:      mustInt(get(ClusterGroupMinSessionTimeoutMs)),
		GroupMaxSessionTimeoutMs:      mustInt(get(ClusterGroupMaxSessionTimeoutMs)),
		GroupInitialRebalanceDelayMs:  mustInt(get(ClusterGroupInitialRebalanceDelayMs)),

		TxnStateLogNumPartitions:     int32(mustInt(get(ClusterTxnStateLogNumPartitions))),
		TxnStateLogReplicationFactor: int16(mustInt(get(ClusterTxnStateLogReplicationFactor))),
		TxnStateLogSegmentBytes:      int32(mustInt(get(ClusterTxnStateLogSegmentBytes))),
		TxnStateLogMinISR:            int32(mustInt(get(ClusterTxnStateLogMinISR))),
		TxnMaxTimeoutMs:              int32(mustInt(get(ClusterTxnMaxTimeoutMs))),
		TransactionalIDExpirationMs:  mustInt(get(ClusterTransactionalIDExpirationMs)),
		TxnAbortTimedOutCheckMs:      mustInt(get(ClusterTxnAbortTimedOutCheckMs)),
		TxnRemoveExpiredCheckMs:      mustInt(get(ClusterTxnRemoveExpiredCheckMs)),
	}
}

// ResolveNode validates a node's startup values (keyed by node property name) and returns
// its effective configuration. Unset properties take their defaults; advertised.kafka.addr
// takes kafka.addr and advertised.rpc.addr takes rpc.addr. Any unknown name or invalid value gives an *Error.
func ResolveNode(nodeValues map[string]string) (NodeConfig, error) {
	keys := make([]string, 0, len(nodeValues))
	for k := range nodeValues {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, err := ValidateNode(k, nodeValues[k]); err != nil {
			return NodeConfig{}, err
		}
	}
	get := func(name string) string {
		v, _, _ := nodeEffective(lookup(ScopeNode, name), nodeValues)
		return v
	}
	rpcTLS, adminSec, err := resolveSecurity(get)
	if err != nil {
		return NodeConfig{}, err
	}
	listeners, tlsc, err := resolveListeners(nodeValues, get)
	if err != nil {
		return NodeConfig{}, err
	}
	var seeds []string
	if s := get(NodeSeeds); s != "" {
		seeds = strings.Split(s, ",")
	}
	return NodeConfig{
		NodeID:                 int32(mustInt(get(NodeID))),
		DataDir:                get(NodeDataDir),
		KafkaAddr:              get(NodeKafkaAddr),
		AdvertisedKafkaAddr:    get(NodeAdvertisedKafkaAddr),
		RPCAddr:                get(NodeRPCAddr),
		AdvertisedRPCAddr:      get(NodeAdvertisedRPCAddr),
		AdminAddr:              get(NodeAdminAddr),
		AdminConsole:           get(NodeAdminConsole) == "true",
		Rack:                   get(NodeRack),
		Seeds:                  seeds,
		ProduceForwarding:      get(NodeProduceForwarding) == "true",
		ReplicaLagTimeMaxMs:    mustInt(get(NodeReplicaLagTimeMaxMs)),
		FetchSessionSlots:      int(mustInt(get(NodeFetchSessionSlots))),
		RPCTLS:                 rpcTLS,
		Admin:                  adminSec,
		Listeners:              listeners,
		TLS:                    tlsc,
		SASLEnabledMechanisms:  strings.Split(get(NodeSASLEnabledMechanisms), ","),
		ConnectionsMaxReauthMs: mustInt(get(NodeConnectionsMaxReauthMs)),
	}, nil
}

func describe(p *Property, value string, source Source, syn []Synonym) Value {
	return Value{
		Name:     p.Name,
		Value:    value,
		Source:   source,
		ReadOnly: p.ReadOnly(),
		Type:     p.Type.KafkaType(),
		Doc:      p.Description,
		Synonyms: syn,
	}
}

// DescribeTopic describes every accepted topic property with its effective value and its
// source: DYNAMIC_TOPIC_CONFIG when set on the topic, DYNAMIC_DEFAULT_BROKER_CONFIG when it
// comes from a cluster override, DEFAULT_CONFIG otherwise. Synonyms run most specific
// first: the topic override, the cluster override, the default under the cluster
// property's name. Sorted by name.
func DescribeTopic(topicOverrides, clusterOverrides map[string]string) []Value {
	var out []Value
	for i := range reg.props {
		p := &reg.props[i]
		if p.Scope != ScopeTopic {
			continue
		}
		v, src, syn := topicEffective(p, topicOverrides, clusterOverrides)
		out = append(out, describe(p, v, src, syn))
	}
	return out
}

// DescribeBroker describes every cluster and node property, sorted by name. Cluster
// properties report DYNAMIC_DEFAULT_BROKER_CONFIG when overridden, else DEFAULT_CONFIG.
// Node properties are read-only and report STATIC_BROKER_CONFIG when present in nodeValues,
// else DEFAULT_CONFIG (advertised.kafka.addr and advertised.rpc.addr, when unset or empty,
// report kafka.addr's and rpc.addr's value and source). Synonyms run most specific first.
func DescribeBroker(nodeValues map[string]string, clusterOverrides map[string]string) []Value {
	var out []Value
	for i := range reg.props {
		p := &reg.props[i]
		var v string
		var src Source
		var syn []Synonym
		switch p.Scope {
		case ScopeCluster:
			v, src, syn = clusterEffective(p, clusterOverrides)
		case ScopeNode:
			v, src, syn = nodeEffective(p, nodeValues)
		default:
			continue
		}
		out = append(out, describe(p, v, src, syn))
	}
	slices.SortStableFunc(out, func(a, b Value) int { return strings.Compare(a.Name, b.Name) })
	return out
}
