package raftrpc

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairn-io/cairn/internal/raft"
)

// sampleBatch holds one message of every raftpb message type (remote ones matter; local ones
// are included so that nothing the host might hand the sender is left out), with entries of
// every entry type, a snapshot, and written reports.
func sampleBatch() *raft.Batch {
	ents := []*pb.Entry{
		{Term: proto.Uint64(3), Index: proto.Uint64(10), Type: pb.EntryNormal.Enum(), Data: []byte("kafka batch")},
		{Term: proto.Uint64(3), Index: proto.Uint64(11), Type: pb.EntryNormal.Enum()},
		{Term: proto.Uint64(4), Index: proto.Uint64(12), Type: pb.EntryConfChange.Enum(), Data: []byte{1, 2, 3}},
		{Term: proto.Uint64(4), Index: proto.Uint64(13), Type: pb.EntryConfChangeV2.Enum(), Data: bytes.Repeat([]byte{0xff}, 300)},
	}
	b := &raft.Batch{From: 7}
	for i := range int32(len(pb.MessageType_name)) {
		typ := pb.MessageType(i)
		m := &pb.Message{
			Type: typ.Enum(), To: proto.Uint64(2), From: proto.Uint64(7), Term: proto.Uint64(4),
			LogTerm: proto.Uint64(3), Index: proto.Uint64(uint64(i) * 1000), Commit: proto.Uint64(math.MaxUint64),
		}
		switch typ {
		case pb.MsgApp, pb.MsgProp, pb.MsgStorageAppend, pb.MsgStorageApply:
			m.Entries = ents
		case pb.MsgAppResp:
			m.Reject = proto.Bool(true)
			m.RejectHint = proto.Uint64(9)
		case pb.MsgVote, pb.MsgPreVote:
			m.Context = []byte("CampaignTransfer")
		case pb.MsgVoteResp, pb.MsgPreVoteResp:
			m.Reject = proto.Bool(i%2 == 0)
		case pb.MsgHeartbeat, pb.MsgHeartbeatResp, pb.MsgReadIndex, pb.MsgReadIndexResp:
			m.Context = []byte{0, 1, 2}
		case pb.MsgSnap:
			m.Snapshot = &pb.Snapshot{
				Data: []byte{0, 0, 0, 0, 0, 0, 4, 0},
				Metadata: &pb.SnapshotMetadata{
					Index: proto.Uint64(9), Term: proto.Uint64(3),
					ConfState: &pb.ConfState{Voters: []uint64{1, 2, 7}, Learners: []uint64{9}, VotersOutgoing: []uint64{1, 2, 3}, AutoLeave: proto.Bool(true)},
				},
			}
		}
		b.Messages = append(b.Messages, raft.GroupMessage{Group: uint64(i) << 40, Msg: m})
	}
	b.Written = []raft.WrittenReport{{Group: 1, Term: 4, Index: 13}, {Group: math.MaxUint64, Term: math.MaxUint64, Index: 0}}
	b.Heartbeat = &raft.HostHeartbeat{Quiesced: []raft.QuiescedGroup{{Group: 3, Term: 4, Commit: 13}, {Group: math.MaxUint64, Term: 1, Commit: math.MaxUint64}}}
	return b
}

func sameBatch(t testing.TB, got, want *raft.Batch) {
	t.Helper()
	if len(got.Messages) != len(want.Messages) {
		t.Fatalf("%d messages, want %d", len(got.Messages), len(want.Messages))
	}
	for i := range want.Messages {
		g, w := got.Messages[i], want.Messages[i]
		if g.Group != w.Group || !proto.Equal(g.Msg, w.Msg) {
			t.Fatalf("message %d: got group %d %v, want group %d %v", i, g.Group, g.Msg, w.Group, w.Msg)
		}
	}
	if len(got.Written) != len(want.Written) {
		t.Fatalf("%d written reports, want %d", len(got.Written), len(want.Written))
	}
	for i := range want.Written {
		if got.Written[i] != want.Written[i] {
			t.Fatalf("written %d: got %+v, want %+v", i, got.Written[i], want.Written[i])
		}
	}
	if (got.Heartbeat == nil) != (want.Heartbeat == nil) {
		t.Fatalf("heartbeat %+v, want %+v", got.Heartbeat, want.Heartbeat)
	}
	if want.Heartbeat != nil && !slices.Equal(got.Heartbeat.Quiesced, want.Heartbeat.Quiesced) {
		t.Fatalf("heartbeat %+v, want %+v", got.Heartbeat.Quiesced, want.Heartbeat.Quiesced)
	}
}

