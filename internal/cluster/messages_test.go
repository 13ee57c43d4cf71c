package cluster

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/recordbatch"
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

// TestGarbageRefused feeds every message type random and mutated payloads through Handle
// of a service that is not running: each is claimed, refused without a panic, and counted.
func TestGarbageRefused(t *testing.T) {
	n := newNode(t, 1, "127.0.0.1:0", storage.NewMemFS())
	defer n.stop()
	s, err := New(n.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Handle(1, 1, []byte("raft")) || s.Handle(1, 15, nil) || s.Handle(1, 32, nil) {
		t.Fatal("claimed a message of another type")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	refused := uint64(0)
	for typ := uint8(16); typ <= 31; typ++ {
		for range 200 {
			b := make([]byte, rng.IntN(64))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			if !s.Handle(2, typ, b) {
				t.Fatalf("type %d not claimed", typ)
			}
			if _, err := decodeMessage(typ, b); err != nil {
				refused++
			}
		}
	}
	for typ, ms := range sampleMessages() {
		for _, m := range ms {
			b := encodeAny(m)
			for i := range b {
				c := bytes.Clone(b)
				c[i] ^= 0xff
				s.Handle(2, typ, c)
				if _, err := decodeMessage(typ, c); err != nil {
					refused++
				}
			}
		}
	}
	// A well-formed message from an impossible sender is refused too.
	s.Handle(0, MsgHeartbeat, heartbeat{Incarnation: 1, RPCAddr: "x:1"}.encode())
	refused++
	if got := s.DroppedMessages(); got != refused || refused == 0 {
		t.Fatalf("dropped %d, want %d", got, refused)
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
