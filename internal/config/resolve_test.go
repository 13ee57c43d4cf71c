package config

import (
	"reflect"
	"slices"
	"testing"
)

func TestResolveTopicDefaults(t *testing.T) {
	want := TopicConfig{CleanupPolicy: "delete", DeleteRetentionMs: 86400000, RetentionMs: 604800000, RetentionBytes: -1,
		SegmentBytes: 1 << 30, SegmentMs: 604800000, MaxMessageBytes: 1048588, WriteCaching: false,
		FlushMs: 100, FlushBytes: 262144, MinInsyncReplicas: 1, MinInsyncRacks: 1}
	if got := ResolveTopic(nil, nil); got != want {
		t.Fatalf("defaults:\n got %+v\nwant %+v", got, want)
	}
}

func TestResolveTopicPrecedence(t *testing.T) {
	cluster := map[string]string{
		"log.retention.ms": "1000", "log.retention.bytes": "2000", "log.segment.bytes": "4096",
		"log.roll.ms": "3000", "message.max.bytes": "5000", "log.flush.interval.ms": "6",
		"log.flush.interval.bytes": "7000", "min.insync.replicas": "2", "log.cleanup.policy": "delete",
		"min.insync.racks": "2",
	}
	got := ResolveTopic(nil, cluster)
	want := TopicConfig{CleanupPolicy: "delete", DeleteRetentionMs: 86400000, RetentionMs: 1000, RetentionBytes: 2000, SegmentBytes: 4096,
		SegmentMs: 3000, MaxMessageBytes: 5000, FlushMs: 6, FlushBytes: 7000, MinInsyncReplicas: 2, MinInsyncRacks: 2}
	if got != want {
		t.Fatalf("cluster overrides:\n got %+v\nwant %+v", got, want)
	}
	topic := map[string]string{
		"retention.ms": "-1", "retention.bytes": "-1", "segment.bytes": "8192", "segment.ms": "1",
		"max.message.bytes": "0", "flush.ms": "0", "flush.bytes": "1", "min.insync.replicas": "3",
		"min.insync.racks": "3",
	}
	got = ResolveTopic(topic, cluster)
	want = TopicConfig{CleanupPolicy: "delete", DeleteRetentionMs: 86400000, RetentionMs: -1, RetentionBytes: -1, SegmentBytes: 8192,
		SegmentMs: 1, MaxMessageBytes: 0, FlushMs: 0, FlushBytes: 1, MinInsyncReplicas: 3, MinInsyncRacks: 3}
	if got != want {
		t.Fatalf("topic overrides:\n got %+v\nwant %+v", got, want)
	}
}

func TestResolveSkipsInvalidOverrides(t *testing.T) {
	topic := map[string]string{"retention.ms": "nope", "segment.bytes": "10", "bogus": "1", "log.retention.ms": "5"}
	cluster := map[string]string{"log.retention.ms": "1234", "log.segment.bytes": "x", "retention.ms": "9"}
	got := ResolveTopic(topic, cluster)
	if got.RetentionMs != 1234 || got.SegmentBytes != 1<<30 {
		t.Fatalf("got %+v", got)
	}
}

func TestWriteCachingMatrix(t *testing.T) {
	for _, cl := range []string{"", "true", "false", "disabled"} {
		for _, tp := range []string{"", "true", "false"} {
			cluster, topic := map[string]string{}, map[string]string{}
			if cl != "" {
				cluster[ClusterWriteCachingDefault] = cl
			}
			if tp != "" {
				topic[TopicWriteCaching] = tp
			}
			var want bool
			var wantSrc Source
			switch {
			case cl == "disabled":
				want, wantSrc = false, SourceDynamicDefaultBroker
			case tp != "":
				want, wantSrc = tp == "true", SourceDynamicTopic
			case cl != "":
				want, wantSrc = cl == "true", SourceDynamicDefaultBroker
			default:
				want, wantSrc = false, SourceDefault
			}
			if got := ResolveTopic(topic, cluster).WriteCaching; got != want {
				t.Errorf("cluster=%q topic=%q: WriteCaching %v, want %v", cl, tp, got, want)
			}
			v := find(t, DescribeTopic(topic, cluster), TopicWriteCaching)
			if v.Value != map[bool]string{true: "true", false: "false"}[want] || v.Source != wantSrc {
				t.Errorf("cluster=%q topic=%q: described %q source %v, want %v %v", cl, tp, v.Value, v.Source, want, wantSrc)
			}
			if got := ResolveCluster(cluster).WriteCachingDefault; got != map[bool]string{true: cl, false: "false"}[cl != ""] {
				t.Errorf("cluster=%q: WriteCachingDefault %q", cl, got)
			}
		}
	}
}

