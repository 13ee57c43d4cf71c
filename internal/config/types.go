package config

import "strconv"

// Source mirrors Kafka's DescribeConfigs ConfigSource numbers.
type Source int8

const (
	SourceUnknown              Source = 0
	SourceDynamicTopic         Source = 1
	SourceDynamicBroker        Source = 2 // never reported: Cairn has no per-broker dynamic values
	SourceDynamicDefaultBroker Source = 3
	SourceStaticBroker         Source = 4
	SourceDefault              Source = 5
)

// String returns Kafka's name for the source, e.g. DYNAMIC_TOPIC_CONFIG.
func (s Source) String() string {
	switch s {
	case SourceDynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBroker:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStaticBroker:
		return "STATIC_BROKER_CONFIG"
	case SourceDefault:
		return "DEFAULT_CONFIG"
	default:
		return "UNKNOWN"
	}
}

// Scope says where a property is set.
type Scope int

const (
	ScopeNode Scope = iota
	ScopeCluster
	ScopeTopic
)

// String returns "node", "cluster" or "topic".
func (s Scope) String() string {
	switch s {
	case ScopeNode:
		return "node"
	case ScopeCluster:
		return "cluster"
	case ScopeTopic:
		return "topic"
	default:
		return "scope(" + strconv.Itoa(int(s)) + ")"
	}
}

// Type is a property's value type in the registry.
type Type int8

const (
	TypeBool   Type = iota + 1 // "true" or "false"
	TypeString                 // free text, checked by the property's own rules
	TypeInt                    // 32-bit signed integer
	TypeShort                  // 16-bit signed integer
	TypeLong                   // 64-bit signed integer
	TypeEnum                   // one of a fixed set of strings
	TypeList                   // comma-separated list of strings
)

// String returns the type's name as the documentation spells it.
func (t Type) String() string {
	switch t {
	case TypeBool:
		return "bool"
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeShort:
		return "short"
	case TypeLong:
		return "long"
	case TypeEnum:
		return "enum"
	case TypeList:
		return "list"
	default:
		return "type(" + strconv.Itoa(int(t)) + ")"
	}
}

// Kafka ConfigType numbers, as DescribeConfigs reports them.
const (
	KafkaTypeBoolean int8 = 1
	KafkaTypeString  int8 = 2
	KafkaTypeInt     int8 = 3
	KafkaTypeShort   int8 = 4
	KafkaTypeLong    int8 = 5
	KafkaTypeDouble  int8 = 6
	KafkaTypeList    int8 = 7
)

// KafkaType returns the Kafka ConfigType number for t. Enums are reported as STRING.
func (t Type) KafkaType() int8 {
	switch t {
	case TypeBool:
		return KafkaTypeBoolean
	case TypeInt:
		return KafkaTypeInt
	case TypeShort:
		return KafkaTypeShort
	case TypeLong:
		return KafkaTypeLong
	case TypeList:
		return KafkaTypeList
	default:
		return KafkaTypeString
	}
}

// Error is a validation failure; the Kafka layer answers it with INVALID_CONFIG (40) and Msg.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Synonym is one of the places a described value could come from, most specific first.
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
	CleanupPolicy     string // canonical: "delete", "compact" or "compact,delete"
	DeleteRetentionMs int64
	RetentionMs       int64
	RetentionBytes    int64
	SegmentBytes      int64
	SegmentMs         int64
	MaxMessageBytes   int32
	WriteCaching      bool
	FlushMs           int64
	FlushBytes        int64
	MinInsyncReplicas int
	MinInsyncRacks    int // 1 is off
}

// ClusterConfig is the effective, typed cluster-wide configuration.
type ClusterConfig struct {
	AutoCreateTopics         bool
	NumPartitions            int32
	DefaultReplicationFactor int16
	WriteCachingDefault      string
	RetentionCheckMs         int64
	// FollowerFetching: replica.selector.class is the rack-aware selector.
	FollowerFetching bool

	// The leader balancer.
	AutoLeaderRebalance         bool
	LeaderImbalanceCheckSeconds int64
	LeaderImbalancePerBrokerPct int

	// LearnerRecoveryRate is learner.recovery.rate: bytes per second to learners, 0 unbounded.
	LearnerRecoveryRate int64

	// Authorization: authorizer.class.name set, super.users as validated (";"-separated),
	// allow.everyone.if.no.acl.found.
	AuthorizerEnabled         bool
	SuperUsers                string
	AllowEveryoneIfNoACLFound bool

	// Consumer group coordinator and __consumer_offsets.
	OffsetsTopicNumPartitions     int32
	OffsetsTopicReplicationFactor int16
	OffsetsTopicSegmentBytes      int32
	OffsetsRetentionMinutes       int64
	OffsetsRetentionCheckMs       int64
	OffsetsCommitTimeoutMs        int64
	OffsetMetadataMaxBytes        int32
	GroupMinSessionTimeoutMs      int64
	GroupMaxSessionTimeoutMs      int64
	GroupInitialRebalanceDelayMs  int64

	// Transaction coordinator and __transaction_state.
	TxnStateLogNumPartitions     int32
	TxnStateLogReplicationFactor int16
	TxnStateLogSegmentBytes      int32
	TxnStateLogMinISR            int32
	TxnMaxTimeoutMs              int32
	TransactionalIDExpirationMs  int64
	TxnAbortTimedOutCheckMs      int64
	TxnRemoveExpiredCheckMs      int64
}

// NodeConfig is one node's effective, typed startup configuration.
type NodeConfig struct {
	NodeID              int32
	DataDir             string
	KafkaAddr           string
	AdvertisedKafkaAddr string // kafka.addr when not set
	RPCAddr             string
	AdvertisedRPCAddr   string // rpc.addr when not set
	AdminAddr           string
	AdminConsole        bool   // serve /console
	Rack                string // "" when the node declares no rack
	Seeds               []string
	ProduceForwarding   bool
	ReplicaLagTimeMaxMs int64 // the ISR's lag window
	FetchSessionSlots   int   // max.incremental.fetch.session.cache.slots
	RPCTLS              RPCTLS
	Admin               AdminSecurity
	// Listeners are the Kafka listeners, in the order configured: from listeners, or one
	// PLAINTEXT listener on KafkaAddr (advertising AdvertisedKafkaAddr) when it is not set.
	Listeners []ListenerConfig
	TLS       TLSConfig
	// SASLEnabledMechanisms are the SASL mechanisms served, in the order given.
	SASLEnabledMechanisms []string
	// ConnectionsMaxReauthMs is the SASL session lifetime (KIP-368); 0 is unlimited.
	ConnectionsMaxReauthMs int64
}
