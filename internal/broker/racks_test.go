package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/storage"
)

func openInRack(t *testing.T, rack string) *Broker {
	t.Helper()
	b, err := New(Config{DataDir: "/data", KafkaAddr: "127.0.0.1:9092", Rack: rack, FS: storage.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// wantRacksRefusal asserts err is INVALID_CONFIG with every one of want in its message.
func wantRacksRefusal(t *testing.T, what string, err *Error, want ...string) {
	t.Helper()
	if err == nil || err.Code != kerr.InvalidConfig {
		t.Fatalf("%s: got %v, want INVALID_CONFIG", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Msg, w) {
			t.Errorf("%s: message %q does not contain %q", what, err.Msg, w)
		}
	}
}

func TestCreateRefusesMinInsyncRacksAboveDeclaredRacks(t *testing.T) {
	b := openInRack(t, "r1")
	racks2 := map[string]string{"min.insync.racks": "2"}
	wantRacksRefusal(t, "create", second(b.CreateTopic("t", 2, 1, racks2, false)),
		"min.insync.racks=2 cannot be met by partition t-0: its replicas 1 (rack r1) span 1 declared rack; partition t-1:", "it is not capped")
	wantRacksRefusal(t, "validate only", second(b.CreateTopic("t", 1, 1, racks2, true)), "partition t-0")
	if _, ok := b.Topic("t"); ok {
		t.Fatal("a refused CreateTopics left a topic behind")
	}
	if _, err := b.CreateTopic("t", 1, 1, map[string]string{"min.insync.racks": "1"}, false); err != nil {
		t.Fatalf("min.insync.racks=1 on one rack: %v", err)
	}

	// The cluster default is in force for topics that do not set it, auto-created ones too.
	if err := b.SetClusterConfig(map[string]string{"min.insync.racks": "2"}); err != nil {
		t.Fatal(err)
	}
	wantRacksRefusal(t, "create under default", second(b.CreateTopic("u", 1, 1, nil, false)),
		"min.insync.racks=2 (cluster default, in force for topic u) cannot be met by partition u-0")
	wantRacksRefusal(t, "auto-create under default", second(b.AutoCreateTopic("v")), "in force for topic v")
	if _, err := b.CreateTopic("w", 1, 1, map[string]string{"min.insync.racks": "1"}, false); err != nil {
		t.Fatalf("own value 1 under a cluster default of 2: %v", err)
	}
	for _, name := range []string{"u", "v"} {
		if _, ok := b.Topic(name); ok {
			t.Fatalf("a refused creation left %s behind", name)
		}
	}
}

func TestCreatePartitionsRefusesMinInsyncRacksAboveDeclaredRacks(t *testing.T) {
	b := openInRack(t, "")
	if _, err := b.CreateTopic("t", 1, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	// Stored before the check could see it, as a broker that changed rack would leave it.
	if err := b.SetTopicConfig("t", map[string]string{"min.insync.racks": "2"}); err != nil {
		t.Fatal(err)
	}
	wantRacksRefusal(t, "create partitions", b.CreatePartitions("t", 3, false),
		"min.insync.racks=2 cannot be met by partition t-1: its replicas 1 (no rack) span 0 declared racks; partition t-2:")
	wantRacksRefusal(t, "validate only", b.CreatePartitions("t", 2, true), "partition t-1")
	if info, _ := b.Topic("t"); info.Partitions != 1 {
		t.Fatalf("a refused CreatePartitions changed the count to %d", info.Partitions)
	}
}

func TestAlterRefusesMinInsyncRacksAboveDeclaredRacks(t *testing.T) {
	b := openInRack(t, "")
	for _, name := range []string{"a", "b", "c", "own"} {
		if _, err := b.CreateTopic(name, 2, 1, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	wantRacksRefusal(t, "topic", b.CheckTopicConfig("a", map[string]string{"min.insync.racks": "3", "retention.ms": "5"}),
		"min.insync.racks=3 cannot be met by partition a-0: its replicas 1 (no rack) span 0 declared racks; partition a-1:")
	if err := b.CheckTopicConfig("a", map[string]string{"min.insync.racks": "1"}); err != nil {
		t.Fatalf("1 is off: %v", err)
	}
	if err := b.CheckTopicConfig("nope", nil); err == nil || err.Code != kerr.UnknownTopicOrPartition {
		t.Fatalf("missing topic: %v", err)
	}

	if err := b.SetTopicConfig("own", map[string]string{"min.insync.racks": "1"}); err != nil {
		t.Fatal(err)
	}
	err := b.CheckClusterConfig(map[string]string{"min.insync.racks": "2"})
	wantRacksRefusal(t, "cluster default", err,
		"min.insync.racks=2 (cluster default) cannot be met by the topics that take it (a, b, c): partition a-0: its replicas 1 (no rack) span 0 declared racks; partition a-1: ",
		"; partition b-0: ", "; and 3 more; it is not capped")
	if strings.Contains(err.Msg, "own") {
		t.Errorf("a topic with its own value is named: %q", err.Msg)
	}
	if err := b.CheckClusterConfig(map[string]string{"min.insync.racks": "1", "num.partitions": "3"}); err != nil {
		t.Fatalf("1 is off: %v", err)
	}

	// A value already in force is not checked again, so that other properties can change
	// while a broker's new rack leaves the topic short.
	if err := b.SetTopicConfig("b", map[string]string{"min.insync.racks": "2"}); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckTopicConfig("b", map[string]string{"min.insync.racks": "2", "retention.ms": "5"}); err != nil {
		t.Fatalf("unchanged value: %v", err)
	}
	wantRacksRefusal(t, "removing the topic's value hands it to the default", func() *Error {
		if err := b.SetClusterConfig(map[string]string{"min.insync.racks": "3"}); err != nil {
			t.Fatal(err)
		}
		return b.CheckTopicConfig("own", nil)
	}(), "min.insync.racks=3 (cluster default) cannot be met by partition own-0")
}