func TestResolveCluster(t *testing.T) {
	want := withGroupDefaults(ClusterConfig{AutoCreateTopics: true, NumPartitions: 1, DefaultReplicationFactor: 1,
		WriteCachingDefault: "false", RetentionCheckMs: 300000})
	if got := ResolveCluster(nil); got != want {
		t.Fatalf("defaults: got %+v", got)
	}
	got := ResolveCluster(map[string]string{"auto.create.topics.enable": "false", "num.partitions": "6",
		"default.replication.factor": "3", "write_caching_default": "disabled", "log.retention.check.interval.ms": "1000",
		"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector"})
	want = withGroupDefaults(ClusterConfig{AutoCreateTopics: false, NumPartitions: 6, DefaultReplicationFactor: 3,
		WriteCachingDefault: "disabled", RetentionCheckMs: 1000, FollowerFetching: true})
	if got != want {
		t.Fatalf("overrides: got %+v", got)
	}
	if ResolveCluster(map[string]string{"replica.selector.class": "org.apache.kafka.common.replica.LeaderSelector"}).FollowerFetching {
		t.Fatal("the leader selector switched follower fetching on")
	}
}

// withGroupDefaults fills in the group coordinator's defaults, and the leader balancer's.
func withGroupDefaults(c ClusterConfig) ClusterConfig {
	c.AutoLeaderRebalance, c.LeaderImbalanceCheckSeconds, c.LeaderImbalancePerBrokerPct = true, 30, 10
	c.LearnerRecoveryRate = 100 << 20
	c.OffsetsTopicNumPartitions, c.OffsetsTopicReplicationFactor, c.OffsetsTopicSegmentBytes = 16, 3, 104857600
	c.OffsetsRetentionMinutes, c.OffsetsRetentionCheckMs, c.OffsetsCommitTimeoutMs = 10080, 600000, 5000
	c.OffsetMetadataMaxBytes = 4096
	c.GroupMinSessionTimeoutMs, c.GroupMaxSessionTimeoutMs, c.GroupInitialRebalanceDelayMs = 6000, 1800000, 3000
	c.TxnStateLogNumPartitions, c.TxnStateLogReplicationFactor, c.TxnStateLogSegmentBytes, c.TxnStateLogMinISR = 16, 3, 104857600, 2
	c.TxnMaxTimeoutMs, c.TransactionalIDExpirationMs = 900000, 604800000
	c.TxnAbortTimedOutCheckMs, c.TxnRemoveExpiredCheckMs = 10000, 3600000
	return c
}

