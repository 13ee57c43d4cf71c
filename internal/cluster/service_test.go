package cluster

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/storage"
)

func TestSingleNode(t *testing.T) {
	n := newNode(t, 1, "127.0.0.1:0", storage.NewMemFS())
	defer n.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	s := n.service()
	st := s.State()
	if st.ClusterID() == "" {
		t.Fatal("no cluster id")
	}
	b, ok := st.Broker(1)
	if !ok || !b.Live || b.Incarnation != 1 || b.RPCAddr != n.addr || b.KafkaAddr != "kafka-1:9092" || b.Rack != "rack-1" {
		t.Fatalf("broker 1: %+v %v", b, ok)
	}
	if s.Leader() != 1 || s.Incarnation() != 1 {
		t.Fatalf("leader %d, incarnation %d", s.Leader(), s.Incarnation())
	}
	ch := s.Changed()
	tp := createTopic(t, s, "orders", 3, 1)
	select {
	case <-ch:
	default:
		t.Fatal("Changed was not closed by an applied command")
	}
	if len(tp.Groups) != 3 || tp.Groups[0] != 1 || tp.Groups[2] != 3 {
		t.Fatalf("group ids %v", tp.Groups)
	}
	if topic, p, ok := st.PartitionByGroup(2); !ok || topic != "orders" || p != 1 {
		t.Fatalf("group 2: %s %d %v", topic, p, ok)
	}
	// A rejected command is a result, not an error.
	res := propose(t, s, controller.CreateTopic{Name: "orders", ID: controller.TopicID{7}, Partitions: 1, RF: 1, Assignment: [][]int32{{1}}})
	if res.Err != kerr.TopicAlreadyExists {
		t.Fatalf("duplicate topic: %v", res.Err)
	}
	// Producer id blocks come back through the result.
	res = propose(t, s, controller.AllocateProducerIDBlock{Broker: 1, Size: 10})
	if res.Err != nil || res.ProducerIDs == nil || res.ProducerIDs.Size != 10 {
		t.Fatalf("producer ids: %+v", res)
	}
}

func TestThreeFoundersFormOneCluster(t *testing.T) {
	c := formCluster(t, 3)
	id := c.nodes[0].service().State().ClusterID()
	for _, n := range c.nodes {
		st := n.service().State()
		waitFor(t, 10*time.Second, "every broker registered everywhere", func() bool {
			return len(st.LiveBrokers()) == 3
		})
		if st.ClusterID() != id || id == "" {
			t.Fatalf("node %d: cluster id %q, node 1 %q", n.id, st.ClusterID(), id)
		}
	}
	lead := c.leader()
	var follower *node
	for _, n := range c.nodes {
		if n != lead {
			follower = n
			break
		}
	}
	tp := createTopic(t, follower.service(), "events", 4, 3)
	res := propose(t, follower.service(), controller.AllocateProducerIDBlock{Broker: follower.id, Size: 5})
	if res.Err != nil || res.ProducerIDs == nil || res.ProducerIDs.Broker != follower.id {
		t.Fatalf("forwarded producer id block: %+v", res)
	}
	for _, n := range c.nodes {
		waitFor(t, 10*time.Second, "the topic on every broker", func() bool {
			got, ok := n.service().State().Topic("events")
			return ok && len(got.Groups) == 4 && got.Groups[3] == tp.Groups[3]
		})
	}
}

