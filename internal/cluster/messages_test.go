package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/storage"
)

func sampleMessages() map[uint8][]any {
	return map[uint8][]any{
		MsgJoinRequest: {joinRequest{RPCAddr: "10.0.0.4:9093"}},
		MsgJoinResponse: {
			joinResponse{Status: statusOK, Leader: 2, LeaderAddr: "10.0.0.2:9093", Voters: []uint64{1, 2, 3}, Learners: []uint64{4}},
			joinResponse{Status: statusNotLeader, Leader: -1, Msg: "no leader"},
		},
		MsgProposeRequest: {proposeRequest{Corr: 9, RPCAddr: "a:1", Command: []byte(`{"v":1}`)}},
		MsgProposeResponse: {
			proposeResponse{Corr: 9, Status: statusOK, Leader: 1, Index: 17, PIDs: &controller.ProducerIDBlock{Broker: 3, First: 1000, Size: 10}},
			proposeResponse{Corr: 10, Status: statusOK, Leader: 1, Index: 18, Code: 36, Msg: "exists"},
			proposeResponse{Corr: 11, Status: statusRetry, Leader: -1},
		},
		MsgHeartbeat: {heartbeat{Incarnation: 3, RPCAddr: "b:2"}},
	}
}

func encodeAny(m any) []byte {
	switch m := m.(type) {
	case joinRequest:
		return m.encode()
	case joinResponse:
		return m.encode()
	case proposeRequest:
		return m.encode()
	case proposeResponse:
		return m.encode()
	case heartbeat:
		return m.encode()
	}
	panic("unknown message")
}

