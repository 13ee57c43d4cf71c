package rpc

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestRegisterRefusesATypeTwice(t *testing.T) {
	r := NewRegistry(nil)
	first := &recorder{}
	if err := r.Register(first.handle, MsgLeaders, MsgForwardRequest); err != nil {
		t.Fatal(err)
	}
	second := &recorder{}
	for _, types := range [][]uint8{
		{MsgLeaders},                 // taken by the first
		{MsgRaft, MsgForwardRequest}, // one of them taken: neither is registered
		{MsgJoinRequest, MsgJoinRequest},
	} {
		if err := r.Register(second.handle, types...); !errors.Is(err, ErrTypeTaken) {
			t.Fatalf("Register %v: %v, want ErrTypeTaken", types, err)
		}
	}
	if r.Registered(MsgRaft) || r.Registered(MsgJoinRequest) {
		t.Fatal("a refused registration registered some of its types")
	}
	r.Dispatch(4, MsgLeaders, []byte("x"))
	if first.count(4) != 1 || second.count(4) != 0 {
		t.Fatalf("after refused registrations the first handler got %d, the second %d", first.count(4), second.count(4))
	}
}

func TestRegisterRefusesTypesOutsideTheTable(t *testing.T) {
	r := NewRegistry(nil)
	rec := &recorder{}
	if err := r.Register(rec.handle, 200); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("type 200: %v, want ErrUnknownType", err)
	}
	if err := r.Register(nil, MsgRaft); err == nil || r.Registered(MsgRaft) {
		t.Fatalf("nil handler: %v", err)
	}
	if err := r.Register(rec.handle); err == nil {
		t.Fatal("no types: accepted")
	}
}

// A block's owner receives every number of it, those the table has no type for too, and no
// one else can take one of them.
func TestRegisterBlockRoutesTheWholeBlock(t *testing.T) {
	r := NewRegistry(nil)
	owner, other := &recorder{}, &recorder{}
	if err := r.RegisterBlock(owner.handle, ClusterBlockFirst, ClusterBlockLast); err != nil {
		t.Fatal(err)
	}
	for typ := int(ClusterBlockFirst); typ <= int(ClusterBlockLast); typ++ {
		if !r.Registered(uint8(typ)) {
			t.Fatalf("type %d of the block has no handler", typ)
		}
	}
	if r.Registered(ClusterBlockFirst-1) || r.Registered(ClusterBlockLast+1) {
		t.Fatal("a number outside the block was registered with it")
	}
	r.Dispatch(2, 21, []byte("newer")) // no type in this release's table
	r.Dispatch(2, MsgJoinRequest, []byte("join"))
	if got := owner.from(2); len(got) != 2 || got[0].Type != 21 || string(got[0].Payload) != "newer" || got[1].Type != MsgJoinRequest {
		t.Fatalf("the block's owner got %+v", got)
	}
	if r.Dropped() != 0 {
		t.Fatalf("dropped %d messages of a registered block", r.Dropped())
	}
	if err := r.Register(other.handle, MsgJoinRequest); !errors.Is(err, ErrTypeTaken) {
		t.Fatalf("Register of a type in a registered block: %v, want ErrTypeTaken", err)
	}
	if err := r.RegisterBlock(other.handle, ClusterBlockFirst, ClusterBlockLast); !errors.Is(err, ErrTypeTaken) {
		t.Fatalf("the block registered twice: %v, want ErrTypeTaken", err)
	}
	if err := r.Register(other.handle, 21); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("Register of a block number with no type: %v, want ErrUnknownType", err)
	}
}

