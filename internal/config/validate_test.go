package config

import (
	"errors"
	"strings"
	"testing"
)

type vcase struct {
	in   string
	want string // canonical; ignored when bad
	bad  string // substring the error must contain; "" means valid
}

func ok(in, want string) vcase { return vcase{in: in, want: want} }
func bad(in, why string) vcase { return vcase{in: in, bad: why} }

// Cases per property name; topic properties and their cluster synonyms share rules, so each
// list runs against both names.
var validationCases = map[string][]vcase{
	"cleanup.policy": {
		ok("delete", "delete"), ok(" Delete ", "delete"), ok("delete,delete", "delete"),
		ok("compact", "compact"), ok("COMPACT,compact", "compact"), ok("compact,delete", "compact,delete"),
		ok("delete, compact", "compact,delete"), ok("Delete,Compact,delete", "compact,delete"),
		bad("", "at least one policy"), bad("delete,", "empty item"), bad("purge", "unknown cleanup policy"),
		bad("compact,purge", "valid values: delete, compact, compact,delete"),
	},
	"message.timestamp.type": {
		ok("CreateTime", "CreateTime"), ok(" CreateTime ", "CreateTime"),
		bad("LogAppendTime", "does not rewrite their timestamps"), bad("createtime", "unknown timestamp type"), bad("", "unknown timestamp type"),
	},
	"compression.type": {
		ok("producer", "producer"), ok("PRODUCER", "producer"),
		bad("gzip", "codec the producer chose"), bad("zstd", "refused"), bad("uncompressed", "refused"),
		bad("none", "refused"), bad("brotli", "unknown compression type"), bad("", "unknown"),
	},
	"retention.ms": {
		ok("-1", "-1"), ok("1", "1"), ok("604800000", "604800000"), ok(" 007 ", "7"), ok("+5", "5"),
		ok("9223372036854775807", "9223372036854775807"),
		bad("0", "out of range"), bad("-2", "out of range"), bad("9223372036854775808", "out of range for a long"),
		bad("1.5", "not a whole number"), bad("1e3", "not a whole number"), bad("", "not a whole number"), bad("abc", "valid values: -1 (unlimited) or >= 1"),
	},
	"delete.retention.ms": {
		ok("0", "0"), ok("86400000", "86400000"), ok("9223372036854775807", "9223372036854775807"),
		bad("-1", "out of range"), bad("1.5", "not a whole number"), bad("", "valid values: >= 0"),
	},
	"retention.bytes": {
		ok("-1", "-1"), ok("1", "1"), ok("1073741824", "1073741824"),
		bad("0", "out of range"), bad("-2", "out of range"), bad("x", "not a whole number"),
	},
	"segment.bytes": {
		ok("1024", "1024"), ok("1073741824", "1073741824"), ok("2147483647", "2147483647"),
		bad("1023", "out of range"), bad("14", "out of range"), bad("-1", "out of range"),
		bad("2147483648", "out of range for an int"), bad("1GiB", "not a whole number"),
	},
	"segment.ms": {
		ok("1", "1"), ok("604800000", "604800000"),
		bad("0", "out of range"), bad("-1", "out of range"),
	},
	"max.message.bytes": {
		ok("0", "0"), ok("1048588", "1048588"), ok("2147483647", "2147483647"),
		bad("-1", "out of range"), bad("2147483648", "out of range"),
	},
	"write.caching": {
		ok("true", "true"), ok("false", "false"), ok("TRUE", "true"), ok(" False ", "false"),
		bad("disabled", "not a boolean"), bad("1", "not a boolean"), bad("", "not a boolean"), bad("yes", "valid values: true, false"),
	},
	"flush.ms": {
		ok("0", "0"), ok("100", "100"), ok("9223372036854775807", "9223372036854775807"),
		bad("-1", "out of range"), bad("", "not a whole number"),
	},
	"flush.bytes": {
		ok("1", "1"), ok("262144", "262144"),
		bad("0", "out of range"), bad("-1", "out of range"),
	},
	"min.insync.replicas": {
		ok("1", "1"), ok("3", "3"), ok("2147483647", "2147483647"),
		bad("0", "out of range"), bad("-1", "out of range"), bad("2147483648", "out of range"),
	},
	"min.insync.racks": {
		ok("1", "1"), ok("2", "2"), ok(" 3 ", "3"), ok("2147483647", "2147483647"),
		bad("0", "invalid value \"0\" for min.insync.racks: out of range; valid values: >= 1"),
		bad("-1", "invalid value \"-1\" for min.insync.racks: out of range; valid values: >= 1"),
		bad("two", "invalid value \"two\" for min.insync.racks: not a whole number (an int); valid values: >= 1"),
		bad("2147483648", "out of range for an int"), bad("", "not a whole number"),
	},
	// Cluster-only.
	"auto.create.topics.enable": {
		ok("true", "true"), ok("false", "false"), bad("on", "not a boolean"),
	},
	"num.partitions": {
		ok("1", "1"), ok("128", "128"), bad("0", "out of range"), bad("-1", "out of range"),
	},
	"default.replication.factor": {
		ok("1", "1"), ok("3", "3"), ok("32767", "32767"),
		bad("0", "out of range"), bad("32768", "out of range for a short"), bad("-1", "out of range"),
	},
	"write_caching_default": {
		ok("true", "true"), ok("false", "false"), ok("disabled", "disabled"), ok("DISABLED", "disabled"),
		bad("off", "not one of the allowed values"), bad("", "valid values: true, false, disabled"),
	},
	"log.retention.check.interval.ms": {
		ok("1", "1"), ok("300000", "300000"), bad("0", "out of range"), bad("-1", "out of range"),
	},
	"auto.leader.rebalance.enable": {
		ok("true", "true"), ok("false", "false"), bad("on", "not a boolean"),
	},
	"leader.imbalance.check.interval.seconds": {
		ok("1", "1"), ok("30", "30"), ok("86400", "86400"), bad("0", "out of range"), bad("86401", "out of range"),
	},
	"leader.imbalance.per.broker.percentage": {
		ok("0", "0"), ok("10", "10"), ok("100", "100"), bad("-1", "out of range"), bad("101", "out of range"),
	},
	"learner.recovery.rate": {
		ok("0", "0"), ok("104857600", "104857600"), ok("1", "1"), bad("-1", "out of range"), bad("fast", "not a whole number"),
	},
	// Node.
	"node.id": {
		bad("0", "out of range"), ok("1", "1"), ok("7", "7"), ok("2147483647", "2147483647"),
		bad("-1", "out of range"), bad("2147483648", "out of range"), bad("one", "not a whole number"),
	},
	"replica.lag.time.max.ms": {
		ok("1000", "1000"), ok(" 2000 ", "2000"), ok("86400000", "86400000"),
		bad("999", "out of range; valid values: 1000 to 86400000"), bad("0", "out of range"), bad("-1", "out of range"),
		bad("86400001", "out of range"), bad("two", "not a whole number (a long)"), bad("1000.5", "not a whole number"),
		bad("", "not a whole number"), bad("99999999999999999999", "out of range for a long"),
	},
	"max.incremental.fetch.session.cache.slots": {
		ok("1000", "1000"), ok("0", "0"), ok("100000", "100000"), bad("-1", "out of range"), bad("100001", "out of range"), bad("many", "not a whole number"),
	},
	"admin.console": {
		ok("true", "true"), ok("false", "false"), bad("on", "not a boolean"),
	},
	"produce.forwarding": {
		ok("true", "true"), ok("false", "false"), bad("maybe", "not a boolean"),
	},
	"data.dir": {
		ok("./cairn-data", "./cairn-data"), ok("/var/lib/cairn data", "/var/lib/cairn data"),
		bad("", "empty"), bad("a\x00b", "control characters"),
	},
	"kafka.addr": {
		ok("localhost:9092", "localhost:9092"), ok(":9092", ":9092"), ok("127.0.0.1:0", "127.0.0.1:0"),
		ok("[::1]:9092", "[::1]:9092"), ok("0.0.0.0:9092", "0.0.0.0:9092"),
		bad("localhost", "not a host:port"), bad("localhost:http", "port is not a number"),
		bad("localhost:65536", "port is not a number"), bad("local host:1", "spaces"), bad("", "not a host:port"),
	},
	"rpc.addr":   {ok("localhost:9093", "localhost:9093"), bad("9093", "not a host:port")},
	"admin.addr": {ok(":9644", ":9644"), bad("::9644", "not a host:port")},
	"offsets.topic.num.partitions": {
		ok("16", "16"), ok("1", "1"), ok("1000", "1000"), bad("0", "out of range"), bad("1001", "out of range"),
	},
	"offsets.topic.replication.factor":                            {ok("3", "3"), ok("1", "1"), bad("0", "out of range"), bad("32768", "out of range for a short")},
	"offsets.topic.segment.bytes":                                 {ok("104857600", "104857600"), bad("1023", "out of range")},
	"offsets.retention.minutes":                                   {ok("10080", "10080"), ok("1", "1"), bad("0", "out of range"), bad("-1", "out of range")},
	"offsets.retention.check.interval.ms":                         {ok("600000", "600000"), bad("0", "out of range")},
	"offsets.commit.timeout.ms":                                   {ok("5000", "5000"), bad("0", "out of range")},
	"transaction.state.log.num.partitions":                        {ok("16", "16"), bad("0", "out of range"), bad("1001", "out of range")},
	"transaction.state.log.replication.factor":                    {ok("3", "3"), bad("0", "out of range")},
	"transaction.state.log.segment.bytes":                         {ok("104857600", "104857600"), bad("1023", "out of range")},
	"transaction.state.log.min.isr":                               {ok("2", "2"), bad("0", "out of range")},
	"transaction.max.timeout.ms":                                  {ok("900000", "900000"), bad("0", "out of range"), bad("2147483648", "out of range")},
	"transactional.id.expiration.ms":                              {ok("604800000", "604800000"), bad("-1", "out of range")},
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": {ok("10000", "10000"), bad("0", "out of range")},
	"transaction.remove.expired.transaction.cleanup.interval.ms":  {ok("3600000", "3600000"), bad("0", "out of range")},
	"offset.metadata.max.bytes":                                   {ok("0", "0"), ok("4096", "4096"), bad("-1", "out of range")},
	"group.min.session.timeout.ms":                                {ok("6000", "6000"), ok("1", "1"), bad("0", "out of range")},
	"group.max.session.timeout.ms":                                {ok("1800000", "1800000"), bad("0", "out of range"), bad("x", "not a whole number")},
	"group.initial.rebalance.delay.ms":                            {ok("0", "0"), ok("3000", "3000"), bad("-1", "out of range")},
	"advertised.kafka.addr": {
		ok("", ""), ok("broker-1.example:9092", "broker-1.example:9092"),
		bad(":9092", "host is empty"), bad("0.0.0.0:9092", "wildcard"), bad("[::]:9092", "wildcard"),
		bad("b1:0", "port 0"), bad("b1", "not a host:port"),
	},
	"advertised.rpc.addr": {
		ok("", ""), ok("broker-1.example:9093", "broker-1.example:9093"), ok("10.0.0.5:19093", "10.0.0.5:19093"),
		bad(":9093", "host is empty"), bad("0.0.0.0:9093", "wildcard"), bad("[::]:9093", "wildcard"),
		bad("b1:0", "port 0"), bad("b1", "not a host:port"),
	},
	"rack": {
		ok("", ""), ok("us-east-1a", "us-east-1a"),
		bad("rack a", "spaces"), bad(strings.Repeat("r", 256), "longer than 255"),
	},
	"replica.selector.class": {
		ok("", ""), ok(" ", ""), ok("org.apache.kafka.common.replica.LeaderSelector", "org.apache.kafka.common.replica.LeaderSelector"),
		ok(" org.apache.kafka.common.replica.RackAwareReplicaSelector ", "org.apache.kafka.common.replica.RackAwareReplicaSelector"),
		bad("com.example.MySelector", "Cairn implements only org.apache.kafka.common.replica.RackAwareReplicaSelector"),
		bad("com.example.MySelector", "and org.apache.kafka.common.replica.LeaderSelector"),
		bad("org.apache.kafka.common.replica.rackawarereplicaselector", "Cairn implements only"),
	},
	"authorizer.class.name": {
		ok("", ""), ok(" kafka.security.authorizer.AclAuthorizer ", "kafka.security.authorizer.AclAuthorizer"),
		ok("org.apache.kafka.metadata.authorizer.StandardAuthorizer", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		bad("com.example.MyAuthorizer", "cannot load other classes"),
		bad("kafka.security.auth.SimpleAclAuthorizer", "one built-in ACL authorizer"),
	},
	"super.users": {
		ok("", ""), ok("User:admin", "User:admin"), ok(" User:a ; User:b ;", "User:a;User:b"),
		bad("admin", `"admin" is not of the form Type:name`), bad("User:a;User:", "not of the form Type:name"),
	},
	"allow.everyone.if.no.acl.found": {
		ok("true", "true"), ok("FALSE", "false"), bad("yes", "not a boolean"),
	},
	"listeners": {
		ok("", ""), ok("PLAINTEXT://:9092", "PLAINTEXT://:9092"), ok(" plaintext://:9092 , SSL://0.0.0.0:9094 ", "PLAINTEXT://:9092,SSL://0.0.0.0:9094"),
		bad("localhost:9092", "not NAME://host:port"), bad("IN-SIDE://:1", "letters, digits and underscores"),
		bad("A://:1,a://:2", "named twice"), bad("A://x", "not a host:port"), bad("A://:1,,B://:2", "empty item"),
	},
	"advertised.listeners": {
		ok("", ""), ok("SSL://b1.example:9094", "SSL://b1.example:9094"),
		bad("SSL://:9094", "host is empty"), bad("SSL://0.0.0.0:9094", "wildcard"), bad("SSL://b1:0", "port 0"),
	},
	"listener.security.protocol.map": {
		ok("PLAINTEXT:PLAINTEXT", "PLAINTEXT:PLAINTEXT"), ok("internal:ssl, EXTERNAL:SASL_SSL", "INTERNAL:SSL,EXTERNAL:SASL_SSL"),
		bad("INTERNAL:TLS", "unknown security protocol"), bad("INTERNAL", "not NAME:PROTOCOL"),
		bad("A:SSL,a:PLAINTEXT", "mapped twice"),
	},
	"ssl.certificate.location": {ok("", ""), ok("/etc/cairn/tls/broker.pem", "/etc/cairn/tls/broker.pem"), bad("a\nb", "control characters")},
	"ssl.key.location":         {ok("/etc/cairn/tls/broker.key", "/etc/cairn/tls/broker.key"), bad("\x00", "control characters")},
	"ssl.truststore.location":  {ok("ca.pem", "ca.pem"), bad("\t", "control characters")},
	"ssl.client.auth": {
		ok("none", "none"), ok("Required", "required"), ok("requested", "requested"), bad("want", "not one of the allowed values"),
	},
	"ssl.principal.mapping.rules": {
		ok("DEFAULT", "DEFAULT"), ok("RULE:^CN=([^,]*),.*$/$1/L,DEFAULT", "RULE:^CN=([^,]*),.*$/$1/L,DEFAULT"),
		bad("RULE:x", "both slashes"), bad("CN=.*", "want RULE"),
	},
	"seeds": {
		ok("", ""), ok("a:9093", "a:9093"), ok(" a:9093 , b:9093 ", "a:9093,b:9093"),
		bad("a:9093,,b:9093", "empty item"), bad("a", "not a host:port"), bad(":9093", "host is empty"),
		bad("a:0", "port 0"),
	},
	"sasl.enabled.mechanisms": {
		ok("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"), ok(" SCRAM-SHA-512 ", "SCRAM-SHA-512"),
		ok("PLAIN,PLAIN", "PLAIN"),
		bad("", "no mechanism"), bad("PLAIN,,SCRAM-SHA-256", "empty item"), bad("GSSAPI", "GSSAPI is not served"),
		bad("OAUTHBEARER", "OAUTHBEARER is not served"), bad("plain", `unknown mechanism "plain" (names are case-sensitive)`),
		bad("SCRAM-SHA-1", "unknown mechanism"),
	},
	"connections.max.reauth.ms": {
		ok("0", "0"), ok("3600000", "3600000"), bad("-1", "out of range"), bad("soon", "not a whole number"),
	},
}

func TestValidationCasesCoverEveryProperty(t *testing.T) {
	for _, p := range All() {
		if p.Scope == ScopeCluster && lookup(ScopeTopic, p.Name) == nil {
			isSyn := false
			for _, tp := range Properties(ScopeTopic) {
				if tp.Synonym == p.Name && p.Name != ClusterWriteCachingDefault {
					isSyn = true
				}
			}
			if isSyn {
				continue // runs with its topic property's cases
			}
		}
		if _, ok := validationCases[p.Name]; !ok {
			t.Errorf("no validation cases for %s property %s", p.Scope, p.Name)
		}
	}
}

func TestValidate(t *testing.T) {
	for name, cases := range validationCases {
		// The scopes and names the cases apply to.
		type target struct {
			name     string
			validate func(string, string) (string, error)
		}
		var targets []target
		if p := lookup(ScopeTopic, name); p != nil {
			targets = append(targets, target{name, ValidateTopic}, target{p.Synonym, ValidateCluster})
			if p.Name == TopicWriteCaching {
				targets = targets[:1] // write_caching_default has its own cases
			}
		} else if lookup(ScopeCluster, name) != nil {
			targets = append(targets, target{name, ValidateCluster})
		} else if lookup(ScopeNode, name) != nil {
			targets = append(targets, target{name, ValidateNode})
		} else {
			t.Fatalf("cases for unregistered property %s", name)
		}
		for _, tg := range targets {
			for _, c := range cases {
				got, err := tg.validate(tg.name, c.in)
				if c.bad == "" {
					if err != nil {
						t.Errorf("%s=%q: unexpected error %v", tg.name, c.in, err)
					} else if got != c.want {
						t.Errorf("%s=%q: canonical %q, want %q", tg.name, c.in, got, c.want)
					}
					continue
				}
				var ce *Error
				if !errors.As(err, &ce) {
					t.Errorf("%s=%q: want *Error containing %q, got %v (%q)", tg.name, c.in, c.bad, err, got)
					continue
				}
				if !strings.Contains(ce.Msg, c.bad) {
					t.Errorf("%s=%q: error %q does not contain %q", tg.name, c.in, ce.Msg, c.bad)
				}
				if !strings.Contains(ce.Msg, tg.name) {
					t.Errorf("%s=%q: error %q does not name the property", tg.name, c.in, ce.Msg)
				}
			}
		}
	}
}

func TestNameErrors(t *testing.T) {
	tests := []struct {
		scope Scope
		name  string
		want  []string
	}{
		{ScopeTopic, "retention.msx", []string{"unknown topic property", `"retention.msx"`}},
		{ScopeCluster, "no.such.thing", []string{"unknown cluster property"}},
		{ScopeNode, "no.such.thing", []string{"unknown node property"}},
		{ScopeTopic, "", []string{"property name is empty"}},
		{ScopeTopic, "Retention.Ms", []string{"unknown topic property", "did you mean retention.ms?"}},
		{ScopeCluster, "write.caching.default", []string{"did you mean write_caching_default?"}},
		{ScopeCluster, "node_id", []string{"unknown cluster property"}},

		{ScopeTopic, "message.timestamp.after.max.ms", []string{"message.timestamp.after.max.ms is a Kafka topic property that Cairn does not enforce", "refused rather than silently ignored"}},
		{ScopeTopic, "unclean.leader.election.enable", []string{"does not enforce", "Raft"}},
		{ScopeCluster, "unclean.leader.election.enable", []string{"does not enforce"}},
		{ScopeTopic, "segment.index.bytes", []string{"does not enforce"}},
		{ScopeTopic, "preallocate", []string{"not preallocated"}},
		{ScopeTopic, "message.downconversion.enable", []string{"never down-converts"}},
		{ScopeTopic, "local.retention.ms", []string{"tiered storage"}},
		{ScopeTopic, "local.retention.bytes", []string{"tiered storage"}},
		{ScopeTopic, "min.compaction.lag.ms", []string{"does not enforce", "pacing is not configurable"}},
		{ScopeTopic, "log.cleaner.delete.retention.ms", []string{"is a cluster property", "on a topic, set delete.retention.ms"}},
		{ScopeCluster, "delete.retention.ms", []string{"topic property"}},
		{ScopeCluster, "log.cleaner.enable", []string{"log.cleaner.enable is a Kafka broker property", "compaction"}},
		{ScopeCluster, "log.cleaner.threads", []string{"compaction"}},
		{ScopeCluster, "remote.log.storage.system.enable", []string{"tiered storage"}},
		{ScopeTopic, "remote.log.copy.disable", []string{"Kafka topic property"}},
		{ScopeCluster, "log.retention.hours", []string{"set log.retention.ms"}},

		{ScopeTopic, "log.retention.ms", []string{"log.retention.ms is a cluster property, not a topic property; on a topic, set retention.ms"}},
		{ScopeTopic, "write_caching_default", []string{"on a topic, set write.caching"}},
		{ScopeTopic, "num.partitions", []string{"num.partitions is a cluster property, not a topic property"}},
		{ScopeCluster, "retention.ms", []string{"retention.ms is a topic property; its cluster-wide default is log.retention.ms"}},
		{ScopeCluster, "write.caching", []string{"its cluster-wide default is write_caching_default"}},
		{ScopeCluster, "data.dir", []string{"data.dir is a node property; set it with cairn start --data-dir"}},
		{ScopeCluster, "node.id", []string{"set it with cairn start --node-id"}},
		{ScopeTopic, "rack", []string{"set it with cairn start --rack"}},
		{ScopeNode, "retention.ms", []string{"not a node property"}},
	}
	for _, tt := range tests {
		_, err := validate(tt.scope, tt.name, "1")
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%s %q: want *Error, got %v", tt.scope, tt.name, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(ce.Msg, w) {
				t.Errorf("%s %q: message %q does not contain %q", tt.scope, tt.name, ce.Msg, w)
			}
		}
	}
}

