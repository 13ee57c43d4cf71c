package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

const testCluster = "test-cluster"

// recorder collects what a transport's handler receives.
type recorder struct {
	mu  sync.Mutex
	got map[int32][]Message
}

func (r *recorder) handle(from int32, typ uint8, payload []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[int32][]Message{}
	}
	r.got[from] = append(r.got[from], Message{Type: typ, Payload: payload})
}

func (r *recorder) from(id int32) []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Message(nil), r.got[id]...)
}

func (r *recorder) count(id int32) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got[id])
}

// testOptions are quick to redial and drop, for loopback tests.
func testOptions(id int32, rec *recorder) Options {
	o := Options{
		NodeID:      id,
		ClusterID:   testCluster,
		ListenAddr:  "127.0.0.1:0",
		DialTimeout: 2 * time.Second,
		MinBackoff:  5 * time.Millisecond,
		MaxBackoff:  50 * time.Millisecond,
	}
	if rec != nil {
		o.Handler = rec.handle
	}
	return o
}

func startNode(t *testing.T, o Options) *Transport {
	t.Helper()
	tr, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-tick.C
	}
}

func peerStats(tr *Transport, id int32) PeerStats {
	s, _ := tr.Stats().Peer(id)
	return s
}

func seqPayload(from int32, seq uint32) []byte {
	p := binary.BigEndian.AppendUint32(nil, uint32(from))
	return binary.BigEndian.AppendUint32(p, seq)
}

