package rpc

import (
	"errors"
	"testing"
	"time"
)

func TestRegisterRefusesATypeTwice(t *testing.T) {
	r := NewRegistry()
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
	r := NewRegistry()
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

func TestDispatchReachesTheTypesHandler(t *testing.T) {
	r := NewRegistry()
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
	r := NewRegistry()
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
	reg := NewRegistry()
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
		if got, ok := LookupType(mt.Type); !ok || got != mt {
			t.Fatalf("LookupType(%d) = %+v, %v", mt.Type, got, ok)
		}
	}
	if _, ok := LookupType(0); ok {
		t.Fatal("type 0 is in the table")
	}
}