// TestBatchFieldsEncoded fails when raft.Batch (or what it carries) gains a field: the
// encoding must then carry it too, or it is silently lost between hosts.
func TestBatchFieldsEncoded(t *testing.T) {
	for typ, want := range map[reflect.Type][]string{
		reflect.TypeFor[raft.Batch]():         {"From", "Messages", "Written", "Visible", "Heartbeat"},
		reflect.TypeFor[raft.GroupMessage]():  {"Group", "Msg"},
		reflect.TypeFor[raft.WrittenReport](): {"Group", "Term", "Index"},
		reflect.TypeFor[raft.VisibleReport](): {"Group", "Term", "Index"},
		reflect.TypeFor[raft.HostHeartbeat](): {"Quiesced"},
		reflect.TypeFor[raft.QuiescedGroup](): {"Group", "Term", "Commit"},
	} {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v has fields %v; raftrpc encodes %v: extend the encoding (and its version)", typ, got, want)
		}
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, b := range []*raft.Batch{
		{},
		{Written: []raft.WrittenReport{{Group: 5, Term: 2, Index: 100}}},
		{Messages: []raft.GroupMessage{{Group: 1, Msg: &pb.Message{}}}},
		{Heartbeat: &raft.HostHeartbeat{}},
		sampleBatch(),
	} {
		p, err := EncodeBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeBatch(p)
		if err != nil {
			t.Fatal(err)
		}
		if got.From != 0 {
			t.Fatalf("From %d decoded; the sender's id comes from the rpc frame", got.From)
		}
		sameBatch(t, got, b)
		// The decoded messages must not alias the payload (the host keeps them).
		clear(p)
		sameBatch(t, got, b)
	}
	for i := range int32(len(pb.MessageType_name)) {
		if _, ok := pb.MessageType_name[i]; !ok {
			t.Fatalf("message types are not dense: %d missing", i)
		}
	}
}

func TestEncodeNilMessage(t *testing.T) {
	if _, err := EncodeBatch(&raft.Batch{Messages: []raft.GroupMessage{{Group: 1}}}); err == nil {
		t.Fatal("nil message encoded")
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := EncodeBatch(sampleBatch())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"empty":         nil,
		"version":       append([]byte{wireVersion + 1}, good[1:]...),
		"trailing":      append(append([]byte(nil), good...), 0),
		"huge count":    {wireVersion, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge len":      {wireVersion, 1, 1, 0xff, 0xff, 0x03, 0},
		"bad protobuf":  {wireVersion, 1, 1, 2, 0xff, 0xff, 0},
		"no written":    {wireVersion, 0},
		"no heartbeat":  {wireVersion, 0, 0},
		"short written": {wireVersion, 0, 1, 1, 1, 0},
		"short hb":      {wireVersion, 0, 0, 2, 1, 1},
	}
	for i := 1; i < len(good); i += 1 + len(good)/50 {
		cases[fmt.Sprintf("truncated at %d", i)] = good[:i]
	}
	for name, p := range cases {
		if b, err := DecodeBatch(p); err == nil {
			t.Errorf("%s: decoded %+v", name, b)
		}
	}
}

func TestNodeIDMapping(t *testing.T) {
	for _, id := range []uint64{1, 2, math.MaxInt32} {
		r, ok := RPCID(id)
		if !ok {
			t.Fatalf("RPCID(%d) refused", id)
		}
		back, ok := RaftID(r)
		if !ok || back != id {
			t.Fatalf("RaftID(RPCID(%d)) = %d, %v", id, back, ok)
		}
	}
	for _, id := range []uint64{0, math.MaxInt32 + 1, math.MaxUint64} {
		if _, ok := RPCID(id); ok {
			t.Fatalf("RPCID(%d) accepted", id)
		}
	}
	for _, id := range []int32{0, -1, math.MinInt32} {
		if _, ok := RaftID(id); ok {
			t.Fatalf("RaftID(%d) accepted", id)
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	for _, b := range []*raft.Batch{{}, sampleBatch(), {Written: []raft.WrittenReport{{Group: 1, Term: 2, Index: 3}}}} {
		p, err := EncodeBatch(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	f.Add([]byte{wireVersion, 1, 1, 2, 0xff, 0xff, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		b, err := DecodeBatch(p)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode to something that decodes to the same batch.
		p2, err := EncodeBatch(b)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		b2, err := DecodeBatch(p2)
		if err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		sameBatch(t, b2, b)
	})
}