func TestUnknownIsDistinctFromRefused(t *testing.T) {
	_, unknown := ValidateTopic("segment.indx.bytes", "1")
	_, refused := ValidateTopic("segment.index.bytes", "1")
	if strings.Contains(refused.Error(), "unknown") {
		t.Errorf("refused message says unknown: %q", refused)
	}
	if strings.Contains(unknown.Error(), "does not enforce") || !strings.Contains(unknown.Error(), "unknown") {
		t.Errorf("unknown message: %q", unknown)
	}
}

func TestLongValuesAreCutInMessages(t *testing.T) {
	long := strings.Repeat("x", 10000)
	for _, f := range []func(string, string) (string, error){ValidateTopic, ValidateCluster, ValidateNode} {
		if _, err := f(long, "1"); err == nil || len(err.Error()) > 400 {
			t.Errorf("long name: %d-byte message", len(err.Error()))
		}
		if _, err := f("retention.ms", long); err == nil || len(err.Error()) > 600 {
			t.Errorf("long value: %v", err)
		}
	}
}

func TestValidator(t *testing.T) {
	if _, err := Validator(ScopeTopic)("retention.ms", "5"); err != nil {
		t.Fatal(err)
	}
	if _, err := Validator(ScopeCluster)("retention.ms", "5"); err == nil {
		t.Fatal("cluster validator accepted a topic property")
	}
	if _, err := Validator(Scope(42))("retention.ms", "5"); err == nil {
		t.Fatal("bad scope accepted")
	}
}
