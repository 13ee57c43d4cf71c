package config

import (
	"os"
	"strings"
	"testing"
)

func TestConfigurationDocUpToDate(t *testing.T) {
	got, err := os.ReadFile("../../" + DocPath)
	if err != nil {
		t.Fatalf("%v; generate it with: go run ./internal/config/cmd/gendocs", err)
	}
	if string(got) != Markdown() {
		t.Fatalf("%s is out of date with the registry in internal/config; regenerate it with: go run ./internal/config/cmd/gendocs", DocPath)
	}
}

func TestRegistryInvariants(t *testing.T) {
	for _, p := range All() {
		id := p.Scope.String() + " " + p.Name
		if p.Description == "" || p.EnforcedBy == "" || p.Valid == "" || p.check == nil {
			t.Errorf("%s: missing description, enforced-by, valid values or rules", id)
		}
		if strings.Contains(p.Description, "\n") {
			t.Errorf("%s: description is not one line", id)
		}
		// Every default is valid and canonical (DELETE relies on this).
		if c, err := p.Validate(p.Default); err != nil || c != p.Default {
			t.Errorf("%s: default %q is not canonical: %q, %v", id, p.Default, c, err)
		}
		if _, ok := LookupRefused(p.Name); ok {
			t.Errorf("%s: also on the refused list", id)
		}
		switch p.Scope {
		case ScopeTopic:
			c, ok := Lookup(ScopeCluster, p.Synonym)
			if !ok {
				t.Errorf("%s: synonym %q is not a cluster property", id, p.Synonym)
				continue
			}
			if c.Default != p.Default {
				t.Errorf("%s: default %q differs from %s's %q", id, p.Default, c.Name, c.Default)
			}
			if p.Name != TopicWriteCaching && (c.Type != p.Type || c.Valid != p.Valid) {
				t.Errorf("%s: rules differ from its synonym %s", id, c.Name)
			}
		case ScopeNode:
			if !strings.HasPrefix(p.Flag, "--") || !p.ReadOnly() {
				t.Errorf("%s: node property needs a flag and is read-only", id)
			}
			if p.DefaultFrom != "" && !IsNodeProperty(p.DefaultFrom) {
				t.Errorf("%s: DefaultFrom %q is not a node property", id, p.DefaultFrom)
			}
		default:
			if p.Synonym != "" || p.Flag != "" || p.ReadOnly() {
				t.Errorf("%s: cluster property with synonym, flag or read-only", id)
			}
		}
	}
	for _, r := range RefusedProperties() {
		if r.Reason == "" || (r.KafkaScope != "topic" && r.KafkaScope != "broker") {
			t.Errorf("refused %s: missing reason or bad scope", r.Name)
		}
	}
}

