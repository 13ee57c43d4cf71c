package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/raftrpc"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// node is one broker of a test: a real loopback rpc.Transport and raft.Host wired as a
// broker wires them (one registry: raftrpc's handler, then the service's once it is
// created), and a MemFS that outlives restarts.
type node struct {
	t    *testing.T
	id   int32
	fs   *storage.MemFS
	addr string
	reg  *rpc.Registry
	tr   *rpc.Transport
	host *raft.Host
	svc  atomic.Pointer[Service]
	recv raftrpc.ReceiveStats
	down bool
}

func testLogger(t *testing.T, id int32) *slog.Logger {
	if os.Getenv("CLUSTER_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name(), "n", id)
}

// newNode starts node id's transport (on listen; "127.0.0.1:0" for any port) and host.
func newNode(t *testing.T, id int32, listen string, fs *storage.MemFS) *node {
	t.Helper()
	n := &node{t: t, id: id, fs: fs, reg: rpc.NewRegistry(testLogger(t, id))}
	tr, err := rpc.New(rpc.Options{
		NodeID: id, ClusterID: "cairn-test", ListenAddr: listen, Handler: n.reg.Dispatch,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
		DropAfter: 200 * time.Millisecond, DialTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	n.host, _ = raftrpc.NewHost(tr, raft.HostOptions{NodeID: uint64(id), TickInterval: 20 * time.Millisecond, Workers: 2})
	if err := raftrpc.Register(n.reg, n.host, &n.recv); err != nil {
		n.host.Close()
		t.Fatal(err)
	}
	n.tr = tr
	if err := tr.Start(); err != nil {
		n.host.Close()
		t.Fatal(err)
	}
	n.addr = tr.Addr().String()
	return n
}

func (n *node) options(seeds []string) Options {
	return Options{
		NodeID: n.id, Dir: "controller", FS: n.fs, Host: n.host, Transport: n.tr, Registry: n.reg, Seeds: seeds,
		KafkaAddr: fmt.Sprintf("kafka-%d:9092", n.id), RPCAddr: n.addr, Rack: fmt.Sprintf("rack-%d", n.id%2),
		Logger:          testLogger(n.t, n.id),
		LivenessTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, RequestTimeout: time.Second,
	}
}

func (n *node) start(ctx context.Context, seeds []string) error {
	s, err := New(n.options(seeds))
	if err != nil {
		return err
	}
	n.svc.Store(s)
	if err := s.Run(ctx); err != nil {
		s.Close()
		return err
	}
	return nil
}

func (n *node) service() *Service { return n.svc.Load() }

// kill closes the transport and the host, as a crash would cut the broker off.
func (n *node) kill() {
	n.down = true
	n.tr.Close()
	n.host.Close()
}

// stop shuts the broker down in order: service, transport, host.
func (n *node) stop() {
	if s := n.svc.Load(); s != nil {
		s.Close()
	}
	n.down = true
	n.tr.Close()
	n.host.Close()
}

type testCluster struct {
	t     *testing.T
	nodes []*node
	seeds []string
}

// formCluster starts k founders with the same seeds and waits for every one to register.
func formCluster(t *testing.T, k int) *testCluster {
	t.Helper()
	c := &testCluster{t: t}
	t.Cleanup(c.close)
	for i := 1; i <= k; i++ {
		n := newNode(t, int32(i), "127.0.0.1:0", storage.NewMemFS())
		c.nodes = append(c.nodes, n)
		c.seeds = append(c.seeds, n.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, k)
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
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	// Each Start returns once its own registration is applied locally; the tests start
	// from every broker seeing every other as live.
	for _, n := range c.nodes {
		waitFor(t, 10*time.Second, "every broker live everywhere", func() bool {
			return len(n.service().State().LiveBrokers()) == k
		})
	}
	return c
}

func (c *testCluster) close() {
	for _, n := range c.nodes {
		if s := n.svc.Load(); s != nil {
			s.Close()
		}
	}
	for _, n := range c.nodes {
		n.tr.Close()
	}
	for _, n := range c.nodes {
		n.host.Close()
	}
}

// leader waits until the live nodes agree on a live leader and returns it.
func (c *testCluster) leader() *node {
	c.t.Helper()
	var lead *node
	waitFor(c.t, 20*time.Second, "one controller leader", func() bool {
		lead = nil
		id := int32(-1)
		for _, n := range c.nodes {
			if n.down {
				continue
			}
			l := n.service().Leader()
			if l < 0 || id >= 0 && l != id {
				return false
			}
			id = l
		}
		for _, n := range c.nodes {
			if n.id == id && !n.down {
				lead = n
			}
		}
		return lead != nil
	})
	return lead
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func propose(t *testing.T, s *Service, cmd controller.Command) controller.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.Propose(ctx, cmd)
	if err != nil {
		t.Fatalf("propose %T: %v", cmd, err)
	}
	return res
}

// createTopic places and creates a topic through s, and checks it is visible on s at once.
func createTopic(t *testing.T, s *Service, name string, partitions int32, rf int16) controller.Topic {
	t.Helper()
	live, load := s.State().Placement()
	a, err := controller.Place(live, load, int(partitions), int(rf), 0)
	if err != nil {
		t.Fatal(err)
	}
	id := controller.TopicID{0xca}
	copy(id[1:], name) // test names are short and distinct
	res := propose(t, s, controller.CreateTopic{Name: name, ID: id, Partitions: partitions, RF: rf, Assignment: a})
	if res.Err != nil {
		t.Fatalf("create %s: %v: %s", name, res.Err, res.Msg)
	}
	tp, ok := s.State().Topic(name)
	if !ok {
		t.Fatalf("topic %s not visible on the proposer when Propose returned", name)
	}
	return tp
}
