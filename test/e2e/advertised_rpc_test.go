package e2e

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// tcpForwarder accepts connections on its own loopback port and relays each one, both
// ways, to a fixed target. It stands for a NAT or proxy between brokers.
type tcpForwarder struct {
	ln     net.Listener
	target string
	live   atomic.Int64 // relayed connections still open

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startForwarder(t testing.TB, target string) *tcpForwarder {
	t.Helper()
	// The test holds the listener from here on, so no other process can take its port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &tcpForwarder{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(f.close)
	return f
}

func (f *tcpForwarder) Addr() string { return f.ln.Addr().String() }

func (f *tcpForwarder) serve() {
	defer f.wg.Done()
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", f.target, 5*time.Second)
		if err != nil { // the broker behind is not listening yet: its peer redials
			in.Close()
			continue
		}
		if !f.track(in, out) {
			return
		}
		f.live.Add(1)
		var ended atomic.Int32
		done := func() {
			if ended.Add(1) == 2 {
				f.live.Add(-1)
			}
		}
		f.wg.Add(2)
		go f.pipe(out, in, done)
		go f.pipe(in, out, done)
	}
}

func (f *tcpForwarder) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *tcpForwarder) pipe(dst, src net.Conn, done func()) {
	defer f.wg.Done()
	defer done()
	io.Copy(dst, src)
	// One side ended: end both, as a broker sees a dropped connection.
	dst.Close()
	src.Close()
}

func (f *tcpForwarder) close() {
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
}

// TestClusterAdvertisedRPCAddr: three brokers bind their rpc listeners on one set of
// ports, advertise another (a forwarder in front of each) and are seeded with the
// advertised addresses. The cluster forms, registers the advertised addresses,
// replicates through the forwarders, and DescribeConfigs reports advertised.rpc.addr.
func TestClusterAdvertisedRPCAddr(t *testing.T) {
	t.Parallel()
	const n = 3
	addrs := make([][3]string, n)
	fwds := make([]*tcpForwarder, n)
	var seeds []string
	for i := range addrs {
		addrs[i] = [3]string{freeAddr(t), freeAddr(t), freeAddr(t)}
		fwds[i] = startForwarder(t, addrs[i][2])
		seeds = append(seeds, fwds[i].Addr())
	}
	bs := make([]*Broker, n)
	for i := range bs {
		bs[i] = newBroker(t, BrokerOpts{NodeID: i + 1, Addrs: &addrs[i], Args: []string{
			"--seeds", strings.Join(seeds, ","), "--rack", fmt.Sprintf("rack-%d", i+1),
			"--advertised-rpc-addr", fwds[i].Addr(),
		}})
		bs[i].KafkaAddr, bs[i].AdminAddr, bs[i].RPCAddr = addrs[i][0], addrs[i][1], addrs[i][2]
	}
	for _, b := range bs {
		t.Cleanup(b.cleanupStop) // a broker that never started has nothing to stop
	}
	launchTogether(t, bs)
	waitListed(t, bs)

	// The node property is visible, and is the forwarder's address, not the bind address.
	for i, b := range bs {
		rcs, err := b.Admin(t).DescribeBrokerConfigs(ctxFor(t, 10*time.Second), int32(i+1))
		if err != nil {
			t.Fatalf("DescribeConfigs broker %d: %v", i+1, err)
		}
		got := map[string]string{}
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				got[c.Key] = c.MaybeValue()
			}
		}
		if got["advertised.rpc.addr"] != fwds[i].Addr() || got["rpc.addr"] != addrs[i][2] {
			t.Errorf("broker %d: advertised.rpc.addr %q rpc.addr %q, want %q and %q",
				i+1, got["advertised.rpc.addr"], got["rpc.addr"], fwds[i].Addr(), addrs[i][2])
		}
	}

	createReplicatedTopic(t, bs[0].Admin(t), "adv", 3, 3)
	prod := clusterClient(t, bs[1:2], kgo.DefaultProduceTopic("adv"), kgo.RequiredAcks(kgo.AllISRAcks()))
	acked := produceSync(t, prod, "adv", "a", 300)
	got := consumeAll(t, bs[2], "adv", 3, 300)
	checkAckedReadable(t, acked, got)
	for p := int32(0); p < 3; p++ {
		waitFor(t, 30*time.Second, func() bool {
			var ends []int64
			for _, b := range bs {
				st, ok := adminPartition(b, "adv", p)
				if !ok {
					return false
				}
				ends = append(ends, st.LogEnd)
			}
			return ends[0] == ends[1] && ends[1] == ends[2] && ends[0] > 0
		})
	}
	// Peers dial the registered address, so it is the advertised one: every broker's
	// long-lived inbound connections (one per peer; seed probes close at once) run
	// through its forwarder.
	for _, f := range fwds {
		waitFor(t, 30*time.Second, func() bool { return f.live.Load() >= n-1 })
	}
}
