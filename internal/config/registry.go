package config

import (
	"math"
	"slices"
	"strings"
)

// Property is one registry entry.
type Property struct {
	Name        string
	Scope       Scope
	Type        Type
	Default     string // canonical built-in default; "" for advertised.*.addr means DefaultFrom
	Valid       string // the valid values, as docs and error messages state them
	Description string // one line
	EnforcedBy  string // the component and behaviour that enforce it, e.g. "storage: segment roll"
	// Synonym is, for a topic property, the cluster property that supplies its default
	// (Kafka's synonym, e.g. log.segment.bytes for segment.bytes). Empty otherwise.
	Synonym string
	// Flag is, for a node property, the `cairn start` flag that sets it, e.g. "--data-dir".
	Flag string
	// DefaultFrom is, for a node property whose default is another node property's
	// value, that property's name (advertised.kafka.addr defaults to kafka.addr).
	DefaultFrom string

	check func(name, value string) (string, error)
}

// ReadOnly reports whether the property cannot be changed at run time (node properties).
func (p Property) ReadOnly() bool { return p.Scope == ScopeNode }

// Validate checks value against p's rules and returns its canonical form, or an *Error.
func (p Property) Validate(value string) (string, error) {
	if p.check == nil {
		return "", &Error{Msg: "config: property " + p.Name + " has no rules"}
	}
	return p.check(p.Name, value)
}

// Refused is a well-known Kafka property that Cairn refuses because it does not enforce it.
type Refused struct {
	Name       string // exact name, or a prefix ending in "*" (e.g. "log.cleaner.*")
	KafkaScope string // "topic" or "broker": where Kafka accepts it
	Reason     string // why Cairn does not enforce it
}

// Message is the refusal message returned for name, which matches r.
func (r Refused) Message(name string) string {
	return name + " is a Kafka " + r.KafkaScope + " property that Cairn does not enforce (" +
		r.Reason + "), so it is refused rather than silently ignored"
}