func TestBrokerJoinsRunningCluster(t *testing.T) {
	c := formCluster(t, 3)
	createTopic(t, c.nodes[0].service(), "before", 2, 2)

	n4 := newNode(t, 4, "127.0.0.1:0", storage.NewMemFS())
	c.nodes = append(c.nodes, n4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n4.start(ctx, c.seeds); err != nil {
		t.Fatal(err)
	}
	st := n4.service().State()
	if _, ok := st.Topic("before"); !ok {
		t.Fatal("the joiner does not see a topic created before it joined")
	}
	if len(st.Brokers()) != 4 || st.ClusterID() != c.nodes[0].service().State().ClusterID() {
		t.Fatalf("joiner sees brokers %v, cluster %q", st.Brokers(), st.ClusterID())
	}
	createTopic(t, n4.service(), "after", 1, 3)
	for _, n := range c.nodes {
		waitFor(t, 10*time.Second, "broker 4 and topic after everywhere", func() bool {
			b, ok := n.service().State().Broker(4)
			_, tok := n.service().State().Topic("after")
			return ok && b.Live && tok
		})
	}
	// The joiner heartbeats: the leader keeps it live past the liveness timeout.
	start := time.Now()
	waitFor(t, 10*time.Second, "more than a liveness timeout to pass with broker 4 live", func() bool {
		b, _ := c.leader().service().State().Broker(4)
		if !b.Live {
			t.Fatalf("broker 4 marked dead while heartbeating")
		}
		return time.Since(start) > 2*time.Second
	})
}

func TestFounderRestartsWithHigherIncarnation(t *testing.T) {
	c := formCluster(t, 3)
	createTopic(t, c.nodes[0].service(), "kept", 2, 3)
	n := c.nodes[1]
	before, _ := n.service().State().Broker(n.id)
	n.stop()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	again := newNode(t, n.id, n.addr, n.fs)
	c.nodes[1] = again
	if err := again.start(ctx, c.seeds); err != nil {
		t.Fatal(err)
	}
	s := again.service()
	if s.Incarnation() <= before.Incarnation {
		t.Fatalf("incarnation %d after restart, was %d", s.Incarnation(), before.Incarnation)
	}
	if _, ok := s.State().Topic("kept"); !ok {
		t.Fatal("the restarted broker lost a topic")
	}
	for _, other := range c.nodes {
		waitFor(t, 10*time.Second, "the new incarnation everywhere", func() bool {
			b, ok := other.service().State().Broker(n.id)
			return ok && b.Live && b.Incarnation == s.Incarnation()
		})
	}
	createTopic(t, s, "after-restart", 1, 3)
}

func TestLeaderLossElectsNewControllerAndMarksItDead(t *testing.T) {
	c := formCluster(t, 3)
	old := c.leader()
	old.kill()
	lead := c.leader()
	if lead == old {
		t.Fatal("the killed broker still leads")
	}
	for _, n := range c.nodes {
		if n.down {
			continue
		}
		createTopic(t, n.service(), "t"+string(rune('0'+n.id)), 1, 2)
		waitFor(t, 10*time.Second, "the killed broker marked not live", func() bool {
			b, ok := n.service().State().Broker(old.id)
			return ok && !b.Live
		})
		if b, _ := n.service().State().Broker(lead.id); !b.Live {
			t.Fatalf("the new leader %d is not live", lead.id)
		}
	}
}

func TestProposeWithoutLeaderFailsWithErrNoController(t *testing.T) {
	c := formCluster(t, 3)
	n := c.nodes[0]
	for _, o := range c.nodes[1:] {
		o.kill()
	}
	// Without a quorum the leader steps down (CheckQuorum), then no one leads.
	waitFor(t, 20*time.Second, "no controller leader", func() bool { return n.service().Leader() < 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := n.service().Propose(ctx, controller.SetClusterConfig{Overrides: map[string]string{"a": "b"}})
	if !errors.Is(err, ErrNoController) {
		t.Fatalf("got %v, want ErrNoController", err)
	}
}

func TestSingleNodeRestart(t *testing.T) {
	fs := storage.NewMemFS()
	n := newNode(t, 1, "127.0.0.1:0", fs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	createTopic(t, n.service(), "kept", 2, 1)
	id := n.service().State().ClusterID()
	applied := n.service().State().AppliedIndex()
	n.stop()

	again := newNode(t, 1, n.addr, fs)
	defer again.stop()
	if err := again.start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	st := again.service().State()
	if st.ClusterID() != id || st.AppliedIndex() <= applied || again.service().Incarnation() != 2 {
		t.Fatalf("after restart: cluster %q (was %q), applied %d (was %d), incarnation %d",
			st.ClusterID(), id, st.AppliedIndex(), applied, again.service().Incarnation())
	}
	if tp, ok := st.Topic("kept"); !ok || len(tp.Groups) != 2 {
		t.Fatalf("topic after restart: %+v %v", tp, ok)
	}
	if b, _ := st.Broker(1); b.Incarnation != 2 || !b.Live {
		t.Fatalf("broker after restart: %+v", b)
	}
}

func TestWholeClusterRestart(t *testing.T) {
	c := formCluster(t, 3)
	n4 := newNode(t, 4, "127.0.0.1:0", storage.NewMemFS())
	c.nodes = append(c.nodes, n4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n4.start(ctx, c.seeds); err != nil {
		t.Fatal(err)
	}
	createTopic(t, c.nodes[2].service(), "kept", 3, 3)
	id := c.nodes[0].service().State().ClusterID()
	for _, n := range c.nodes {
		n.stop()
	}
	old := c.nodes
	c.nodes = nil
	for _, n := range old {
		c.nodes = append(c.nodes, newNode(t, n.id, n.addr, n.fs))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.nodes))
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.start(ctx, c.seeds)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", c.nodes[i].id, err)
		}
	}
	for _, n := range c.nodes {
		st := n.service().State()
		if st.ClusterID() != id {
			t.Fatalf("node %d: cluster id %q, want %q", n.id, st.ClusterID(), id)
		}
		if _, ok := st.Topic("kept"); !ok {
			t.Fatalf("node %d lost the topic", n.id)
		}
		if n.service().Incarnation() != 2 {
			t.Fatalf("node %d: incarnation %d", n.id, n.service().Incarnation())
		}
	}
	createTopic(t, c.nodes[3].service(), "after", 1, 3)
}

func TestSilentBrokerMarkedDeadThenLiveAgain(t *testing.T) {
	c := formCluster(t, 3)
	lead := c.leader()
	var quiet *node
	for _, n := range c.nodes {
		if n != lead {
			quiet = n
		}
	}
	st := lead.service().State()
	quiet.service().muted.Store(true)
	waitFor(t, 10*time.Second, "the silent broker marked not live", func() bool {
		b, _ := st.Broker(quiet.id)
		return !b.Live
	})
	if live := st.LiveBrokers(); len(live) != 2 {
		t.Fatalf("live brokers %v", live)
	}
	quiet.service().muted.Store(false)
	waitFor(t, 10*time.Second, "the broker live again once heard", func() bool {
		b, _ := st.Broker(quiet.id)
		return b.Live
	})
}

// A registry routes each message type to one handler: a second service on a node's
// registry is refused when it is created, instead of silently taking the first one's
// messages.
func TestSecondServiceOnARegistryRefused(t *testing.T) {
	n := newNode(t, 1, "127.0.0.1:0", storage.NewMemFS())
	defer n.stop()
	s, err := New(n.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := n.options(nil)
	o.Dir = "controller-2"
	if _, err := New(o); !errors.Is(err, rpc.ErrTypeTaken) {
		t.Fatalf("second service: %v, want rpc.ErrTypeTaken", err)
	}
}

// A broker that restarts after it was marked dead is live from its registration, before
// any heartbeat of its new life: the leader gives the new life a whole liveness timeout
// to be heard, rather than judging it on the heartbeats of its previous life (which once
// marked it dead again a heartbeat after it registered, and a topic created at that moment
// was refused for too few live brokers).
func TestRestartedBrokerLiveFromItsRegistration(t *testing.T) {
	c := formCluster(t, 3)
	lead := c.leader()
	var n *node
	for _, o := range c.nodes {
		if o != lead {
			n = o
		}
	}
	st := lead.service().State()
	n.stop()
	waitFor(t, 10*time.Second, "the stopped broker marked not live", func() bool {
		b, _ := st.Broker(n.id)
		return !b.Live
	})
	again := newNode(t, n.id, n.addr, n.fs)
	c.nodes[slices.Index(c.nodes, n)] = again
	s, err := New(again.options(c.seeds))
	if err != nil {
		t.Fatal(err)
	}
	again.svc.Store(s)
	s.muted.Store(true) // registered, but no heartbeat: only the registration proves it alive
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		s.Close()
		t.Fatal(err)
	}
	registered := time.Now()
	timeout := again.options(nil).LivenessTimeout
	waitFor(t, 10*time.Second, "the silent new life marked not live", func() bool {
		b, _ := st.Broker(n.id)
		return b.Incarnation == s.Incarnation() && !b.Live
	})
	if d := time.Since(registered); d < timeout*7/10 {
		t.Fatalf("the new life was marked dead %v after it registered, within the %v liveness timeout", d, timeout)
	}
	s.muted.Store(false)
	waitFor(t, 10*time.Second, "the broker live again once heard", func() bool {
		b, _ := st.Broker(n.id)
		return b.Live
	})
}
