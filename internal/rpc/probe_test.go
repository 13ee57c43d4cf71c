package rpc

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

func TestProbeLearnsNodeID(t *testing.T) {
	var rec recorder
	b := startNode(t, testOptions(7, &rec))
	a, err := New(testOptions(3, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := a.Probe(ctx, b.Addr().String())
	if err != nil || id != 7 {
		t.Fatalf("probe: %d, %v; want 7", id, err)
	}
	// A probe delivers nothing and is not a connection of the prober.
	if st := b.Stats(); st.ProbesAnswered != 1 || st.InboundRejected != 0 || len(st.Peers) != 0 {
		t.Fatalf("after a probe: %+v", st)
	}
	if rec.count(3) != 0 {
		t.Fatal("a probe delivered messages")
	}
}

func TestProbeRefusedByAnotherCluster(t *testing.T) {
	b := startNode(t, testOptions(7, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Probe(ctx, b.Addr().String(), 3, "other-cluster")
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("probe from another cluster: %v, want refused", err)
	}
	if st := b.Stats(); st.InboundRejected != 1 || st.ProbesAnswered != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestProbeEndsWithContext(t *testing.T) {
	// A listener that accepts and never answers: the probe must give up when ctx ends.
	ln := mustListen(t)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			var b [1]byte
			c.Read(b[:])
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Probe(ctx, ln.Addr().String(), 3, testCluster); err == nil {
		t.Fatal("probe of a silent listener succeeded")
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