func (r Refused) matches(name string) bool {
	if p, ok := strings.CutSuffix(r.Name, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return r.Name == name
}

// RefusedValue describes values of an accepted property that Cairn refuses.
type RefusedValue struct {
	Name   string // property name
	Values string // the refused values
	Reason string
}

type registry struct {
	props   []Property // sorted by scope (topic, cluster, node) then name
	byScope [3]map[string]int
	refused []Refused
}

var reg = build()

func topicPair(topic, cluster string, s spec, def, desc, enforcedBy string) []Property {
	return []Property{
		{Name: topic, Scope: ScopeTopic, Type: s.typ, Default: def, Valid: s.valid,
			Description: desc, EnforcedBy: enforcedBy, Synonym: cluster, check: s.check},
		{Name: cluster, Scope: ScopeCluster, Type: s.typ, Default: def, Valid: s.valid,
			Description: "Cluster-wide default of the topic property " + topic + ".",
			EnforcedBy:  enforcedBy + " (through " + topic + ")", check: s.check},
	}
}

// The bounds of replica.lag.time.max.ms: below a second a follower that is merely between
// heartbeats (and, at the top, a dead one) would count wrongly for a long time.
const (
	minReplicaLagMs = 1000
	maxReplicaLagMs = 86_400_000
)

func build() *registry {
	var ps []Property
	add := func(p ...Property) { ps = append(ps, p...) }

	// Topic properties and the cluster properties that supply their defaults.
	add(topicPair(TopicCleanupPolicy, ClusterLogCleanupPolicy, cleanupPolicySpec(), "delete",
		"What happens to old data: delete removes whole segments by retention.ms and retention.bytes; compact keeps only the latest record of each key (every record needs a key; tombstones go after delete.retention.ms); compact,delete does both.",
		"storage: retention and compaction; partition: produce validation (keys on compacted topics)")...)
	add(topicPair(TopicDeleteRetentionMs, ClusterLogCleanerDeleteRetentionMs, numSpec(TypeLong, 0, math.MaxInt64, false), "86400000",
		"In a compacted topic, how long in milliseconds a tombstone (a record with a null value) is kept after compaction first rewrote its segment, so consumers reading from the start within that time see the deletion.",
		"storage: compaction's tombstone removal")...)
	add(topicPair(TopicCompressionType, ClusterCompressionType, compressionSpec(), "producer",
		"Compression of stored batches: producer keeps each batch in the codec the producer chose (compaction rewrites a batch with that same codec).",
		"storage: batches stored and served as produced")...)
	add(topicPair(TopicTimestampType, ClusterLogMessageTimestampType, timestampTypeSpec(), "CreateTime",
		"Which timestamp records carry: CreateTime, the one the producer set, kept as produced.",
		"storage: batches stored and served as produced")...)
	add(topicPair(TopicRetentionMs, ClusterLogRetentionMs, numSpec(TypeLong, 1, math.MaxInt64, true), "604800000",
		"Time-based retention: data older than this many milliseconds is deleted, a whole segment at a time; -1 keeps data regardless of age.",
		"storage: time retention")...)
	add(topicPair(TopicRetentionBytes, ClusterLogRetentionBytes, numSpec(TypeLong, 1, math.MaxInt64, true), "-1",
		"Size-based retention per partition: the oldest segments are deleted while the partition is larger than this; -1 means no size limit.",
		"storage: size retention")...)
	add(topicPair(TopicSegmentBytes, ClusterLogSegmentBytes, numSpec(TypeInt, 1024, math.MaxInt32, false), "1073741824",
		"Segment size in bytes at which the active segment is closed and a new one started (Cairn's minimum is 1024 bytes).",
		"storage: segment roll by size")...)
	add(topicPair(TopicSegmentMs, ClusterLogRollMs, numSpec(TypeLong, 1, math.MaxInt64, false), "604800000",
		"Age in milliseconds at which the active segment is closed and a new one started, even if it is not full.",
		"storage: segment roll by age")...)
	add(topicPair(TopicMaxMessageBytes, ClusterMessageMaxBytes, numSpec(TypeInt, 0, math.MaxInt32, false), "1048588",
		"Largest record batch, in bytes as sent by the producer, that a produce request may carry for this topic.",
		"partition: produce validation")...)
	add(topicPair(TopicWriteCaching, ClusterWriteCachingDefault, boolSpec(), "false",
		"Acknowledge acks=all writes, and let consumers read them, once a majority has written them, before fsync; background flushes follow flush.ms and flush.bytes. Forced off when write_caching_default is disabled.",
		"partition: acks=all completion and consumer visibility")...)
	add(topicPair(TopicFlushMs, ClusterLogFlushIntervalMs, numSpec(TypeLong, 0, math.MaxInt64, false), "100",
		"Under write caching, the longest time in milliseconds appended data waits for a background fsync; 0 flushes after every append.",
		"partition: background flush under write caching")...)
	add(topicPair(TopicFlushBytes, ClusterLogFlushIntervalBytes, numSpec(TypeLong, 1, math.MaxInt64, false), "262144",
		"Under write caching, how many unflushed bytes trigger a background fsync (whichever of flush.ms and flush.bytes comes first).",
		"partition: background flush under write caching")...)
	add(topicPair(TopicMinInsyncReplicas, ClusterMinInsyncReplicas, numSpec(TypeInt, 1, math.MaxInt32, false), "1",
		"In-sync replicas an acks=all write needs to be admitted, and replicas that must hold it before it succeeds; capped at the replication factor.",
		"partition: acks=all admission and completion")...)
	add(topicPair(TopicMinInsyncRacks, ClusterMinInsyncRacks, numSpec(TypeInt, 1, math.MaxInt32, false), "1",
		"Distinct declared racks (--rack) the in-sync replicas must span to admit an acks=all write, and that the replicas holding it must span before it succeeds; 1 is off. A broker without a rack counts for none. Not capped: a value above the declared racks of a partition's replicas is refused.",
		"partition: acks=all admission and completion; broker: refused above the declared racks of a partition's replicas")...)

	// write_caching_default is an enum, not the bool of write.caching: replace the pair's
	// cluster half.
	for i := range ps {
		if ps[i].Name == ClusterWriteCachingDefault {
			s := enumSpec(WriteCachingTrue, WriteCachingFalse, WriteCachingDisabled)
			ps[i].Type, ps[i].Valid, ps[i].check = s.typ, s.valid, s.check
			ps[i].Description = "Write caching for topics that do not set write.caching (true or false); disabled forces it off for every topic, whatever write.caching says."
			ps[i].EnforcedBy = "partition: acks=all completion and consumer visibility (through each topic's effective write.caching)"
		}
	}

	// Cluster-only properties.
	cluster := func(name string, s spec, def, desc, enforcedBy string) {
		add(Property{Name: name, Scope: ScopeCluster, Type: s.typ, Default: def, Valid: s.valid,
			Description: desc, EnforcedBy: enforcedBy, check: s.check})
	}
	cluster(ClusterAutoCreateTopicsEnable, boolSpec(), "true",
		"Create a topic with the default settings when a client's Metadata request names a missing topic and allows auto-creation.",
		"broker: Metadata auto-creation")
	cluster(ClusterNumPartitions, numSpec(TypeInt, 1, math.MaxInt32, false), "1",
		"Partition count of topics created without one (auto-created, or CreateTopics with -1).",
		"controller: topic creation")
	cluster(ClusterDefaultReplicationFactor, numSpec(TypeShort, 1, math.MaxInt16, false), "1",
		"Replication factor of topics created without one (auto-created, or CreateTopics with -1).",
		"controller: topic creation")
	cluster(ClusterLogRetentionCheckIntervalMs, numSpec(TypeLong, 1, math.MaxInt64, false), "300000",
		"How often, in milliseconds, retention checks each partition for data to delete and compaction for records to remove.",
		"storage: retention and compaction schedule")

	cluster(ClusterReplicaSelectorClass, replicaSelectorSpec(), "",
		"Which replica a consumer reads from (KIP-392): "+RackAwareReplicaSelector+" lets a consumer that sends its rack (client.rack) read from an in-sync replica in that rack, never above what the leader has made visible; empty or "+LeaderSelector+" reads from the leader only. Kafka's own property and class names, but dynamic here: a change applies to the next Fetch.",
		"kafka: Fetch (preferred read replica) and ListOffsets on a follower; partition: follower reads bounded by the leader's last visible offset")

	cluster(ClusterLearnerRecoveryRate, numSpec(TypeLong, 0, math.MaxInt64, false), "104857600",
		"Bytes per second each broker sends to the learners it is catching up (the replicas a partition move adds), over all its partitions, so that moves do not starve producers and followers; 0 leaves it unbounded. Appends to voters are never paced. A change applies within a second.",
		"raft: outbound appends to learners (HostOptions.LearnerRate)")

	// Authorization (internal/broker, authorize.go; internal/security). Cluster scope, unlike
	// Kafka's per-broker settings, so that every broker gives the same verdict.
	cluster(ClusterAuthorizerClassName, authorizerSpec(), "",
		"Turns on ACL authorization: "+AclAuthorizer+" or "+StandardAuthorizer+" (Kafka's names; both select Cairn's built-in authorizer, which follows Kafka's rules); empty is off, and every request is allowed. On with no ACLs, everyone but the super users is denied. A change applies to the next request on every broker.",
		"broker: ACL authorization of every Kafka request")
	cluster(ClusterSuperUsers, superUsersSpec(), "",
		"Principals allowed everything whatever the ACLs say, separated by semicolons (User:admin;User:ops). A client of a listener without authentication is User:ANONYMOUS.",
		"broker: ACL authorization")
	cluster(ClusterAllowEveryoneIfNoACLFound, boolSpec(), "false",
		"With authorization on, allow a request on a resource that no ACL at all applies to (as Kafka's property of that name); once any ACL applies to the resource, only the ACLs decide.",
		"broker: ACL authorization")

	// The leader balancer (internal/broker, balancer.go), under Kafka's names and meanings.
	cluster(ClusterAutoLeaderRebalanceEnable, boolSpec(), "true",
		"Run the leader balancer: the controller leader moves leaderships back to each partition's preferred replica (the first of its assignment), by Raft leadership transfer only, when that replica is live, in the ISR and not in maintenance.",
		"broker: leader balancer on the controller leader")
	cluster(ClusterLeaderImbalanceCheckIntervalSecs, numSpec(TypeLong, 1, 86400, false), "30",
		"How often, in seconds, the leader balancer checks the leaderships; a change applies from the next check (Kafka's default is 300; Cairn's is shorter, so a broker that came back gets its share within a minute).",
		"broker: leader balancer schedule")
	cluster(ClusterLeaderImbalancePerBrokerPct, numSpec(TypeInt, 0, 100, false), "10",
		"The share, in percent, of a broker's preferred partitions that may be led elsewhere before the balancer moves them back to it; 0 moves every movable one at each check.",
		"broker: leader balancer trigger")

	// Consumer group coordinator (internal/group) and its internal topic __consumer_offsets.
	cluster(ClusterOffsetsTopicNumPartitions, numSpec(TypeInt, 1, 1000, false), "16",
		"Partition count of __consumer_offsets; read only when the broker creates that topic (first start), since a group's partition is a hash of its id modulo this count and changing it later would move every group, so a later change has no effect.",
		"broker: creation of __consumer_offsets")
	cluster(ClusterOffsetsTopicReplicationFactor, numSpec(TypeShort, 1, math.MaxInt16, false), "3",
		"Replication factor of __consumer_offsets, capped at the number of live brokers; read only when the broker creates that topic.",
		"broker: creation of __consumer_offsets")
	cluster(ClusterOffsetsTopicSegmentBytes, numSpec(TypeInt, 1024, math.MaxInt32, false), "104857600",
		"segment.bytes of __consumer_offsets; read only when the broker creates that topic (change it afterwards on the topic itself).",
		"broker: creation of __consumer_offsets")
	cluster(ClusterOffsetsRetentionMinutes, numSpec(TypeInt, 1, math.MaxInt32, false), "10080",
		"Committed offsets of a group are deleted (tombstoned) this many minutes after the group became empty, or after the commit for groups that never had members.",
		"group: offset expiry")
	cluster(ClusterOffsetsRetentionCheckInterval, numSpec(TypeLong, 1, math.MaxInt64, false), "600000",
		"How often, in milliseconds, the group coordinator looks for expired offsets and empty groups to delete.",
		"group: offset expiry schedule")
	cluster(ClusterOffsetsCommitTimeoutMs, numSpec(TypeInt, 1, math.MaxInt32, false), "5000",
		"How long, in milliseconds, an offset commit or group metadata write waits to become as durable as an acks=-1 write before it fails with COORDINATOR_NOT_AVAILABLE.",
		"group: offset commit and group metadata writes")
	cluster(ClusterOffsetMetadataMaxBytes, numSpec(TypeInt, 0, math.MaxInt32, false), "4096",
		"Largest metadata string a committed offset may carry; a longer one gets OFFSET_METADATA_TOO_LARGE and is not stored.",
		"group: OffsetCommit validation")
	cluster(ClusterGroupMinSessionTimeoutMs, numSpec(TypeInt, 1, math.MaxInt32, false), "6000",
		"Smallest session.timeout.ms a group member may ask for; a JoinGroup below it gets INVALID_SESSION_TIMEOUT.",
		"group: JoinGroup validation")
	cluster(ClusterGroupMaxSessionTimeoutMs, numSpec(TypeInt, 1, math.MaxInt32, false), "1800000",
		"Largest session.timeout.ms a group member may ask for; a JoinGroup above it gets INVALID_SESSION_TIMEOUT.",
		"group: JoinGroup validation")
	cluster(ClusterGroupInitialRebalanceDelayMs, numSpec(TypeInt, 0, math.MaxInt32, false), "3000",
		"How long, in milliseconds, the first rebalance of an empty group waits for more members to join (extended by each newcomer, up to the rebalance timeout) before it completes.",
		"group: rebalance of an empty group")

	// Transaction coordinator (internal/txn) and its internal topic __transaction_state.
	cluster(ClusterTxnStateLogNumPartitions, numSpec(TypeInt, 1, 1000, false), "16",
		"Partition count of __transaction_state; read only when the broker creates that topic, since a transactional id's partition is a hash of the id modulo this count, so a later change has no effect (Kafka's default is 50; Cairn's, as for __consumer_offsets, is 16: each partition is a Raft group).",
		"broker: creation of __transaction_state")
	cluster(ClusterTxnStateLogReplicationFactor, numSpec(TypeShort, 1, math.MaxInt16, false), "3",
		"Replication factor of __transaction_state, capped at the number of live brokers; read only when the broker creates that topic.",
		"broker: creation of __transaction_state")
	cluster(ClusterTxnStateLogSegmentBytes, numSpec(TypeInt, 1024, math.MaxInt32, false), "104857600",
		"segment.bytes of __transaction_state; read only when the broker creates that topic (change it afterwards on the topic itself).",
		"broker: creation of __transaction_state")
	cluster(ClusterTxnStateLogMinISR, numSpec(TypeInt, 1, math.MaxInt16, false), "2",
		"min.insync.replicas of __transaction_state, capped at its replication factor; read only when the broker creates that topic (change it afterwards on the topic itself).",
		"broker: creation of __transaction_state")
	cluster(ClusterTxnMaxTimeoutMs, numSpec(TypeInt, 1, math.MaxInt32, false), "900000",
		"Largest transaction.timeout.ms a transactional producer may ask for; an InitProducerId above it gets INVALID_TRANSACTION_TIMEOUT.",
		"txn: InitProducerId validation")
	cluster(ClusterTransactionalIDExpirationMs, numSpec(TypeInt, 1, math.MaxInt32, false), "604800000",
		"A transactional id with no transaction open is forgotten (tombstoned) this many milliseconds after its last update; its producer then gets a new producer id.",
		"txn: transactional id expiry")
	cluster(ClusterTxnAbortTimedOutCheckMs, numSpec(TypeInt, 1, math.MaxInt32, false), "10000",
		"How often, in milliseconds, the coordinator looks for transactions open longer than their timeout, to abort them and bump the producer's epoch.",
		"txn: transaction timeout schedule")
	cluster(ClusterTxnRemoveExpiredCheckMs, numSpec(TypeInt, 1, math.MaxInt32, false), "3600000",
		"How often, in milliseconds, the coordinator looks for expired transactional ids.",
		"txn: transactional id expiry schedule")

	// Node properties: fixed at `cairn start`.
	node := func(name, flag string, s spec, def, defFrom, desc, enforcedBy string) {
		add(Property{Name: name, Scope: ScopeNode, Type: s.typ, Default: def, Valid: s.valid,
			Description: desc, EnforcedBy: enforcedBy, Flag: flag, DefaultFrom: defFrom, check: s.check})
	}
	node(NodeID, "--node-id", numSpec(TypeInt, 1, math.MaxInt32, false), "1", "",
		"This node's broker id, unique in the cluster.",
		"broker: node identity in Raft, Metadata and placement")
	node(NodeDataDir, "--data-dir", dataDirSpec(), "./cairn-data", "",
		"Directory that holds this node's partition logs and Raft state.",
		"storage: data directory")
	node(NodeKafkaAddr, "--kafka-addr", listenAddrSpec(), "localhost:9092", "",
		"Address the Kafka API listener binds.",
		"kafka: listener")
	node(NodeAdvertisedKafkaAddr, "--advertised-kafka-addr", advertisedAddrSpec(NodeKafkaAddr), "", NodeKafkaAddr,
		"Address clients are told to connect to in Metadata responses; kafka.addr when not set.",
		"broker: Metadata responses")
	node(NodeRPCAddr, "--rpc-addr", listenAddrSpec(), "localhost:9093", "",
		"Address the inter-broker RPC listener binds (Raft transport and request forwarding).",
		"raft: transport")
	node(NodeAdvertisedRPCAddr, "--advertised-rpc-addr", advertisedAddrSpec(NodeRPCAddr), "", NodeRPCAddr,
		"Address other nodes dial to reach this node's inter-broker RPC listener, as registered with the cluster; rpc.addr when not set (set it when rpc.addr binds a wildcard, or when peers reach this node through NAT or a proxy).",
		"broker: cluster registration")
	node(NodeAdminAddr, "--admin-addr", listenAddrSpec(), ":9644", "",
		"Address the admin HTTP server binds (admin API, /metrics, health and readiness).",
		"admin: HTTP server")
	node(NodeAdminConsole, "--admin-console", boolSpec(), "true", "",
		"Serve the web console under /console on the admin port (read-only pages behind the admin API's authentication; docs/operations.md); false leaves the path unserved (404).",
		"admin: web console")
	node(NodeRack, "--rack", rackSpec(), "", "",
		"Rack (failure domain) this node is in; empty declares none.",
		"controller: rack-aware replica placement")
	node(NodeProduceForwarding, "--produce-forwarding", boolSpec(), "true", "",
		"Forward a produce request for a partition this node does not lead to its leader (every acks value); when false such requests get NOT_LEADER_OR_FOLLOWER and clients go to the leader themselves.",
		"broker: produce routing")
	node(NodeReplicaLagTimeMaxMs, "--replica-lag-time-max-ms", numSpec(TypeLong, minReplicaLagMs, maxReplicaLagMs, false), "30000", "",
		"How long, in milliseconds, a follower may go without holding its leader's whole log (flushed, or written under write caching) and still count in the in-sync replicas that min.insync.replicas and min.insync.racks need; at least 1000, so that ordinary pauses between heartbeats and fsyncs do not drop a healthy follower. As in Kafka it is a broker's static setting: the leader's value applies.",
		"partition: the ISR for acks=all admission, Metadata and the min-ISR metrics")
	node(NodeFetchSessionSlots, "--max-incremental-fetch-session-cache-slots", numSpec(TypeInt, 0, 100000, false), "1000", "",
		"How many fetch sessions (KIP-227: a consumer names its partitions once, then sends and gets only what changed) this broker keeps; 0 serves none, and every fetch is then a full one. When all are taken, a new session replaces one idle for 2 minutes, or a smaller one; the sessions together cache at most 500,000 partitions.",
		"kafka: Fetch")
	node(NodeSeeds, "--seeds", seedsSpec(), "", "",
		"RPC addresses (host:port) of other nodes to contact when joining the cluster.",
		"broker: cluster join")
	securityNodeProperties(node)
	node(NodeListeners, "--listeners", listenersSpec(false), "", "",
		"Kafka listeners, NAME://host:port each, comma-separated (e.g. PLAINTEXT://:9092,SSL://:9094); each name's security protocol comes from listener.security.protocol.map. When not set, one PLAINTEXT listener binds kafka.addr; when set, kafka.addr and advertised.kafka.addr must not be.",
		"kafka: listeners")
	node(NodeAdvertisedListeners, "--advertised-listeners", listenersSpec(true), "", "",
		"Addresses clients are told to connect to, per listener (NAME://host:port, names from listeners); Metadata, FindCoordinator and DescribeCluster answer with those of the listener the request came in on. A listener not named here advertises its bind address.",
		"broker: cluster registration and Metadata responses")
	node(NodeListenerSecurityProtocolMap, "--listener-security-protocol-map", protocolMapSpec(), defaultProtocolMap, "",
		"Security protocol of each listener name (NAME:PROTOCOL, comma-separated); PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL map to themselves by default.",
		"kafka: listeners")
	node(NodeSSLCertificateLocation, "--ssl-certificate-location", pathSpec(), "", "",
		"PEM file of the certificate (with its chain) that SSL and SASL_SSL listeners present; reloaded when the file changes, for new connections.",
		"kafka: TLS listeners")
	node(NodeSSLKeyLocation, "--ssl-key-location", pathSpec(), "", "",
		"PEM file of the private key of ssl.certificate.location (unencrypted); reloaded with it.",
		"kafka: TLS listeners")
	node(NodeSSLTruststoreLocation, "--ssl-truststore-location", pathSpec(), "", "",
		"PEM file of the CA certificates that client certificates are verified against (needed when ssl.client.auth is requested or required).",
		"kafka: TLS client authentication")
	node(NodeSSLClientAuth, "--ssl-client-auth", enumSpec("none", "requested", "required"), "none", "",
		"Whether TLS listeners ask clients for a certificate: none; requested (a client may present one, verified if it does); required (a client without a valid one is refused at the handshake). A client's principal is its certificate's mapped subject, User:ANONYMOUS without one.",
		"kafka: TLS client authentication")
	node(NodeSSLPrincipalMappingRules, "--ssl-principal-mapping-rules", principalRulesSpec(), "DEFAULT", "",
		"How a client certificate's subject (RFC 2253, e.g. CN=alice,O=Acme) becomes a principal name: Kafka's RULE:pattern/replacement/[LU] rules, comma-separated, tried in order on the whole subject, and DEFAULT for the subject unchanged; a subject no rule matches is refused.",
		"kafka: TLS principal")
	node(NodeSASLEnabledMechanisms, "--sasl-enabled-mechanisms", saslMechanismsSpec(), "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "",
		"SASL mechanisms a client may authenticate with on a SASL_PLAINTEXT or SASL_SSL listener, comma-separated; SaslHandshake lists them, and any other mechanism gets UNSUPPORTED_SASL_MECHANISM.",
		"kafka: SaslHandshake")
	node(NodeConnectionsMaxReauthMs, "--connections-max-reauth-ms", numSpec(TypeLong, 0, math.MaxInt64, false), "0", "",
		"KIP-368 re-authentication: when above 0, a SASL client is told its session lasts this many milliseconds (SessionLifetimeMs) and must authenticate again on the same connection, as the same user, before it ends; a connection whose session has ended is closed at its next request. 0 lets sessions last as long as their connections.",
		"kafka: SaslAuthenticate and the session check of each request")

	scopeOrder := map[Scope]int{ScopeTopic: 0, ScopeCluster: 1, ScopeNode: 2}
	slices.SortStableFunc(ps, func(a, b Property) int {
		if d := scopeOrder[a.Scope] - scopeOrder[b.Scope]; d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	refused := refusedList()
	slices.SortStableFunc(refused, func(a, b Refused) int {
		if a.KafkaScope != b.KafkaScope {
			return -strings.Compare(a.KafkaScope, b.KafkaScope) // topic before broker
		}
		return strings.Compare(a.Name, b.Name)
	})
	r := &registry{props: ps, refused: refused}
	for i := range r.byScope {
		r.byScope[i] = map[string]int{}
	}
	for i, p := range ps {
		if _, dup := r.byScope[p.Scope][p.Name]; dup {
			panic("config: duplicate property " + p.Scope.String() + " " + p.Name)
		}
		r.byScope[p.Scope][p.Name] = i
	}
	return r
}

func refusedList() []Refused {
	const (
		compaction = "compaction considers every closed, committed segment at each log.retention.check.interval.ms; its pacing is not configurable"
		recompress = "compaction recompresses a batch it rewrites at its codec's default level; the level is not configurable"
		tiered     = "Cairn has no tiered storage"
		timestamps = "Cairn keeps producer timestamps and does not check or rewrite them against broker time yet"
		jks        = "TLS material is read from PEM files only, not Java keystores: convert them (keytool -importkeystore, openssl pkcs12) and set ssl.certificate.location, ssl.key.location and ssl.truststore.location"
		throttle   = "Kafka's per-replica replication throttles are not implemented; the catch-up of the replicas a move adds is bounded per broker by learner.recovery.rate, and followers in the ISR are never throttled"
	)
	return []Refused{
		// Topic properties.
		{Name: "compression.gzip.level", KafkaScope: "topic", Reason: recompress},
		{Name: "compression.lz4.level", KafkaScope: "topic", Reason: recompress},
		{Name: "compression.zstd.level", KafkaScope: "topic", Reason: recompress},
		{Name: "file.delete.delay.ms", KafkaScope: "topic", Reason: "storage decides when files of deleted segments go; the delay is not configurable"},
		{Name: "flush.messages", KafkaScope: "topic", Reason: "Cairn flushes by bytes and time (flush.bytes, flush.ms), not by message count"},
		{Name: "follower.replication.throttled.replicas", KafkaScope: "topic", Reason: throttle},
		{Name: "index.interval.bytes", KafkaScope: "topic", Reason: "storage chooses the spacing of its sparse offset index"},
		{Name: "leader.replication.throttled.replicas", KafkaScope: "topic", Reason: throttle},
		{Name: "local.retention.bytes", KafkaScope: "topic", Reason: tiered},
		{Name: "local.retention.ms", KafkaScope: "topic", Reason: tiered},
		{Name: "max.compaction.lag.ms", KafkaScope: "topic", Reason: compaction},
		{Name: "message.downconversion.enable", KafkaScope: "topic", Reason: "Cairn serves stored RecordBatch v2 bytes as they are and never down-converts"},
		{Name: "message.format.version", KafkaScope: "topic", Reason: "Cairn stores RecordBatch v2 only"},
		{Name: "message.timestamp.after.max.ms", KafkaScope: "topic", Reason: timestamps},
		{Name: "message.timestamp.before.max.ms", KafkaScope: "topic", Reason: timestamps},
		{Name: "message.timestamp.difference.max.ms", KafkaScope: "topic", Reason: timestamps},
		{Name: "min.cleanable.dirty.ratio", KafkaScope: "topic", Reason: compaction},
		{Name: "min.compaction.lag.ms", KafkaScope: "topic", Reason: compaction},
		{Name: "preallocate", KafkaScope: "topic", Reason: "segment files are not preallocated"},
		{Name: "remote.log.copy.disable", KafkaScope: "topic", Reason: tiered},
		{Name: "remote.log.delete.on.disable", KafkaScope: "topic", Reason: tiered},
		{Name: "remote.storage.enable", KafkaScope: "topic", Reason: tiered},
		{Name: "segment.index.bytes", KafkaScope: "topic", Reason: "storage sizes its offset and time indexes itself"},
		{Name: "segment.jitter.ms", KafkaScope: "topic", Reason: "segments roll exactly at segment.ms, without jitter"},
		{Name: "unclean.leader.election.enable", KafkaScope: "topic", Reason: "leaders are elected by Raft from replicas that hold every committed entry, so there is no unclean election to allow"},

		// Broker properties.
		{Name: "ssl.key.password", KafkaScope: "broker", Reason: jks},
		{Name: "ssl.keystore.*", KafkaScope: "broker", Reason: jks},
		{Name: "ssl.truststore.password", KafkaScope: "broker", Reason: jks},
		{Name: "ssl.truststore.type", KafkaScope: "broker", Reason: jks},
		{Name: "follower.replication.throttled.rate", KafkaScope: "broker", Reason: throttle},
		{Name: "leader.replication.throttled.rate", KafkaScope: "broker", Reason: throttle},
		{Name: "log.cleaner.*", KafkaScope: "broker", Reason: "the log cleaner's threads, buffers, I/O limits and ratios are not configurable: " + compaction + " (log.cleaner.delete.retention.ms is accepted)"},
		{Name: "log.flush.interval.messages", KafkaScope: "broker", Reason: "Cairn flushes by bytes and time (log.flush.interval.bytes, log.flush.interval.ms), not by message count"},
		{Name: "log.flush.scheduler.interval.ms", KafkaScope: "broker", Reason: "flushes are driven by each partition's own flush.ms timer, not a global scheduler"},
		{Name: "log.index.interval.bytes", KafkaScope: "broker", Reason: "storage chooses the spacing of its sparse offset index"},
		{Name: "log.index.size.max.bytes", KafkaScope: "broker", Reason: "storage sizes its offset and time indexes itself"},
		{Name: "log.local.retention.bytes", KafkaScope: "broker", Reason: tiered},
		{Name: "log.local.retention.ms", KafkaScope: "broker", Reason: tiered},
		{Name: "log.message.downconversion.enable", KafkaScope: "broker", Reason: "Cairn serves stored RecordBatch v2 bytes as they are and never down-converts"},
		{Name: "log.message.format.version", KafkaScope: "broker", Reason: "Cairn stores RecordBatch v2 only"},
		{Name: "log.message.timestamp.after.max.ms", KafkaScope: "broker", Reason: timestamps},
		{Name: "log.message.timestamp.before.max.ms", KafkaScope: "broker", Reason: timestamps},
		{Name: "log.message.timestamp.difference.max.ms", KafkaScope: "broker", Reason: timestamps},
		{Name: "log.preallocate", KafkaScope: "broker", Reason: "segment files are not preallocated"},
		{Name: "log.retention.hours", KafkaScope: "broker", Reason: "Cairn takes retention in milliseconds only; set log.retention.ms"},
		{Name: "log.retention.minutes", KafkaScope: "broker", Reason: "Cairn takes retention in milliseconds only; set log.retention.ms"},
		{Name: "log.roll.hours", KafkaScope: "broker", Reason: "Cairn takes the roll age in milliseconds only; set log.roll.ms"},
		{Name: "log.roll.jitter.hours", KafkaScope: "broker", Reason: "segments roll exactly at log.roll.ms, without jitter"},
		{Name: "log.roll.jitter.ms", KafkaScope: "broker", Reason: "segments roll exactly at log.roll.ms, without jitter"},
		{Name: "log.segment.delete.delay.ms", KafkaScope: "broker", Reason: "storage decides when files of deleted segments go; the delay is not configurable"},
		{Name: "remote.log.*", KafkaScope: "broker", Reason: tiered},
		{Name: "group.consumer.*", KafkaScope: "broker", Reason: "the KIP-848 consumer group protocol is not served; groups use the classic JoinGroup/SyncGroup protocol"},
		{Name: "group.max.size", KafkaScope: "broker", Reason: "group size is not capped"},
		{Name: "offsets.commit.required.acks", KafkaScope: "broker", Reason: "offset commits are always written with acks=-1"},
		{Name: "offsets.load.buffer.size", KafkaScope: "broker", Reason: "the coordinator sizes its own reads when it replays __consumer_offsets"},
		{Name: "offsets.topic.compression.codec", KafkaScope: "broker", Reason: "the coordinator writes __consumer_offsets uncompressed"},
		{Name: "transaction.state.log.load.buffer.size", KafkaScope: "broker", Reason: "the coordinator sizes its own reads when it replays __transaction_state"},
		{Name: "transaction.partition.verification.enable", KafkaScope: "broker", Reason: "a partition leader always verifies with the coordinator that a transactional producer added the partition (KIP-890) before it appends the transaction's first batch; it cannot be switched off"},
		{Name: "producer.id.expiration.ms", KafkaScope: "broker", Reason: "a partition keeps an idempotent producer's state while that producer's batches remain in the log and forgets it when retention removes them, not after a time"},
	}
}

// refusedValues lists values of accepted properties that are refused, for the docs.
func refusedValues() []RefusedValue {
	return []RefusedValue{
		{Name: TopicCompressionType + " (topic and cluster)", Values: "uncompressed, none, gzip, snappy, lz4, zstd",
			Reason: "Cairn keeps each batch in the codec the producer chose and never converts it to another"},
		{Name: TopicTimestampType + " (topic) and " + ClusterLogMessageTimestampType + " (cluster)", Values: "LogAppendTime",
			Reason: "Cairn stores batches as produced and does not rewrite their timestamps"},
	}
}