func TestDeliveryAndOrderThreeNodes(t *testing.T) {
	const n = 3000
	recs := make([]*recorder, 3)
	nodes := make([]*Transport, 3)
	for i := range nodes {
		recs[i] = &recorder{}
		nodes[i] = startNode(t, testOptions(int32(i+1), recs[i]))
	}
	for i, a := range nodes {
		for j, b := range nodes {
			if i != j {
				a.SetPeer(int32(j+1), b.Addr().String())
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i, a := range nodes {
		for j := range nodes {
			if i == j {
				continue
			}
			wg.Add(1)
			go func(a *Transport, from, to int32) {
				defer wg.Done()
				for s := uint32(0); s < n; s++ {
					if err := a.SendWait(ctx, to, uint8(s%7), seqPayload(from, s)); err != nil {
						errs <- fmt.Errorf("%d→%d seq %d: %w", from, to, s, err)
						return
					}
				}
			}(a, int32(i+1), int32(j+1))
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range nodes {
		for j := range nodes {
			if i == j {
				continue
			}
			to, from := recs[j], int32(i+1)
			waitFor(t, 20*time.Second, fmt.Sprintf("%d messages %d→%d", n, from, j+1), func() bool { return to.count(from) >= n })
			got := to.from(from)
			if len(got) != n {
				t.Fatalf("%d→%d: %d messages, want %d", from, j+1, len(got), n)
			}
			for s, m := range got {
				if !bytes.Equal(m.Payload, seqPayload(from, uint32(s))) || m.Type != uint8(s%7) {
					t.Fatalf("%d→%d: message %d out of order or corrupt: type %d payload %x", from, j+1, s, m.Type, m.Payload)
				}
			}
			st := peerStats(nodes[i], int32(j+1))
			if st.MessagesSent != n || st.Dropped != 0 {
				t.Fatalf("%d→%d stats: %+v", from, j+1, st)
			}
			if rs := peerStats(nodes[j], from); rs.MessagesReceived != n || rs.BatchesReceived != st.BatchesSent || rs.BytesReceived != st.BytesSent {
				t.Fatalf("received stats %+v do not match sent %+v", rs, st)
			}
		}
	}
}

func TestBatchingUnderLoad(t *testing.T) {
	for _, window := range []time.Duration{0, 2 * time.Millisecond} {
		t.Run(fmt.Sprintf("window=%v", window), func(t *testing.T) {
			const n = 20000
			rec := &recorder{}
			b := startNode(t, testOptions(2, rec))
			o := testOptions(1, nil)
			o.BatchWindow = window
			a := startNode(t, o)
			a.SetPeer(2, b.Addr().String())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for s := uint32(0); s < n; s++ {
				if err := a.SendWait(ctx, 2, 1, seqPayload(1, s)); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, 20*time.Second, "all messages", func() bool { return rec.count(1) == n })
			st := peerStats(a, 2)
			t.Logf("%d messages in %d batches", st.MessagesSent, st.BatchesSent)
			if st.MessagesSent != n || st.BatchesSent == 0 || st.BatchesSent >= n/4 {
				t.Fatalf("%d messages went in %d batches; want well under %d", st.MessagesSent, st.BatchesSent, n/4)
			}
		})
	}
}

// stuckPeer accepts connections, completes the handshake as node id, and then never reads:
// what a SIGSTOPped broker looks like from the other end.
type stuckPeer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newStuckPeer(t *testing.T, id int32) *stuckPeer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stuckPeer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			var hdr [frameHeaderLen]byte
			if _, err := readFrame(c, &hdr, maxHelloFrame); err != nil {
				continue
			}
			c.Write(appendAck(nil, ack{OK: true, From: id}))
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *stuckPeer) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestBackpressureFromPeerThatDoesNotRead(t *testing.T) {
	const (
		bound   = 64 << 10
		size    = 1 << 10
		offered = 100000 // 100 MB offered in all
	)
	stuck := newStuckPeer(t, 2)
	o := testOptions(1, nil)
	o.MaxQueueBytes = bound
	o.MaxBatchBytes = 16 << 10
	o.WriteTimeout = time.Minute // the writer stays blocked for the whole test
	a := startNode(t, o)
	a.SetPeer(2, stuck.ln.Addr().String())

	before := heapAlloc()
	accepted, refused := 0, 0
	for i := 0; i < offered; i++ {
		err := a.Send(2, 1, make([]byte, size)) // fresh memory each time: unbounded queueing would show
		switch {
		case err == nil:
			accepted++
		case errors.Is(err, ErrBackpressure):
			refused++
		default:
			t.Fatal(err)
		}
		if i%1000 == 0 {
			if q := peerStats(a, 2).QueuedBytes; q > bound {
				t.Fatalf("queue holds %d bytes, bound %d", q, bound)
			}
		}
	}
	grown := int64(heapAlloc()) - int64(before)
	st := peerStats(a, 2)
	t.Logf("accepted %d, refused %d, heap grew %d bytes, stats %+v", accepted, refused, grown, st)
	if refused == 0 || st.Backpressured != uint64(refused) {
		t.Fatalf("no backpressure: accepted %d refused %d (stats say %d)", accepted, refused, st.Backpressured)
	}
	if st.QueuedBytes > bound {
		t.Fatalf("queue holds %d bytes, bound %d", st.QueuedBytes, bound)
	}
	// Kernel socket buffers absorb some megabytes; the rest must have been refused.
	if accepted*size > offered*size/2 {
		t.Fatalf("accepted %d of %d messages from a peer that never reads", accepted, offered)
	}
	if grown > 48<<20 {
		t.Fatalf("heap grew by %d bytes", grown)
	}
	// Once the writer is blocked for good, SendWait waits and gives up with its context.
	waitFor(t, 10*time.Second, "SendWait to time out on a full queue", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		return errors.Is(a.SendWait(ctx, 2, 1, make([]byte, size)), context.DeadlineExceeded)
	})
}

func TestReconnectAfterPeerRestart(t *testing.T) {
	rec := &recorder{}
	b, err := New(testOptions(2, rec))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	addr := b.Addr().String()
	a := startNode(t, testOptions(1, nil))
	a.SetPeer(2, addr)
	if err := a.Send(2, 1, []byte("before")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "first message", func() bool { return rec.count(1) == 1 })
	b.Close()

	rec2 := &recorder{}
	o := testOptions(2, rec2)
	o.ListenAddr = addr
	b2 := startNode(t, o)
	// Keep sending until the restarted peer hears from us; messages sent into the gap may be lost.
	i := 0
	waitFor(t, 10*time.Second, "a message after the restart", func() bool {
		i++
		a.Send(2, 1, []byte(fmt.Sprintf("after-%d", i)))
		return rec2.count(1) > 0
	})
	st := peerStats(a, 2)
	if st.Reconnects < 1 || st.Connects < 2 {
		t.Fatalf("stats after restart: %+v", st)
	}
	// Order still holds on the new connection.
	for j := 0; j < 100; j++ {
		if err := a.SendWait(context.Background(), 2, 2, seqPayload(1, uint32(j))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "ordered messages", func() bool {
		n := 0
		for _, m := range rec2.from(1) {
			if m.Type == 2 {
				n++
			}
		}
		return n == 100
	})
	seq := uint32(0)
	for _, m := range rec2.from(1) {
		if m.Type == 2 {
			if !bytes.Equal(m.Payload, seqPayload(1, seq)) {
				t.Fatalf("message %d out of order", seq)
			}
			seq++
		}
	}
	_ = b2
}

// expectClosed reads from c until the other side closes it.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("connection left open")
	}
}

// handshake dials tr as node from and completes the hello.
func handshake(t *testing.T, tr *Transport, from int32) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", tr.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(appendHello(nil, hello{From: from, To: tr.opts.NodeID, Cluster: testCluster})); err != nil {
		t.Fatal(err)
	}
	var hdr [frameHeaderLen]byte
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	body, err := readFrame(c, &hdr, maxHelloFrame)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := decodeAck(body); err != nil || !a.OK {
		t.Fatalf("handshake: %+v %v", a, err)
	}
	return c
}