func TestRegisterBlockRefusesWhatIsNotABlock(t *testing.T) {
	r := NewRegistry(nil)
	rec := &recorder{}
	for _, b := range [][2]uint8{
		{ClusterBlockFirst, ClusterBlockLast - 1}, // part of a block
		{ClusterBlockFirst + 1, ClusterBlockLast},
		{MsgLeaders, MsgForwardResponse}, // types, no block
		{200, 255},
	} {
		if err := r.RegisterBlock(rec.handle, b[0], b[1]); !errors.Is(err, ErrUnknownBlock) {
			t.Fatalf("RegisterBlock %d-%d: %v, want ErrUnknownBlock", b[0], b[1], err)
		}
	}
	if err := r.RegisterBlock(nil, ClusterBlockFirst, ClusterBlockLast); err == nil {
		t.Fatal("nil handler: accepted")
	}
	// All or nothing: one number of the block taken, none of the others is registered.
	if err := r.Register(rec.handle, MsgBrokerHeartbeat); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterBlock(rec.handle, ClusterBlockFirst, ClusterBlockLast); !errors.Is(err, ErrTypeTaken) {
		t.Fatalf("a block with a number taken: %v, want ErrTypeTaken", err)
	}
	for typ := int(ClusterBlockFirst); typ <= int(ClusterBlockLast); typ++ {
		if uint8(typ) != MsgBrokerHeartbeat && r.Registered(uint8(typ)) {
			t.Fatalf("a refused block registered type %d", typ)
		}
	}
}

// An operator hears of the first dropped message of each type, with its type and sender: a
// warning for a number this release does not know (a newer broker's), information for a type
// of the table whose owner has not registered yet.
func TestDispatchLogsTheFirstDropOfEachType(t *testing.T) {
	var logs bytes.Buffer // Dispatch logs on the caller's goroutine: no lock needed
	r := NewRegistry(slog.New(slog.NewTextHandler(&logs, nil)))
	r.Dispatch(2, 250, nil)
	r.Dispatch(3, 250, nil)
	r.Dispatch(3, MsgLeaders, nil)
	r.Dispatch(2, MsgLeaders, nil)
	if r.Dropped() != 4 {
		t.Fatalf("dropped %d, want 4", r.Dropped())
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per type, got %q", lines)
	}
	for i, want := range [][]string{
		{"level=WARN", "from=2", "type=250", "not in the table"},
		{"level=INFO", "from=3", "type=32", "leaders, owned by internal/broker"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("log line %q lacks %q", lines[i], w)
			}
		}
	}
}

func TestDispatchReachesTheTypesHandler(t *testing.T) {
	r := NewRegistry(nil)
	raft, cluster := &recorder{}, &recorder{}
	if err := r.Register(raft.handle, MsgRaft); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(cluster.handle, MsgJoinRequest, MsgBrokerHeartbeat); err != nil {
		t.Fatal(err)
	}
	r.Dispatch(2, MsgBrokerHeartbeat, []byte("hb"))
	r.Dispatch(2, MsgRaft, []byte("batch"))
	r.Dispatch(3, MsgJoinRequest, []byte("join"))
	if got := raft.from(2); len(got) != 1 || got[0].Type != MsgRaft || string(got[0].Payload) != "batch" {
		t.Fatalf("raft handler got %+v", got)
	}
	if got := cluster.from(2); len(got) != 1 || got[0].Type != MsgBrokerHeartbeat || string(got[0].Payload) != "hb" {
		t.Fatalf("cluster handler got %+v from 2", got)
	}
	if got := cluster.from(3); len(got) != 1 || got[0].Type != MsgJoinRequest {
		t.Fatalf("cluster handler got %+v from 3", got)
	}
	if r.Dropped() != 0 {
		t.Fatalf("dropped %d registered messages", r.Dropped())
	}
}

func TestDispatchDropsAndCountsUnregisteredTypes(t *testing.T) {
	r := NewRegistry(nil)
	rec := &recorder{}
	if err := r.Register(rec.handle, MsgRaft); err != nil {
		t.Fatal(err)
	}
	r.Dispatch(2, MsgLeaders, nil) // in the table, not registered
	r.Dispatch(2, 250, nil)        // not in the table
	if r.Dropped() != 2 || rec.count(2) != 0 {
		t.Fatalf("dropped %d, handler got %d", r.Dropped(), rec.count(2))
	}
}

