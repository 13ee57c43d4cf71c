// Package config owns Cairn's property registry: every node, cluster and topic property
// Cairn accepts, with its type, default, valid range, scope and what enforces it. It
// validates values, resolves effective topic and cluster settings with their sources, and
// generates docs/configuration.md. It must not act on any value itself; it stores no state
// beyond what callers hand it.
package config

// THIS FILE IS A TEMPORARY STUB describing the API; the config implementer replaces it.

// Source mirrors Kafka's DescribeConfigs ConfigSource numbers.
type Source int8

const (
	SourceUnknown              Source = 0
	SourceDynamicTopic         Source = 1
	SourceDynamicBroker        Source = 2
	SourceDynamicDefaultBroker Source = 3
	SourceStaticBroker         Source = 4
	SourceDefault              Source = 5
)

type Scope int

const (
	ScopeNode Scope = iota
	ScopeCluster
	ScopeTopic
)

// Error is a validation failure; the Kafka layer answers it with INVALID_CONFIG (40) and Msg.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

type Synonym struct {
	Name   string
	Value  string
	Source Source
}

// Value is one described property.
type Value struct {
	Name      string
	Value     string
	Source    Source
	ReadOnly  bool
	Sensitive bool
	Type      int8 // Kafka ConfigType: 1 BOOLEAN, 2 STRING, 3 INT, 4 SHORT, 5 LONG, 6 DOUBLE, 7 LIST
	Doc       string
	Synonyms  []Synonym
}

// TopicConfig is a topic's effective, typed configuration.
type TopicConfig struct {
	CleanupPolicy     string
	RetentionMs       int64
	RetentionBytes    int64
	SegmentBytes      int64
	SegmentMs         int64
	MaxMessageBytes   int32
	WriteCaching      bool
	FlushMs           int64
	FlushBytes        int64
	MinInsyncReplicas int
}

// ClusterConfig is the effective, typed cluster-wide configuration.
type ClusterConfig struct {
	AutoCreateTopics         bool
	NumPartitions            int32
	DefaultReplicationFactor int16
	WriteCachingDefault      string
	RetentionCheckMs         int64
}

func ValidateTopic(name, value string) (string, error)   { return value, nil }
func ValidateCluster(name, value string) (string, error) { return value, nil }
func ResolveTopic(topicOverrides, clusterOverrides map[string]string) TopicConfig {
	return TopicConfig{CleanupPolicy: "delete", RetentionMs: 604800000, RetentionBytes: -1, SegmentBytes: 1 << 30, SegmentMs: 604800000, MaxMessageBytes: 1048588, FlushMs: 100, FlushBytes: 262144, MinInsyncReplicas: 1}
}
func ResolveCluster(clusterOverrides map[string]string) ClusterConfig {
	return ClusterConfig{AutoCreateTopics: true, NumPartitions: 1, DefaultReplicationFactor: 1, WriteCachingDefault: "false", RetentionCheckMs: 300000}
}
func DescribeTopic(topicOverrides, clusterOverrides map[string]string) []Value { return nil }
func DescribeBroker(nodeValues map[string]string, clusterOverrides map[string]string) []Value {
	return nil
}