func TestBadFramesCloseTheConnectionOnly(t *testing.T) {
	rec := &recorder{}
	o := testOptions(2, rec)
	o.MaxFrameBytes = 1 << 20
	b := startNode(t, o)
	a := startNode(t, testOptions(1, nil))
	a.SetPeer(2, b.Addr().String())
	if err := a.Send(2, 1, []byte("first")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "first message", func() bool { return rec.count(1) == 1 })

	t.Run("garbage instead of a handshake", func(t *testing.T) {
		c, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		expectClosed(t, c)
	})
	good := appendBatch(nil, []Message{{Type: 1, Payload: []byte("evil")}})
	frames := map[string][]byte{
		"bad crc": func() []byte { f := bytes.Clone(good); f[len(f)-1] ^= 0xff; return f }(),
		"oversized": func() []byte {
			f := bytes.Clone(good[:frameHeaderLen])
			binary.BigEndian.PutUint32(f, 1<<20+1)
			return f
		}(),
		"huge length": {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		"batch count lies": func() []byte {
			f := bytes.Clone(good)
			binary.BigEndian.PutUint32(f[10:], 2)
			finishFrame(f, 0)
			return f
		}(),
		"hello again": appendHello(nil, hello{From: 9, To: 2, Cluster: testCluster}),
	}
	for name, f := range frames {
		t.Run(name, func(t *testing.T) {
			c := handshake(t, b, 9)
			c.Write(f)
			expectClosed(t, c)
		})
	}
	st := b.Stats()
	if st.InboundRejected != 1 || st.InboundFrameErrors != uint64(len(frames)) {
		t.Fatalf("rejected %d (want 1), frame errors %d (want %d)", st.InboundRejected, st.InboundFrameErrors, len(frames))
	}
	if n := rec.count(9); n != 0 {
		t.Fatalf("%d messages from bad connections delivered", n)
	}
	// The transport keeps serving its real peer, on the connection it already had.
	if err := a.Send(2, 1, []byte("second")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "second message", func() bool { return rec.count(1) == 2 })
	if s := peerStats(a, 2); s.Connects != 1 || s.Dropped != 0 {
		t.Fatalf("good peer disturbed: %+v", s)
	}
}

func TestHandshakeRefusals(t *testing.T) {
	rec := &recorder{}
	b := startNode(t, testOptions(2, rec))
	o := testOptions(1, nil)
	o.ClusterID = "other-cluster"
	foreign := startNode(t, o)
	foreign.SetPeer(2, b.Addr().String())
	lost := startNode(t, testOptions(5, nil))
	lost.SetPeer(3, b.Addr().String()) // node 3's address is wrong: node 2 answers there

	foreign.Send(2, 1, []byte("x"))
	lost.Send(3, 1, []byte("x"))
	waitFor(t, 10*time.Second, "both refused", func() bool {
		return peerStats(foreign, 2).DialFailures >= 1 && peerStats(lost, 3).DialFailures >= 1 && b.Stats().InboundRejected >= 2
	})
	if rec.count(1)+rec.count(5) != 0 {
		t.Fatal("a refused node's message was delivered")
	}
	if s := peerStats(foreign, 2); s.Connects != 0 || s.MessagesSent != 0 {
		t.Fatalf("foreign node connected: %+v", s)
	}
}

func TestSendErrors(t *testing.T) {
	o := testOptions(1, nil)
	o.MaxQueueBytes = 1000
	a := startNode(t, o)
	if err := a.Send(7, 1, nil); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("unknown peer: %v", err)
	}
	a.SetPeer(7, "127.0.0.1:1")
	if err := a.Send(7, 1, make([]byte, 1000)); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	a.RemovePeer(7)
	if err := a.Send(7, 1, nil); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("removed peer: %v", err)
	}
	a.SetPeer(7, "127.0.0.1:1")
	a.Close()
	if err := a.Send(7, 1, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
	if err := a.SendWait(context.Background(), 7, 1, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed SendWait: %v", err)
	}
}