// A message nobody registered is dropped without closing the connection: what the sender
// sends after it still arrives, on the same connection, and a type registered after the
// transport started receives from then on.
func TestUnregisteredTypeKeepsTheConnection(t *testing.T) {
	reg := NewRegistry(nil)
	rec := &recorder{}
	if err := reg.Register(rec.handle, MsgRaft); err != nil {
		t.Fatal(err)
	}
	o := testOptions(2, nil)
	o.Handler = reg.Dispatch
	rx := startNode(t, o)
	tx := startNode(t, testOptions(1, nil))
	tx.SetPeer(2, rx.Addr().String())

	if err := tx.Send(2, MsgLeaders, []byte("nobody")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Send(2, MsgRaft, []byte("raft")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the raft message", func() bool { return rec.count(1) == 1 })
	if reg.Dropped() != 1 {
		t.Fatalf("dropped %d, want the one unregistered message", reg.Dropped())
	}

	if err := reg.Register(rec.handle, MsgLeaders); err != nil {
		t.Fatal(err)
	}
	if err := tx.Send(2, MsgLeaders, []byte("now")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the leaders message", func() bool { return rec.count(1) == 2 })
	if got := rec.from(1); got[1].Type != MsgLeaders || string(got[1].Payload) != "now" {
		t.Fatalf("got %+v", got)
	}
	if st := peerStats(tx, 2); st.Connects != 1 || st.Reconnects != 0 || st.Dropped != 0 {
		t.Fatalf("sender stats %+v: the connection did not last", st)
	}
	if st := rx.Stats(); st.InboundFrameErrors != 0 {
		t.Fatalf("receiver stats %+v", st)
	}
}

func TestMessageTypeTable(t *testing.T) {
	types := MessageTypes()
	if len(types) == 0 {
		t.Fatal("empty table")
	}
	names := map[string]uint8{}
	for i, mt := range types {
		if i > 0 && types[i-1].Type >= mt.Type {
			t.Fatalf("not in number order at %d", mt.Type)
		}
		if mt.Owner == "" || mt.Direction == "" {
			t.Fatalf("type %d (%s) has no owner or direction", mt.Type, mt.Name)
		}
		if prev, ok := names[mt.Name]; ok {
			t.Fatalf("types %d and %d share the name %q", prev, mt.Type, mt.Name)
		}
		names[mt.Name] = mt.Type
		if inBlock := mt.Type >= ClusterBlockFirst && mt.Type <= ClusterBlockLast; inBlock != (mt.Owner == "internal/cluster") {
			t.Fatalf("type %d (%s of %s) and the cluster block %d-%d disagree", mt.Type, mt.Name, mt.Owner, ClusterBlockFirst, ClusterBlockLast)
		}
		for _, b := range messageBlocks {
			if inBlock := mt.Type >= b.First && mt.Type <= b.Last; inBlock != (mt.Owner == b.Owner) {
				t.Fatalf("type %d (%s of %s) and the block %d-%d of %s disagree", mt.Type, mt.Name, mt.Owner, b.First, b.Last, b.Owner)
			}
		}
		if got, ok := LookupType(mt.Type); !ok || got != mt {
			t.Fatalf("LookupType(%d) = %+v, %v", mt.Type, got, ok)
		}
	}
	if _, ok := LookupType(0); ok {
		t.Fatal("type 0 is in the table")
	}
	for i, b := range messageBlocks {
		if b.First > b.Last || b.Owner == "" {
			t.Fatalf("block %+v", b)
		}
		for _, prev := range messageBlocks[:i] {
			if b.First <= prev.Last && prev.First <= b.Last {
				t.Fatalf("blocks %+v and %+v overlap", prev, b)
			}
		}
		for _, edge := range []uint8{b.First, b.Last} {
			if got, ok := LookupBlock(edge); !ok || got != b {
				t.Fatalf("LookupBlock(%d) = %+v, %v", edge, got, ok)
			}
		}
	}
	if b, ok := LookupBlock(MsgJoinRequest); !ok || b.Owner != "internal/cluster" {
		t.Fatalf("LookupBlock(MsgJoinRequest) = %+v, %v", b, ok)
	}
	if _, ok := LookupBlock(MsgRaft); ok {
		t.Fatal("raft's type is in a block")
	}
}
