package config

// Topic property names.
const (
	TopicCleanupPolicy     = "cleanup.policy"
	TopicCompressionType   = "compression.type"
	TopicTimestampType     = "message.timestamp.type"
	TopicDeleteRetentionMs = "delete.retention.ms"
	TopicFlushBytes        = "flush.bytes"
	TopicFlushMs           = "flush.ms"
	TopicMaxMessageBytes   = "max.message.bytes"
	TopicMinInsyncRacks    = "min.insync.racks"
	TopicMinInsyncReplicas = "min.insync.replicas"
	TopicRetentionBytes    = "retention.bytes"
	TopicRetentionMs       = "retention.ms"
	TopicSegmentBytes      = "segment.bytes"
	TopicSegmentMs         = "segment.ms"
	TopicWriteCaching      = "write.caching"
)

// Cluster property names.
const (
	ClusterAutoCreateTopicsEnable      = "auto.create.topics.enable"
	ClusterCompressionType             = "compression.type"
	ClusterLogMessageTimestampType     = "log.message.timestamp.type"
	ClusterDefaultReplicationFactor    = "default.replication.factor"
	ClusterLogCleanerDeleteRetentionMs = "log.cleaner.delete.retention.ms"
	ClusterLogCleanupPolicy            = "log.cleanup.policy"
	ClusterLogFlushIntervalBytes       = "log.flush.interval.bytes"
	ClusterLogFlushIntervalMs          = "log.flush.interval.ms"
	ClusterLogRetentionBytes           = "log.retention.bytes"
	ClusterLogRetentionCheckIntervalMs = "log.retention.check.interval.ms"
	ClusterLogRetentionMs              = "log.retention.ms"
	ClusterLogRollMs                   = "log.roll.ms"
	ClusterLogSegmentBytes             = "log.segment.bytes"
	ClusterMessageMaxBytes             = "message.max.bytes"
	ClusterMinInsyncRacks              = "min.insync.racks"
	ClusterMinInsyncReplicas           = "min.insync.replicas"
	ClusterNumPartitions               = "num.partitions"
	ClusterReplicaSelectorClass        = "replica.selector.class"
	ClusterWriteCachingDefault         = "write_caching_default"
)

// ClusterLearnerRecoveryRate bounds partition-move catch-up traffic (a Cairn name: Kafka's
// throttles are per replica and set by its reassignment tool, see the refused list).
const ClusterLearnerRecoveryRate = "learner.recovery.rate"

// Cluster property names of the leader balancer (internal/broker), Kafka's own names.
const (
	ClusterAutoLeaderRebalanceEnable        = "auto.leader.rebalance.enable"
	ClusterLeaderImbalanceCheckIntervalSecs = "leader.imbalance.check.interval.seconds"
	ClusterLeaderImbalancePerBrokerPct      = "leader.imbalance.per.broker.percentage"
)

// Cluster property names of the consumer group coordinator (internal/group).
const (
	ClusterGroupInitialRebalanceDelayMs  = "group.initial.rebalance.delay.ms"
	ClusterGroupMaxSessionTimeoutMs      = "group.max.session.timeout.ms"
	ClusterGroupMinSessionTimeoutMs      = "group.min.session.timeout.ms"
	ClusterOffsetMetadataMaxBytes        = "offset.metadata.max.bytes"
	ClusterOffsetsCommitTimeoutMs        = "offsets.commit.timeout.ms"
	ClusterOffsetsRetentionCheckInterval = "offsets.retention.check.interval.ms"
	ClusterOffsetsRetentionMinutes       = "offsets.retention.minutes"
	ClusterOffsetsTopicNumPartitions     = "offsets.topic.num.partitions"
	ClusterOffsetsTopicReplicationFactor = "offsets.topic.replication.factor"
	ClusterOffsetsTopicSegmentBytes      = "offsets.topic.segment.bytes"
)

// Cluster property names of the transaction coordinator (internal/txn) and its internal
// topic __transaction_state.
const (
	ClusterTxnStateLogNumPartitions     = "transaction.state.log.num.partitions"
	ClusterTxnStateLogReplicationFactor = "transaction.state.log.replication.factor"
	ClusterTxnStateLogSegmentBytes      = "transaction.state.log.segment.bytes"
	ClusterTxnStateLogMinISR            = "transaction.state.log.min.isr"
	ClusterTxnMaxTimeoutMs              = "transaction.max.timeout.ms"
	ClusterTransactionalIDExpirationMs  = "transactional.id.expiration.ms"
	ClusterTxnAbortTimedOutCheckMs      = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
	ClusterTxnRemoveExpiredCheckMs      = "transaction.remove.expired.transaction.cleanup.interval.ms"
)

// Cluster property names of authorization (Kafka's names; see AuthorizerClassNames).
// They are cluster properties, not Kafka's per-broker ones, so that every broker decides a
// request the same way and a change needs no restart.
const (
	ClusterAllowEveryoneIfNoACLFound = "allow.everyone.if.no.acl.found"
	ClusterAuthorizerClassName       = "authorizer.class.name"
	ClusterSuperUsers                = "super.users"
)

// Kafka's authorizer class names, accepted by authorizer.class.name to turn on Cairn's
// ACL authorizer (which follows both: they agree on every rule), so that Kafka runbooks
// work unchanged.
const (
	AclAuthorizer      = "kafka.security.authorizer.AclAuthorizer"
	StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
)

// Node property names.
const (
	NodeAdminAddr           = "admin.addr"
	NodeAdminConsole        = "admin.console"
	NodeAdvertisedKafkaAddr = "advertised.kafka.addr"
	NodeAdvertisedRPCAddr   = "advertised.rpc.addr"
	NodeDataDir             = "data.dir"
	NodeKafkaAddr           = "kafka.addr"
	NodeID                  = "node.id"
	NodeRack                = "rack"
	NodeRPCAddr             = "rpc.addr"
	NodeProduceForwarding   = "produce.forwarding"
	NodeReplicaLagTimeMaxMs = "replica.lag.time.max.ms"
	NodeSeeds               = "seeds"
	// NodeFetchSessionSlots is Kafka's name for the fetch session cache's size (KIP-227).
	NodeFetchSessionSlots = "max.incremental.fetch.session.cache.slots"

	// Kafka listeners and the TLS material of their SSL and SASL_SSL listeners, under
	// Kafka's and librdkafka's names.
	NodeListeners                   = "listeners"
	NodeAdvertisedListeners         = "advertised.listeners"
	NodeListenerSecurityProtocolMap = "listener.security.protocol.map"
	NodeSSLCertificateLocation      = "ssl.certificate.location"
	NodeSSLKeyLocation              = "ssl.key.location"
	NodeSSLTruststoreLocation       = "ssl.truststore.location"
	NodeSSLClientAuth               = "ssl.client.auth"
	NodeSSLPrincipalMappingRules    = "ssl.principal.mapping.rules"
	NodeSASLEnabledMechanisms       = "sasl.enabled.mechanisms"
	NodeConnectionsMaxReauthMs      = "connections.max.reauth.ms"
)

// Values of replica.selector.class: Kafka's class names, so that Kafka runbooks work
// unchanged. The leader selector (Kafka's default, also the empty value) serves consumers
// from the leader only; the rack-aware one lets a consumer that sends its rack read from a
// replica in that rack (KIP-392).
const (
	LeaderSelector           = "org.apache.kafka.common.replica.LeaderSelector"
	RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
)

// Values of write_caching_default.
const (
	WriteCachingTrue     = "true"
	WriteCachingFalse    = "false"
	WriteCachingDisabled = "disabled"
)