func TestQueueDroppedWhilePeerStaysDown(t *testing.T) {
	// A port with nothing listening: grab one and release it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()

	o := testOptions(1, nil)
	o.MaxQueueBytes = 10 * encodedSize(100)
	o.DropAfter = 30 * time.Millisecond
	a := startNode(t, o)
	a.SetPeer(2, dead)
	for i := 0; i < 10; i++ {
		if err := a.Send(2, 1, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Send(2, 1, make([]byte, 100)); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("over the bound while down: %v", err)
	}
	waitFor(t, 10*time.Second, "queue dropped", func() bool {
		s := peerStats(a, 2)
		return s.Dropped == 10 && s.QueuedBytes == 0 && s.QueuedMessages == 0
	})
	if err := a.Send(2, 1, make([]byte, 100)); err != nil {
		t.Fatalf("queue space not given back: %v", err)
	}
	if s := peerStats(a, 2); s.DialFailures < 2 {
		t.Fatalf("dial failures %d", s.DialFailures)
	}
}

func TestSetPeerMovesToNewAddress(t *testing.T) {
	rec1, rec2 := &recorder{}, &recorder{}
	old := startNode(t, testOptions(2, rec1))
	moved := startNode(t, testOptions(2, rec2))
	a := startNode(t, testOptions(1, nil))
	a.SetPeer(2, old.Addr().String())
	a.Send(2, 1, []byte("x"))
	waitFor(t, 10*time.Second, "message at the old address", func() bool { return rec1.count(1) == 1 })
	a.SetPeer(2, moved.Addr().String())
	a.Send(2, 1, []byte("y"))
	waitFor(t, 10*time.Second, "message at the new address", func() bool { return rec2.count(1) == 1 })
	if rec1.count(1) != 1 {
		t.Fatal("message went to the old address")
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t)
	stuck := newStuckPeer(t, 4)
	defer stuck.close()
	recs := []*recorder{{}, {}, {}}
	var nodes []*Transport
	for i := range recs {
		tr, err := New(testOptions(int32(i+1), recs[i]))
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Start(); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, tr)
	}
	for i, a := range nodes {
		for j, b := range nodes {
			if i != j {
				a.SetPeer(int32(j+1), b.Addr().String())
			}
		}
		a.SetPeer(4, stuck.ln.Addr().String()) // a writer blocked in Write at Close
		a.SetPeer(5, "127.0.0.1:1")            // a writer in dial backoff at Close
	}
	for s := uint32(0); s < 500; s++ {
		for i, a := range nodes {
			a.Send(int32((i+1)%3+1), 1, seqPayload(int32(i+1), s))
			a.Send(4, 1, make([]byte, 4096))
			a.Send(5, 1, nil)
		}
	}
	waitFor(t, 10*time.Second, "traffic between the nodes", func() bool {
		return recs[1].count(1) > 0 && recs[2].count(2) > 0 && recs[0].count(3) > 0
	})
	for _, n := range nodes {
		n.Close()
	}
	for _, n := range nodes {
		n.Close() // idempotent
	}
}