func TestResolveClusterGroups(t *testing.T) {
	got := ResolveCluster(map[string]string{"offsets.topic.num.partitions": "4", "offsets.topic.replication.factor": "1",
		"offsets.topic.segment.bytes": "2048", "offsets.retention.minutes": "5", "offsets.retention.check.interval.ms": "100",
		"offsets.commit.timeout.ms": "250", "offset.metadata.max.bytes": "10", "group.min.session.timeout.ms": "10",
		"group.max.session.timeout.ms": "20", "group.initial.rebalance.delay.ms": "0"})
	want := withGroupDefaults(ClusterConfig{AutoCreateTopics: true, NumPartitions: 1, DefaultReplicationFactor: 1,
		WriteCachingDefault: "false", RetentionCheckMs: 300000})
	want.OffsetsTopicNumPartitions, want.OffsetsTopicReplicationFactor, want.OffsetsTopicSegmentBytes = 4, 1, 2048
	want.OffsetsRetentionMinutes, want.OffsetsRetentionCheckMs, want.OffsetsCommitTimeoutMs = 5, 100, 250
	want.OffsetMetadataMaxBytes = 10
	want.GroupMinSessionTimeoutMs, want.GroupMaxSessionTimeoutMs, want.GroupInitialRebalanceDelayMs = 10, 20, 0
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestResolveNode(t *testing.T) {
	got, err := ResolveNode(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := NodeConfig{NodeID: 1, ProduceForwarding: true, DataDir: "./cairn-data", KafkaAddr: "localhost:9092",
		AdvertisedKafkaAddr: "localhost:9092", RPCAddr: "localhost:9093", AdvertisedRPCAddr: "localhost:9093", AdminAddr: ":9644", AdminConsole: true, FetchSessionSlots: 1000,
		ReplicaLagTimeMaxMs: 30000, Admin: AdminSecurity{Auth: AdminAuthNone, ProbesOpen: true, ClientAuth: "none"},
		SASLEnabledMechanisms: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"},
		Listeners:             []ListenerConfig{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: "localhost:9092", Advertised: "localhost:9092"}},
		TLS:                   TLSConfig{ClientAuth: "none", PrincipalMappingRules: "DEFAULT"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", got, want)
	}
	got, err = ResolveNode(map[string]string{"node.id": "3", "kafka.addr": ":19092", "seeds": "a:1, b:2", "rack": "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if got.NodeID != 3 || got.AdvertisedKafkaAddr != ":19092" || !slices.Equal(got.Seeds, []string{"a:1", "b:2"}) || got.Rack != "r1" {
		t.Fatalf("got %+v", got)
	}
	got, _ = ResolveNode(map[string]string{"kafka.addr": ":19092", "advertised.kafka.addr": "h:9092"})
	if got.AdvertisedKafkaAddr != "h:9092" {
		t.Fatalf("advertised: %q", got.AdvertisedKafkaAddr)
	}
	got, _ = ResolveNode(map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-512, PLAIN", "connections.max.reauth.ms": "60000"})
	if !slices.Equal(got.SASLEnabledMechanisms, []string{"SCRAM-SHA-512", "PLAIN"}) || got.ConnectionsMaxReauthMs != 60000 {
		t.Fatalf("sasl: %+v", got)
	}
	got, _ = ResolveNode(map[string]string{"rpc.addr": ":19093"})
	if got.RPCAddr != ":19093" || got.AdvertisedRPCAddr != ":19093" {
		t.Fatalf("advertised rpc default: %+v", got)
	}
	got, _ = ResolveNode(map[string]string{"rpc.addr": ":19093", "advertised.rpc.addr": "h:29093"})
	if got.RPCAddr != ":19093" || got.AdvertisedRPCAddr != "h:29093" {
		t.Fatalf("advertised rpc: %+v", got)
	}
	if _, err := ResolveNode(map[string]string{"advertised.rpc.addr": "0.0.0.0:9093"}); err == nil {
		t.Fatal("wildcard advertised.rpc.addr accepted")
	}
	if _, err := ResolveNode(map[string]string{"node.id": "-4"}); err == nil {
		t.Fatal("bad node.id accepted")
	}
	if _, err := ResolveNode(map[string]string{"retention.ms": "4"}); err == nil {
		t.Fatal("topic property accepted as a node value")
	}
}

// replica.lag.time.max.ms is a node property that Cairn enforces (the ISR's window), no
// longer one it refuses; validationCases holds its bad values.
func TestResolveNodeReplicaLag(t *testing.T) {
	got, err := ResolveNode(map[string]string{"replica.lag.time.max.ms": "2000"})
	if err != nil || got.ReplicaLagTimeMaxMs != 2000 {
		t.Fatalf("2000: %+v %v", got.ReplicaLagTimeMaxMs, err)
	}
	if _, err := ResolveNode(map[string]string{"replica.lag.time.max.ms": "500"}); err == nil ||
		err.Error() != `invalid value "500" for replica.lag.time.max.ms: out of range; valid values: 1000 to 86400000` {
		t.Errorf("500: %v", err)
	}
	if _, refused := LookupRefused("replica.lag.time.max.ms"); refused {
		t.Error("replica.lag.time.max.ms is still listed as refused")
	}
}

func find(t *testing.T, vs []Value, name string) Value {
	t.Helper()
	for _, v := range vs {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("%s not described", name)
	return Value{}
}

func TestDescribeTopicSourcesAndSynonyms(t *testing.T) {
	topic := map[string]string{"retention.ms": "1000", "segment.bytes": "2048", "write.caching": "true"}
	cluster := map[string]string{"log.retention.ms": "2000", "log.retention.bytes": "3000", "write_caching_default": "disabled"}
	vs := DescribeTopic(topic, cluster)

	if names := func() (n []string) {
		for _, v := range vs {
			n = append(n, v.Name)
		}
		return
	}(); !slices.Equal(names, TopicPropertyNames()) {
		t.Fatalf("described %v, want every topic property %v", names, TopicPropertyNames())
	}
	tests := []struct {
		name  string
		value string
		src   Source
		typ   int8
		syn   []Synonym
	}{
		{"retention.ms", "1000", SourceDynamicTopic, KafkaTypeLong, []Synonym{
			{"retention.ms", "1000", SourceDynamicTopic},
			{"log.retention.ms", "2000", SourceDynamicDefaultBroker},
			{"log.retention.ms", "604800000", SourceDefault}}},
		{"retention.bytes", "3000", SourceDynamicDefaultBroker, KafkaTypeLong, []Synonym{
			{"log.retention.bytes", "3000", SourceDynamicDefaultBroker},
			{"log.retention.bytes", "-1", SourceDefault}}},
		{"segment.bytes", "2048", SourceDynamicTopic, KafkaTypeInt, []Synonym{
			{"segment.bytes", "2048", SourceDynamicTopic},
			{"log.segment.bytes", "1073741824", SourceDefault}}},
		{"segment.ms", "604800000", SourceDefault, KafkaTypeLong, []Synonym{
			{"log.roll.ms", "604800000", SourceDefault}}},
		{"cleanup.policy", "delete", SourceDefault, KafkaTypeList, []Synonym{
			{"log.cleanup.policy", "delete", SourceDefault}}},
		{"min.insync.replicas", "1", SourceDefault, KafkaTypeInt, []Synonym{
			{"min.insync.replicas", "1", SourceDefault}}},
		{"min.insync.racks", "1", SourceDefault, KafkaTypeInt, []Synonym{
			{"min.insync.racks", "1", SourceDefault}}},
		{"compression.type", "producer", SourceDefault, KafkaTypeString, nil},
		// disabled wins: the value is false and the cluster setting is its source, while the
		// synonyms still show the topic's own setting.
		{"write.caching", "false", SourceDynamicDefaultBroker, KafkaTypeBoolean, []Synonym{
			{"write.caching", "true", SourceDynamicTopic},
			{"write_caching_default", "disabled", SourceDynamicDefaultBroker},
			{"write_caching_default", "false", SourceDefault}}},
	}
	for _, tt := range tests {
		v := find(t, vs, tt.name)
		if v.Value != tt.value || v.Source != tt.src || v.Type != tt.typ || v.ReadOnly || v.Sensitive || v.Doc == "" {
			t.Errorf("%s: got value %q source %v type %d ro %v doc %q", tt.name, v.Value, v.Source, v.Type, v.ReadOnly, v.Doc)
		}
		if tt.syn != nil && !reflect.DeepEqual(v.Synonyms, tt.syn) {
			t.Errorf("%s synonyms:\n got %+v\nwant %+v", tt.name, v.Synonyms, tt.syn)
		}
	}
}

func TestDescribeSynonymsMatchValue(t *testing.T) {
	// Apart from write.caching under disabled, the value and source are the first synonym's.
	topic := map[string]string{"flush.ms": "5"}
	cluster := map[string]string{"log.flush.interval.ms": "9", "message.max.bytes": "77"}
	for _, v := range DescribeTopic(topic, cluster) {
		if len(v.Synonyms) == 0 || v.Synonyms[0].Value != v.Value || v.Synonyms[0].Source != v.Source {
			t.Errorf("%s: value %q/%v, synonyms %+v", v.Name, v.Value, v.Source, v.Synonyms)
		}
		if last := v.Synonyms[len(v.Synonyms)-1]; last.Source != SourceDefault {
			t.Errorf("%s: last synonym is not the default: %+v", v.Name, last)
		}
	}
}

func TestDescribeBroker(t *testing.T) {
	node := map[string]string{"node.id": "2", "data.dir": "/d", "kafka.addr": "0.0.0.0:9092"}
	cluster := map[string]string{"num.partitions": "3", "log.segment.bytes": "2048"}
	vs := DescribeBroker(node, cluster)

	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	want := append(ClusterPropertyNames(), NodePropertyNames()...)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("described %v\nwant %v", names, want)
	}
	tests := []struct {
		name  string
		value string
		src   Source
		ro    bool
		syn   []Synonym
	}{
		{"num.partitions", "3", SourceDynamicDefaultBroker, false, []Synonym{
			{"num.partitions", "3", SourceDynamicDefaultBroker}, {"num.partitions", "1", SourceDefault}}},
		{"log.segment.bytes", "2048", SourceDynamicDefaultBroker, false, nil},
		{"auto.create.topics.enable", "true", SourceDefault, false, []Synonym{
			{"auto.create.topics.enable", "true", SourceDefault}}},
		{"node.id", "2", SourceStaticBroker, true, []Synonym{
			{"node.id", "2", SourceStaticBroker}, {"node.id", "1", SourceDefault}}},
		{"data.dir", "/d", SourceStaticBroker, true, nil},
		{"rpc.addr", "localhost:9093", SourceDefault, true, []Synonym{{"rpc.addr", "localhost:9093", SourceDefault}}},
		{"rack", "", SourceDefault, true, nil},
		{"advertised.kafka.addr", "0.0.0.0:9092", SourceStaticBroker, true, []Synonym{
			{"kafka.addr", "0.0.0.0:9092", SourceStaticBroker}, {"kafka.addr", "localhost:9092", SourceDefault}}},
	}
	for _, tt := range tests {
		v := find(t, vs, tt.name)
		if v.Value != tt.value || v.Source != tt.src || v.ReadOnly != tt.ro {
			t.Errorf("%s: got %q source %v ro %v", tt.name, v.Value, v.Source, v.ReadOnly)
		}
		if tt.syn != nil && !reflect.DeepEqual(v.Synonyms, tt.syn) {
			t.Errorf("%s synonyms:\n got %+v\nwant %+v", tt.name, v.Synonyms, tt.syn)
		}
	}

	v := find(t, DescribeBroker(map[string]string{"advertised.kafka.addr": "h:1"}, nil), "advertised.kafka.addr")
	if v.Value != "h:1" || v.Source != SourceStaticBroker {
		t.Errorf("advertised set: %+v", v)
	}
	v = find(t, DescribeBroker(nil, nil), "advertised.kafka.addr")
	if v.Value != "localhost:9092" || v.Source != SourceDefault {
		t.Errorf("advertised default: %+v", v)
	}
	v = find(t, DescribeBroker(map[string]string{"advertised.rpc.addr": "h:2"}, nil), "advertised.rpc.addr")
	if v.Value != "h:2" || v.Source != SourceStaticBroker {
		t.Errorf("advertised rpc set: %+v", v)
	}
	v = find(t, DescribeBroker(map[string]string{"rpc.addr": "r:3"}, nil), "advertised.rpc.addr")
	if v.Value != "r:3" || v.Source != SourceStaticBroker || !reflect.DeepEqual(v.Synonyms, []Synonym{
		{"rpc.addr", "r:3", SourceStaticBroker}, {"rpc.addr", "localhost:9093", SourceDefault}}) {
		t.Errorf("advertised rpc from rpc.addr: %+v", v)
	}
	v = find(t, DescribeBroker(map[string]string{"seeds": "a:1 , b:2"}, nil), "seeds")
	if v.Value != "a:1,b:2" || v.Type != KafkaTypeList {
		t.Errorf("seeds: %+v", v)
	}
}

func TestResolveLeaderBalancer(t *testing.T) {
	got := ResolveCluster(map[string]string{"auto.leader.rebalance.enable": "false",
		"leader.imbalance.check.interval.seconds": "2", "leader.imbalance.per.broker.percentage": "0"})
	if got.AutoLeaderRebalance || got.LeaderImbalanceCheckSeconds != 2 || got.LeaderImbalancePerBrokerPct != 0 {
		t.Fatalf("got %+v", got)
	}
	for name, bad := range map[string]string{"leader.imbalance.check.interval.seconds": "0",
		"leader.imbalance.per.broker.percentage": "101", "auto.leader.rebalance.enable": "sometimes"} {
		if _, err := ValidateCluster(name, bad); err == nil {
			t.Errorf("%s=%s accepted", name, bad)
		}
	}
}
