package controller

import (
	"errors"
	"strings"
	"testing"
)

func TestRegisterBrokerListenersEncoding(t *testing.T) {
	plain, err := EncodeCommand(RegisterBroker{ID: 1, KafkaAddr: "h:9092", RPCAddr: "h:9093", Incarnation: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A broker with only kafka.addr registers exactly as builds before listeners did.
	if want := `{"v":1,"op":"register_broker","body":{"id":1,"kafka_addr":"h:9092","rpc_addr":"h:9093","incarnation":1}}`; string(plain) != want {
		t.Fatalf("got %s\nwant %s", plain, want)
	}
	named, err := EncodeCommand(RegisterBroker{ID: 1, KafkaAddr: "h:9092", RPCAddr: "h:9093", Incarnation: 1,
		Listeners: map[string]string{"PLAINTEXT": "h:9092", "SSL": "h:9094"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(named), `{"v":6,`) {
		t.Fatalf("a registration with listeners is encoded as %s, not at version 6", named)
	}
	c, err := DecodeCommand(named)
	if err != nil {
		t.Fatal(err)
	}
	if rb := c.(*RegisterBroker); rb.Listeners["SSL"] != "h:9094" {
		t.Fatalf("decoded %+v", rb)
	}
	// Listeners in a version 1 envelope would be skipped by a build that predates them.
	forged := strings.Replace(string(named), `"v":6`, `"v":1`, 1)
	if _, err := DecodeCommand([]byte(forged)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("listeners in a version 1 envelope: %v", err)
	}
}

func TestBrokerListenerAddr(t *testing.T) {
	h := newHarness(t)
	s := h.s
	h.ok(RegisterBroker{ID: 1, KafkaAddr: "a:9092", RPCAddr: "a:9093", Incarnation: 1})
	h.ok(RegisterBroker{ID: 2, KafkaAddr: "b:9092", RPCAddr: "b:9093", Incarnation: 1,
		Listeners: map[string]string{"PLAINTEXT": "b:9092", "SSL": "b:9094"}})
	b1, _ := s.Broker(1)
	b2, _ := s.Broker(2)
	for _, c := range []struct {
		b        Broker
		listener string
		want     string
		ok       bool
	}{
		{b1, "PLAINTEXT", "a:9092", true}, {b1, "SSL", "", false},
		{b2, "PLAINTEXT", "b:9092", true}, {b2, "SSL", "b:9094", true}, {b2, "INTERNAL", "", false},
	} {
		if got, ok := c.b.ListenerAddr(c.listener); ok != c.ok || (ok && got != c.want) {
			t.Errorf("broker %d on %s: %q %v, want %q %v", c.b.ID, c.listener, got, ok, c.want, c.ok)
		}
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := restored.Broker(2); b.Listeners["SSL"] != "b:9094" {
		t.Fatalf("listeners lost in the snapshot: %+v", b)
	}
	old := strings.Replace(string(snap), `"v":7`, `"v":6`, 1)
	if _, err := DecodeSnapshot([]byte(old)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("listeners in a version 6 snapshot: %v", err)
	}
	res := h.apply(RegisterBroker{ID: 3, KafkaAddr: "c:9092", RPCAddr: "c:9093", Incarnation: 1, Listeners: map[string]string{"SSL": ""}})
	if res.Err == nil {
		t.Fatal("a listener without an address was registered")
	}
}