func TestSendWaitEndsWhenPeerRemoved(t *testing.T) {
	o := testOptions(1, nil)
	o.MaxQueueBytes = encodedSize(10)
	a := startNode(t, o)
	a.SetPeer(2, "127.0.0.1:1")
	if err := a.Send(2, 1, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.SendWait(context.Background(), 2, 1, make([]byte, 10)) }()
	waitFor(t, 10*time.Second, "SendWait to hit the full queue", func() bool { return peerStats(a, 2).Backpressured >= 1 })
	a.RemovePeer(2)
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnknownPeer) {
			t.Fatalf("SendWait after RemovePeer: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SendWait still blocked after RemovePeer")
	}
}

// TestHeartbeatsOfManyGroupsOneMessagePerInterval drives the coalescer the way the Raft host
// will: every tick, 10,000 groups shared with peer 2 (and 2,500 with peer 3) each add a
// heartbeat, and the flush at the end of the tick sends one message per peer.
func TestHeartbeatsOfManyGroupsOneMessagePerInterval(t *testing.T) {
	const (
		groups = 10000
		ticks  = 5
		hbType = 7
	)
	rec2, rec3 := &recorder{}, &recorder{}
	b := startNode(t, testOptions(2, rec2))
	c := startNode(t, testOptions(3, rec3))
	a := startNode(t, testOptions(1, nil))
	a.SetPeer(2, b.Addr().String())
	a.SetPeer(3, c.Addr().String())

	co := NewHeartbeatCoalescer(0)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for k := 0; k < ticks; k++ {
		<-tick.C
		for g := uint64(0); g < groups; g++ {
			co.Add(2, Heartbeat{Group: g, Term: uint64(k), Commit: g * 10})
			if g%4 == 0 {
				co.Add(3, Heartbeat{Group: g, Term: uint64(k), Commit: g})
			}
		}
		if err := co.Flush(func(to int32, p []byte) error { return a.Send(to, hbType, p) }); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "all ticks' heartbeats", func() bool { return rec2.count(1) == ticks && rec3.count(1) == ticks })
	for k, m := range rec2.from(1) {
		hbs, err := DecodeHeartbeats(nil, m.Payload)
		if err != nil || m.Type != hbType || len(hbs) != groups {
			t.Fatalf("tick %d: type %d, %d entries, %v", k, m.Type, len(hbs), err)
		}
		if hbs[1234] != (Heartbeat{Group: 1234, Term: uint64(k), Commit: 12340}) {
			t.Fatalf("tick %d: entry %v", k, hbs[1234])
		}
	}
	for _, m := range rec3.from(1) {
		if hbs, _ := DecodeHeartbeats(nil, m.Payload); len(hbs) != groups/4 {
			t.Fatalf("peer 3 got %d entries", len(hbs))
		}
	}
	if s := peerStats(a, 2); s.MessagesSent != ticks {
		t.Fatalf("%d messages to peer 2 for %d ticks", s.MessagesSent, ticks)
	}
}

