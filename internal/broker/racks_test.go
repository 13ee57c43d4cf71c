package broker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/controller"
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

// syncBuffer is a log sink that the reconcile loop and the test may write and read at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// lines returns the logged lines that contain every one of want.
func (s *syncBuffer) lines(want ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.buf.String(), "\n") {
		all := l != ""
		for _, w := range want {
			all = all && strings.Contains(l, w)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// A broker that registers again in another rack, or none, is accepted, but the controller's
// broker warns once per topic left short of its min.insync.racks, naming the partitions,
// their replicas and racks; not again at the next controller changes, again only when what
// is short changes, and it says so when the racks are back.
func TestReRegistrationInAnotherRackWarnsOncePerTopic(t *testing.T) {
	logs := &syncBuffer{}
	b, err := New(Config{DataDir: "/data", KafkaAddr: "127.0.0.1:9092", FS: storage.NewMemFS(), Rack: "r1",
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	incarnation := uint64(0)
	register2 := func(rack string) {
		t.Helper()
		incarnation++
		res, err := b.svc.Load().Propose(ctx, controller.RegisterBroker{ID: 2, KafkaAddr: "127.0.0.1:19092", RPCAddr: "127.0.0.1:19093", Rack: rack, Incarnation: incarnation})
		if err != nil || res.Err != nil {
			t.Fatalf("registering broker 2 in rack %q: %v %v", rack, err, res.Err)
		}
		if err := b.reconcile(); err != nil { // as the loop does on that change
			t.Fatal(err)
		}
	}
	register2("r2")
	// Broker 2 never runs, so the liveness verdict soon takes it out of placement: the
	// topics are proposed with their assignment, as the proposer would place them.
	for i, topic := range []controller.CreateTopic{
		{Name: "orders", Partitions: 2, RF: 2, Configs: map[string]string{"min.insync.racks": "2"}, Assignment: [][]int32{{1, 2}, {2, 1}}},
		{Name: "plain", Partitions: 1, RF: 2, Assignment: [][]int32{{1, 2}}},
	} {
		topic.ID[0] = byte(i + 1)
		if res, err := b.svc.Load().Propose(ctx, topic); err != nil || res.Err != nil {
			t.Fatalf("creating %s: %v %v", topic.Name, err, res.Err)
		}
	}
	if err := b.reconcile(); err != nil {
		t.Fatal(err)
	}
	const warning = "level=WARN msg=\"topic's replicas span fewer declared racks than its min.insync.racks"
	if got := logs.lines(warning); len(got) != 0 {
		t.Fatalf("warned with every rack in place: %q", got)
	}

	register2("r1") // broker 2 restarted with --rack r1
	got := logs.lines(warning)
	if len(got) != 1 || !strings.Contains(got[0], "topic=orders") || !strings.Contains(got[0], "min_insync_racks=2") ||
		!strings.Contains(got[0], "partition orders-0: its replicas ") || !strings.Contains(got[0], "partition orders-1: its replicas ") ||
		!strings.Contains(got[0], "2 (rack r1)") || !strings.Contains(got[0], "span 1 declared rack") {
		t.Fatalf("after broker 2 moved to r1, want one WARN for orders naming both partitions, replicas and racks; got %q", got)
	}
	// Later controller changes do not repeat it.
	// (Placed on broker 1 by hand: placement may pick broker 2, which never runs, and the
	// wait for its leader would eat the test's deadline.)
	later := controller.CreateTopic{Name: "later", Partitions: 1, RF: 1, Assignment: [][]int32{{1}}}
	later.ID[0] = 3
	if res, err := b.svc.Load().Propose(ctx, later); err != nil || res.Err != nil {
		t.Fatalf("creating later: %v %v", err, res.Err)
	}
	if err := b.reconcile(); err != nil {
		t.Fatal(err)
	}
	if got := logs.lines(warning); len(got) != 1 {
		t.Fatalf("the warning was repeated at a later reconcile: %q", got)
	}

	register2("") // and again with no rack: what is short changed
	if got := logs.lines(warning, "2 (no rack)"); len(got) != 1 {
		t.Fatalf("after broker 2 registered with no rack, want one WARN saying 2 (no rack); got %q", logs.lines(warning))
	}
	register2("r2")
	if got := logs.lines("topic's replicas span its min.insync.racks again", "topic=orders"); len(got) != 1 {
		t.Fatalf("racks back: want one INFO for orders, got %q", got)
	}
	if got := logs.lines(warning); len(got) != 2 {
		t.Fatalf("racks back: want still two WARNs in all, got %q", got)
	}
}