func TestAcceptedProperties(t *testing.T) {
	want := map[Scope][]string{
		ScopeTopic: {"cleanup.policy", "compression.type", "delete.retention.ms", "flush.bytes", "flush.ms", "max.message.bytes",
			"message.timestamp.type", "min.insync.racks", "min.insync.replicas", "retention.bytes", "retention.ms", "segment.bytes", "segment.ms", "write.caching"},
		ScopeCluster: {"allow.everyone.if.no.acl.found", "authorizer.class.name", "auto.create.topics.enable", "auto.leader.rebalance.enable", "compression.type", "default.replication.factor",
			"group.initial.rebalance.delay.ms", "group.max.session.timeout.ms", "group.min.session.timeout.ms",
			"leader.imbalance.check.interval.seconds", "leader.imbalance.per.broker.percentage", "learner.recovery.rate",
			"log.cleaner.delete.retention.ms", "log.cleanup.policy", "log.flush.interval.bytes", "log.flush.interval.ms", "log.message.timestamp.type", "log.retention.bytes",
			"log.retention.check.interval.ms", "log.retention.ms", "log.roll.ms", "log.segment.bytes",
			"message.max.bytes", "min.insync.racks", "min.insync.replicas", "num.partitions",
			"offset.metadata.max.bytes", "offsets.commit.timeout.ms", "offsets.retention.check.interval.ms",
			"offsets.retention.minutes", "offsets.topic.num.partitions", "offsets.topic.replication.factor",
			"offsets.topic.segment.bytes", "replica.selector.class", "super.users",
			"transaction.abort.timed.out.transaction.cleanup.interval.ms", "transaction.max.timeout.ms",
			"transaction.remove.expired.transaction.cleanup.interval.ms", "transaction.state.log.min.isr",
			"transaction.state.log.num.partitions", "transaction.state.log.replication.factor",
			"transaction.state.log.segment.bytes", "transactional.id.expiration.ms", "write_caching_default"},
		ScopeNode: {"admin.addr", "admin.auth", "admin.auth.probes.open", "admin.console", "admin.tls.certificate.location", "admin.tls.client.auth", "admin.tls.key.location", "admin.tls.truststore.location", "advertised.kafka.addr", "advertised.listeners", "advertised.rpc.addr", "connections.max.reauth.ms", "data.dir", "kafka.addr", "listener.security.protocol.map", "listeners", "max.incremental.fetch.session.cache.slots", "node.id", "produce.forwarding", "rack", "replica.lag.time.max.ms", "rpc.addr", "rpc.tls.certificate.location", "rpc.tls.enabled", "rpc.tls.key.location", "rpc.tls.truststore.location", "sasl.enabled.mechanisms", "seeds", "ssl.certificate.location", "ssl.client.auth", "ssl.key.location", "ssl.principal.mapping.rules", "ssl.truststore.location"},
	}
	got := map[Scope][]string{ScopeTopic: TopicPropertyNames(), ScopeCluster: ClusterPropertyNames(), ScopeNode: NodePropertyNames()}
	for s, w := range want {
		if strings.Join(got[s], " ") != strings.Join(w, " ") {
			t.Errorf("%s properties:\n got %v\nwant %v", s, got[s], w)
		}
	}
	if !IsTopicProperty("retention.ms") || IsTopicProperty("log.retention.ms") || !IsClusterProperty("log.retention.ms") {
		t.Error("Is*Property")
	}
	synonyms := map[string]string{"cleanup.policy": "log.cleanup.policy", "retention.ms": "log.retention.ms",
		"retention.bytes": "log.retention.bytes", "segment.bytes": "log.segment.bytes", "segment.ms": "log.roll.ms",
		"max.message.bytes": "message.max.bytes", "write.caching": "write_caching_default",
		"flush.ms": "log.flush.interval.ms", "flush.bytes": "log.flush.interval.bytes",
		"min.insync.replicas": "min.insync.replicas", "min.insync.racks": "min.insync.racks", "compression.type": "compression.type",
		"delete.retention.ms": "log.cleaner.delete.retention.ms"}
	for topic, cluster := range synonyms {
		if p, _ := Lookup(ScopeTopic, topic); p.Synonym != cluster {
			t.Errorf("%s: synonym %q, want %q", topic, p.Synonym, cluster)
		}
	}
	if _, ok := Lookup(ScopeTopic, "node.id"); ok {
		t.Error("node.id found in topic scope")
	}
}

func TestKafkaTypes(t *testing.T) {
	want := map[string]int8{"cleanup.policy": 7, "retention.ms": 5, "segment.bytes": 3, "write.caching": 1,
		"compression.type": 2}
	for name, kt := range want {
		p, _ := Lookup(ScopeTopic, name)
		if p.Type.KafkaType() != kt {
			t.Errorf("%s: Kafka type %d, want %d", name, p.Type.KafkaType(), kt)
		}
	}
	for name, kt := range map[string]int8{"default.replication.factor": 4, "write_caching_default": 2, "auto.create.topics.enable": 1} {
		p, _ := Lookup(ScopeCluster, name)
		if p.Type.KafkaType() != kt {
			t.Errorf("%s: Kafka type %d, want %d", name, p.Type.KafkaType(), kt)
		}
	}
	if SourceDynamicDefaultBroker.String() != "DYNAMIC_DEFAULT_BROKER_CONFIG" || ScopeTopic.String() != "topic" || TypeShort.String() != "short" {
		t.Error("String methods")
	}
}

func TestMarkdownMentionsEverything(t *testing.T) {
	md := Markdown()
	for _, p := range All() {
		if !strings.Contains(md, "`"+p.Name+"`") {
			t.Errorf("doc lacks %s", p.Name)
		}
	}
	for _, r := range RefusedProperties() {
		if !strings.Contains(md, "`"+r.Name+"`") {
			t.Errorf("doc lacks refused %s", r.Name)
		}
	}
}
