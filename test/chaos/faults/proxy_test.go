package faults

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/rpc"
)

// waitUntil polls cond until it holds, failing the test after timeout.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProxyAgainstRealTransport: the proxy parses the hellos of the real rpc transport
// (so a wire change shows here first), relays its traffic, and a cut both refuses new
// connections from that sender and drops the open one, only for that sender.
func TestProxyAgainstRealTransport(t *testing.T) {
	var got atomic.Int64
	recv, err := rpc.New(rpc.Options{NodeID: 2, ClusterID: "c", ListenAddr: "127.0.0.1:0",
		Handler: func(from int32, typ uint8, payload []byte) {
			if from == 1 {
				got.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	p, err := newProxy(2, t.Logf, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	p.setTarget(recv.Addr().String())

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if id, err := rpc.Probe(ctx, p.addr(), 1, "c"); err != nil || id != 2 {
		t.Fatalf("probe through the proxy: id %d, %v", id, err)
	}

	send, err := rpc.New(rpc.Options{NodeID: 1, ClusterID: "c", ListenAddr: "127.0.0.1:0",
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, DropAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer send.Close()
	send.SetPeer(2, p.addr())
	if err := send.Send(2, 9, []byte("x")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "message through the proxy", func() bool { return got.Load() == 1 })

	p.cut(1)
	if s := p.stats(); s.Dropped != 1 {
		t.Fatalf("cut dropped %d connections, want 1 (%+v)", s.Dropped, s)
	}
	if _, err := rpc.Probe(ctx, p.addr(), 1, "c"); err == nil {
		t.Fatal("probe from a cut node was answered")
	}
	if id, err := rpc.Probe(ctx, p.addr(), 3, "c"); err != nil || id != 2 {
		t.Fatalf("probe from an uncut node: id %d, %v", id, err)
	}
	// The sender redials and is refused while the cut lasts.
	send.Send(2, 9, []byte("y"))
	waitUntil(t, 15*time.Second, "redial refused", func() bool { return p.stats().Refused >= 2 }) // the redial backoff stretches on a loaded machine
	if got.Load() != 1 {
		t.Fatalf("%d messages arrived across the cut", got.Load()-1)
	}

	p.heal(1)
	send.Send(2, 9, []byte("z"))
	waitUntil(t, 5*time.Second, "traffic after heal", func() bool { return got.Load() >= 2 })
	if s := p.stats(); s.BadHello != 0 {
		t.Fatalf("bad hellos: %+v", s)
	}
}
