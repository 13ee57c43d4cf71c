package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/storage"
)

func open(t *testing.T, fs storage.FS) *Broker {
	t.Helper()
	b, err := New(Config{DataDir: "/data", KafkaAddr: "127.0.0.1:9092", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTopicLifecycleSurvivesRestart(t *testing.T) {
	fs := storage.NewMemFS()
	b := open(t, fs)
	if _, err := b.CreateTopic("orders", 3, 1, map[string]string{"retention.ms": "60000"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic("dry", 1, 1, nil, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Topic("dry"); ok {
		t.Fatal("validate_only created the topic")
	}
	if err := b.CreatePartitions("orders", 5, false); err != nil {
		t.Fatal(err)
	}
	if err := b.SetClusterConfig(map[string]string{"num.partitions": "4"}); err != nil {
		t.Fatal(err)
	}
	id1, _ := b.AllocateProducerID()
	id2, _ := b.AllocateProducerID()
	if id2 != id1+1 {
		t.Fatalf("producer ids %d %d", id1, id2)
	}
	clusterID := b.ClusterID()
	b.Close()

	b = open(t, fs)
	defer b.Close()
	info, ok := b.Topic("orders")
	if !ok || info.Partitions != 5 {
		t.Fatalf("after restart: %+v %v", info, ok)
	}
	if ov, _, _ := b.TopicConfigOverrides("orders"); ov["retention.ms"] != "60000" {
		t.Fatalf("topic config lost: %v", ov)
	}
	if b.ClusterID() != clusterID {
		t.Fatal("cluster id changed across restart")
	}
	if id3, _ := b.AllocateProducerID(); id3 <= id2 {
		t.Fatalf("producer id %d reused after restart (had %d)", id3, id2)
	}
	auto, err := b.AutoCreateTopic("auto")
	if err != nil || auto.Partitions != 4 {
		t.Fatalf("auto-created with cluster default num.partitions: %+v %v", auto, err)
	}
	if err := b.DeleteTopic("orders"); err != nil {
		t.Fatal(err)
	}
	if _, e := b.Partition("orders", 0); e != kerr.UnknownTopicOrPartition {
		t.Fatalf("deleted topic still served: %v", e)
	}
}

func TestTopicRequestsRefuseBadInput(t *testing.T) {
	b := open(t, storage.NewMemFS())
	defer b.Close()
	b.CreateTopic("t", 2, 1, nil, false)
	for _, tc := range []struct {
		name string
		err  *Error
		want *kerr.Error
	}{
		{"bad name", second(b.CreateTopic("a/b", 1, 1, nil, false)), kerr.InvalidTopicException},
		{"dot", second(b.CreateTopic("..", 1, 1, nil, false)), kerr.InvalidTopicException},
		{"exists", second(b.CreateTopic("t", 1, 1, nil, false)), kerr.TopicAlreadyExists},
		{"rf above brokers", second(b.CreateTopic("x", 1, 3, nil, false)), kerr.InvalidReplicationFactor},
		{"zero partitions", second(b.CreateTopic("x", 0, 1, nil, false)), kerr.InvalidPartitions},
		{"unknown config", second(b.CreateTopic("x", 1, 1, map[string]string{"no.such": "1"}, false)), kerr.InvalidConfig},
		{"bad config value", second(b.CreateTopic("x", 1, 1, map[string]string{"retention.ms": "soon"}, false)), kerr.InvalidConfig},
		{"shrink", b.CreatePartitions("t", 1, false), kerr.InvalidPartitions},
		{"same count", b.CreatePartitions("t", 2, false), kerr.InvalidPartitions},
		{"missing topic", b.CreatePartitions("nope", 3, false), kerr.UnknownTopicOrPartition},
		{"delete missing", b.DeleteTopic("nope"), kerr.UnknownTopicOrPartition},
	} {
		if tc.err == nil || tc.err.Code != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.err, tc.want.Message)
		}
	}
	if _, ok := b.Topic("x"); ok {
		t.Fatal("a refused CreateTopics left a topic behind")
	}
	if info, _ := b.Topic("t"); info.Partitions != 2 {
		t.Fatalf("a refused CreatePartitions changed the count: %d", info.Partitions)
	}
	b.SetClusterConfig(map[string]string{"auto.create.topics.enable": "false"})
	if _, err := b.AutoCreateTopic("nope"); err == nil || err.Code != kerr.UnknownTopicOrPartition {
		t.Fatalf("auto-create while disabled: %v", err)
	}
}

func second(_ TopicInfo, err *Error) *Error { return err }

func TestRecreatedTopicStartsEmptyAndOrphansGo(t *testing.T) {
	fs := storage.NewMemFS()
	b := open(t, fs)
	b.CreateTopic("r", 1, 1, nil, false)
	p, _ := b.Partition("r", 0)
	if res, _ := p.Produce(kafkatest.Plain(3, 1000).Bytes(), 1); res.Err != nil {
		t.Fatal(res.Err)
	}
	if err := b.DeleteTopic("r"); err != nil {
		t.Fatal(err)
	}
	b.CreateTopic("r", 1, 1, nil, false)
	p, _ = b.Partition("r", 0)
	if end := p.Boundaries().LogEnd; end != 0 {
		t.Fatalf("re-created topic sees %d old records", end)
	}
	// A folder no topic owns, as a crash between saving a deletion and removing the
	// files leaves behind, is removed at the next start.
	orphan := "/data/topics/gone-0-00"
	if err := fs.MkdirAll(orphan, 0o755); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b = open(t, fs)
	defer b.Close()
	if _, err := fs.Stat(orphan); err == nil {
		t.Fatal("orphaned partition folder survived a restart")
	}
	if _, e := b.Partition("r", 0); e != nil {
		t.Fatal("the live topic was removed with the orphans")
	}
}

// Every message type of the table reaches a handler on a running broker: a type added to
// the table without its handler would be dropped by every broker. So does every number of
// a block, which a newer broker may send: its owner refuses it visibly.
func TestEveryMessageTypeIsRegistered(t *testing.T) {
	b := open(t, storage.NewMemFS())
	defer b.Close()
	for _, mt := range rpc.MessageTypes() {
		if !b.messages.Registered(mt.Type) {
			t.Errorf("message type %d (%s of %s) has no handler", mt.Type, mt.Name, mt.Owner)
		}
	}
	for typ := range 256 {
		if blk, ok := rpc.LookupBlock(uint8(typ)); ok && !b.messages.Registered(uint8(typ)) {
			t.Errorf("number %d of the block %d-%d of %s has no handler", typ, blk.First, blk.Last, blk.Owner)
		}
	}
}