// Messages sent together share one frame and one write, in order; refused, none of them is
// queued.
func TestSendAllOneWriteAllOrNone(t *testing.T) {
	rec := &recorder{}
	b := startNode(t, testOptions(2, rec))
	a := startNode(t, testOptions(1, nil))
	a.SetPeer(2, b.Addr().String())
	if err := a.SendAll(2, Message{Type: 1, Payload: []byte("batch")}, Message{Type: 2, Payload: []byte("rider")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "both messages", func() bool { return rec.count(1) == 2 })
	got := rec.from(1)
	if got[0].Type != 1 || string(got[0].Payload) != "batch" || got[1].Type != 2 || string(got[1].Payload) != "rider" {
		t.Fatalf("received %q", got)
	}
	if s := peerStats(a, 2); s.BatchesSent != 1 || s.MessagesSent != 2 {
		t.Fatalf("%d messages in %d batches, want 2 in 1", s.MessagesSent, s.BatchesSent)
	}

	o := testOptions(3, nil)
	o.MaxQueueBytes = 3 * encodedSize(100)
	c := startNode(t, o)
	c.SetPeer(2, "127.0.0.1:1") // never connects: what is queued stays queued
	pair := []Message{{Type: 1, Payload: make([]byte, 100)}, {Type: 2, Payload: make([]byte, 100)}}
	if err := c.SendAll(2, pair...); err != nil {
		t.Fatal(err)
	}
	if err := c.SendAll(2, pair...); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("a pair over the bound: %v", err)
	}
	if err := c.SendAll(2, Message{Type: 1}, Message{Type: 2, Payload: make([]byte, 600)}); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("a pair with a message too large: %v", err)
	}
	if s := peerStats(c, 2); s.QueuedMessages != 2 {
		t.Fatalf("%d messages queued, want the first pair's 2 only", s.QueuedMessages)
	}
	if err := c.Send(2, 1, make([]byte, 100)); err != nil {
		t.Fatalf("room for one more, refused: %v", err)
	}
}

// TestPeerGoneOnRefusedDialOnly: a peer whose process stopped (its port refuses) is
// reported once per episode, again after it came back and stopped once more; a peer that
// accepts connections but never answers (a paused process) is never reported.
func TestPeerGoneOnRefusedDialOnly(t *testing.T) {
	b, err := New(testOptions(2, &recorder{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	addr := b.Addr().String()
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never says hello
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	o := testOptions(1, nil)
	o.DialTimeout = 50 * time.Millisecond
	a := startNode(t, o)
	var mu sync.Mutex
	gone := map[int32]int{}
	a.OnPeerGone(func(id int32) {
		mu.Lock()
		gone[id]++
		mu.Unlock()
	})
	reports := func(id int32) int {
		mu.Lock()
		defer mu.Unlock()
		return gone[id]
	}
	a.SetPeer(2, addr)
	a.SetPeer(3, silent.Addr().String())
	send := func() { a.Send(2, 1, []byte("x")); a.Send(3, 1, []byte("x")) }
	waitFor(t, 10*time.Second, "a connection to peer 2", func() bool { send(); return peerStats(a, 2).Connects >= 1 })
	if n := reports(2); n != 0 {
		t.Fatalf("peer 2 reported gone %d times while it listens", n)
	}

	b.Close()
	waitFor(t, 10*time.Second, "peer 2 reported gone", func() bool { send(); return reports(2) == 1 })
	// More refused dials in the same episode are not reported again.
	before := peerStats(a, 2).DialFailures
	waitFor(t, 10*time.Second, "more refused dials", func() bool { send(); return peerStats(a, 2).DialFailures >= before+3 })
	if n := reports(2); n != 1 {
		t.Fatalf("peer 2 reported %d times in one episode", n)
	}

	o2 := testOptions(2, &recorder{})
	o2.ListenAddr = addr
	b2, err := New(o2)
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a reconnection", func() bool { send(); return peerStats(a, 2).Connects >= 2 })
	b2.Close()
	waitFor(t, 10*time.Second, "peer 2 reported gone again", func() bool { send(); return reports(2) == 2 })

	if peerStats(a, 3).DialFailures == 0 {
		t.Fatal("no failed dial to the silent peer: the test did not exercise it")
	}
	if n := reports(3); n != 0 {
		t.Fatalf("the silent peer was reported gone %d times", n)
	}
}
