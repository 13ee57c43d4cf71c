package faults

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"os"
	"slices"
	"testing"
	"time"
)

// helloFrame is the rpc hello of node from to node to, as the real transport sends it.
func helloFrame(from, to int32) []byte {
	body := []byte{rpcWireVersion, rpcKindHello}
	body = binary.BigEndian.AppendUint32(body, uint32(from))
	body = binary.BigEndian.AppendUint32(body, uint32(to))
	body = binary.BigEndian.AppendUint16(body, 1)
	body = append(body, 'c')
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	frame = binary.BigEndian.AppendUint32(frame, crc32.Checksum(body, castagnoli))
	return append(frame, body...)
}

// delayedLink starts a proxy for node 2 in front of a plain TCP listener, dials it as node
// 1 with delay d on that link, and returns the dialler's end and the listener's end (past
// the replayed hello).
func delayedLink(t *testing.T, d time.Duration) (p *proxy, sender, receiver net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p, err = newProxy(2, t.Logf, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	p.setTarget(ln.Addr().String())
	p.setDelay(1, d)
	sender, err = net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sender.Close() })
	hello := helloFrame(1, 2)
	if _, err := sender.Write(hello); err != nil {
		t.Fatal(err)
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	receiver, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { receiver.Close() })
	receiver.SetDeadline(time.Now().Add(30 * time.Second))
	got := make([]byte, len(hello))
	if _, err := io.ReadFull(receiver, got); err != nil || !bytes.Equal(got, hello) {
		t.Fatalf("replayed hello %x, %v; want %x", got, err, hello)
	}
	return p, sender, receiver
}

// TestRelayDelay: a message from the dialler reaches the listener no sooner than the
// link's delay and not much later, at the delays the rack benchmarks use.
func TestRelayDelay(t *testing.T) {
	for _, d := range []time.Duration{200 * time.Microsecond, 2 * time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			_, sender, receiver := delayedLink(t, d)
			var took []time.Duration
			buf := make([]byte, 8)
			for range 50 {
				start := time.Now()
				if _, err := sender.Write(buf); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(receiver, buf); err != nil {
					t.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			t.Logf("delay %v: measured min %v, median %v, max %v", d, took[0], took[len(took)/2], took[len(took)-1])
			if took[0] < d {
				t.Errorf("a message arrived after %v, before the link's delay %v", took[0], d)
			}
			// The median, not the maximum: two shared cores may deschedule any one relay.
			if med := took[len(took)/2]; med >= d+3*time.Millisecond {
				t.Errorf("median arrival %v, want under %v", med, d+3*time.Millisecond)
			}
		})
	}
}

// TestRelayDelayKeepsOrder: bytes arrive in the order they were sent, across many chunks,
// while the delay changes under them (a change must not let a later chunk overtake).
func TestRelayDelayKeepsOrder(t *testing.T) {
	p, sender, receiver := delayedLink(t, time.Millisecond)
	want := make([]byte, 4<<20)
	for i := range want {
		want[i] = byte(i * 7 >> 3)
	}
	errc := make(chan error, 1)
	go func() {
		for off := 0; off < len(want); off += 64 << 10 {
			if off == len(want)/2 {
				p.setDelay(1, 0) // later chunks are due before earlier ones were
			}
			if _, err := sender.Write(want[off : off+64<<10]); err != nil {
				errc <- err
				return
			}
		}
		errc <- sender.Close()
	}()
	got, err := io.ReadAll(receiver)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("received %d bytes, want %d; first difference at byte %d", len(got), len(want), i)
	}
}

// TestRelayDelayBackpressure: a listener that stops reading stops the sender after a
// bounded amount (the proxy's queue plus the sockets' buffers), not after everything it
// has to send.
func TestRelayDelayBackpressure(t *testing.T) {
	_, sender, _ := delayedLink(t, 100*time.Microsecond)
	const limit = 256 << 20
	chunk := make([]byte, 64<<10)
	written := 0
	for written < limit {
		// The deadline is how the test sees a blocked sender, not a wait for the proxy.
		sender.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := sender.Write(chunk)
		written += n
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("the sender blocked after %d MiB", written>>20)
	// The queue holds 8 MiB; loopback sockets buffer a few MiB each way on top.
	if bound := relayQueueChunks*relayChunkBytes + 32<<20; written >= bound {
		t.Fatalf("the sender wrote %d MiB into a listener that reads nothing (bound %d MiB)", written>>20, bound>>20)
	}
}

// TestRelayDelayCutDropsQueued: a cut closes both ends at once; what was still queued for
// its due time never reaches the listener.
func TestRelayDelayCutDropsQueued(t *testing.T) {
	p, sender, receiver := delayedLink(t, time.Hour)
	if _, err := sender.Write([]byte("queued")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "the chunk held for its delay", func() bool { return p.stats().Delayed == 1 })
	p.cut(1)
	n, err := io.Copy(io.Discard, receiver)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d queued bytes reached the listener across the cut", n)
	}
	if s := p.stats(); s.Dropped != 1 {
		t.Fatalf("cut dropped %d connections, want 1 (%+v)", s.Dropped, s)
	}
	// The relay must not sit out the hour: closing the proxy waits for every relay.
	closed := make(chan struct{})
	go func() { p.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy's relay still waits for a cut connection's queued chunk")
	}
}