func TestMessagesRoundTrip(t *testing.T) {
	for typ, ms := range sampleMessages() {
		for _, m := range ms {
			b := encodeAny(m)
			got, err := decodeMessage(typ, b)
			if err != nil {
				t.Fatalf("type %d %+v: %v", typ, m, err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("type %d: got %+v, want %+v", typ, got, m)
			}
			// Every strict prefix, and any trailing byte, is refused.
			for i := range b {
				if _, err := decodeMessage(typ, b[:i]); err == nil {
					t.Fatalf("type %d: prefix of %d bytes decoded", typ, i)
				}
			}
			if _, err := decodeMessage(typ, append(bytes.Clone(b), 0)); err == nil {
				t.Fatalf("type %d: trailing byte accepted", typ)
			}
		}
	}
}

// TestGarbageRefused feeds every number of the cluster block random payloads, and every
// message type mutated ones, through the node's registry as the transport delivers them, to
// a service that is not running: each reaches the service, is refused without a panic, and
// is counted. Messages of other types never reach it.
func TestGarbageRefused(t *testing.T) {
	n := newNode(t, 1, "127.0.0.1:0", storage.NewMemFS())
	defer n.stop()
	s, err := New(n.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deliver := n.reg.Dispatch
	deliver(1, 1, []byte("raft")) // raftrpc's, which drops it
	deliver(1, 15, nil)           // nobody's: the registry drops both
	deliver(1, 32, nil)
	if s.DroppedMessages() != 0 || n.recv.Dropped.Load() != 1 || n.reg.Dropped() != 2 {
		t.Fatalf("claimed a message of another type: service dropped %d, raftrpc %d, registry %d",
			s.DroppedMessages(), n.recv.Dropped.Load(), n.reg.Dropped())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	refused := uint64(0)
	for typ := uint8(16); typ <= 31; typ++ {
		if !n.reg.Registered(typ) {
			t.Fatalf("type %d not claimed", typ)
		}
		for range 200 {
			b := make([]byte, rng.IntN(64))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			deliver(2, typ, b)
			if _, err := decodeMessage(typ, b); err != nil {
				refused++
			}
		}
		if got := s.DroppedMessages(); got != refused {
			t.Fatalf("after type %d: the service dropped %d, want %d", typ, got, refused)
		}
	}
	for typ, ms := range sampleMessages() {
		for _, m := range ms {
			b := encodeAny(m)
			for i := range b {
				c := bytes.Clone(b)
				c[i] ^= 0xff
				deliver(2, typ, c)
				if _, err := decodeMessage(typ, c); err != nil {
					refused++
				}
			}
		}
	}
	// A well-formed message from an impossible sender is refused too.
	deliver(0, MsgHeartbeat, heartbeat{Incarnation: 1, RPCAddr: "x:1"}.encode())
	refused++
	if got := s.DroppedMessages(); got != refused || refused == 0 {
		t.Fatalf("dropped %d, want %d", got, refused)
	}
	if n.reg.Dropped() != 2 {
		t.Fatalf("the registry dropped %d messages of the cluster block", n.reg.Dropped()-2)
	}
}

// logSink collects a logger's output, written from any goroutine.
type logSink struct {
	mu  sync.Mutex
	out strings.Builder
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.String()
}

// A message of a number in the cluster block that this release has no type for (a newer
// broker's, during a rolling upgrade) crosses the transport to the service, which counts and
// logs it, instead of vanishing in the registry.
func TestUnknownClusterTypeReachesTheService(t *testing.T) {
	const newer uint8 = 21
	if _, ok := rpc.LookupType(newer); ok {
		t.Fatalf("type %d is in the table now: pick a number of the block that is not", newer)
	}
	n := newNode(t, 1, "127.0.0.1:0", storage.NewMemFS())
	defer n.stop()
	var logs logSink
	opts := n.options(nil)
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	tx, err := rpc.New(rpc.Options{NodeID: 2, ClusterID: "cairn-test", ListenAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	tx.SetPeer(1, n.addr)
	if err := tx.Send(1, newer, []byte{msgVersion, 7}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the service to drop the message", func() bool { return s.DroppedMessages() == 1 })
	if line := logs.String(); !strings.Contains(line, "dropping a malformed cluster message") ||
		!strings.Contains(line, "from=2") || !strings.Contains(line, "unknown type 21") {
		t.Fatalf("log: %q", line)
	}
	if n.reg.Dropped() != 0 {
		t.Fatalf("the registry dropped %d messages", n.reg.Dropped())
	}
}

func FuzzDecodeClusterMessage(f *testing.F) {
	for typ, ms := range sampleMessages() {
		for _, m := range ms {
			f.Add(typ, encodeAny(m))
		}
	}
	f.Add(uint8(17), []byte{1, 0, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, typ uint8, b []byte) {
		m, err := decodeMessage(typ, b)
		if err != nil {
			if !errors.Is(err, errBadMessage) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		// What decodes re-encodes to the same bytes: the format has one encoding.
		if again := encodeAny(m); !bytes.Equal(again, b) {
			t.Fatalf("type %d: %x re-encodes as %x", typ, b, again)
		}
	})
}

func TestEntryIsAKafkaBatch(t *testing.T) {
	cmd, _ := controller.EncodeCommand(controller.SetClusterID{ClusterID: "c"})
	b := encodeEntry(cmd, 1234)
	rb, recs, err := kafkatest.Records(b)
	if err != nil {
		t.Fatal(err)
	}
	if rb.NumRecords != 1 || len(recs) != 1 || !bytes.Equal(recs[0].Value, cmd) || rb.MaxTimestamp != 1234 || recs[0].Key != nil {
		t.Fatalf("batch %+v, records %+v", rb, recs)
	}
	got, err := decodeEntry(b)
	if err != nil || !bytes.Equal(got, cmd) {
		t.Fatalf("decode: %q, %v", got, err)
	}
	// Storage rewrites the base offset and epoch, which the CRC does not cover.
	c := bytes.Clone(b)
	recordbatch.SetBaseOffset(c, 256)
	recordbatch.SetLeaderEpoch(c, 7)
	if got, err := decodeEntry(c); err != nil || !bytes.Equal(got, cmd) {
		t.Fatalf("after storage's rewrite: %q, %v", got, err)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x40
		if i < 8 || (i >= 12 && i < 16) {
			continue
		}
		if _, err := decodeEntry(c); err == nil {
			t.Fatalf("flipping byte %d went unnoticed", i)
		}
	}
	for i := range b {
		if _, err := decodeEntry(b[:i]); err == nil {
			t.Fatalf("prefix of %d bytes decoded", i)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	cmd, _ := controller.EncodeCommand(controller.SetClusterID{ClusterID: "c"})
	f.Add(encodeEntry(cmd, 1))
	f.Add(kafkatest.Plain(2, 5).Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeEntry(b)
		if err != nil {
			return
		}
		if _, err := decodeEntry(encodeEntry(v, 0)); err != nil {
			t.Fatal(err)
		}
	})
}
