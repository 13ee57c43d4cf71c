package controller

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestBrokerMaintenance(t *testing.T) {
	h := newHarness(t)
	h.brokers(3)
	if _, on := h.s.InMaintenance(); on {
		t.Fatal("a new cluster has a broker in maintenance")
	}
	h.ok(SetBrokerMaintenance{ID: 2, On: true})
	id, on := h.s.InMaintenance()
	eq(t, id, int32(2))
	eq(t, on, true)
	b, _ := h.s.Broker(2)
	eq(t, b.Maintenance, true)

	// Setting it again on the same broker is a no-op, not a conflict.
	h.ok(SetBrokerMaintenance{ID: 2, On: true})

	// A second broker is refused, and nothing changes.
	before, _ := h.s.Snapshot()
	res := h.apply(SetBrokerMaintenance{ID: 3, On: true})
	eq(t, res.Err, kerr.InvalidRequest)
	if !strings.Contains(res.Msg, "broker 2 is already in maintenance") {
		t.Fatalf("message %q does not name the broker in maintenance", res.Msg)
	}
	after, _ := h.s.Snapshot()
	eq(t, stripApplied(t, after), stripApplied(t, before))

	// A restart (a newer incarnation) stays in maintenance.
	h.ok(RegisterBroker{ID: 2, KafkaAddr: addr("k", 2), RPCAddr: addr("r", 2), Incarnation: 2})
	b, _ = h.s.Broker(2)
	eq(t, b.Maintenance, true)

	// The snapshot keeps it.
	snap, _ := h.s.Snapshot()
	restored, err := DecodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	id, on = restored.InMaintenance()
	eq(t, id, int32(2))
	eq(t, on, true)

	// Off, then another broker may go in.
	h.ok(SetBrokerMaintenance{ID: 2, On: false})
	h.ok(SetBrokerMaintenance{ID: 3, On: true})
	id, _ = h.s.InMaintenance()
	eq(t, id, int32(3))
	// Turning off a broker not in maintenance is a no-op.
	h.ok(SetBrokerMaintenance{ID: 1, On: false})
}

func TestBrokerMaintenanceRejects(t *testing.T) {
	h := newHarness(t)
	h.brokers(2)
	for _, c := range []SetBrokerMaintenance{{ID: 9, On: true}, {ID: 9, On: false}, {ID: -1, On: true}} {
		res := h.apply(c)
		eq(t, res.Err, kerr.BrokerIDNotRegistered)
		if !strings.Contains(res.Msg, "not registered") {
			t.Fatalf("%+v: message %q", c, res.Msg)
		}
	}
	if _, on := h.s.InMaintenance(); on {
		t.Fatal("a refused command put a broker in maintenance")
	}
}

func TestSnapshotRefusesTwoBrokersInMaintenance(t *testing.T) {
	h := newHarness(t)
	h.brokers(2)
	h.ok(SetBrokerMaintenance{ID: 1, On: true})
	snap, _ := h.s.Snapshot()
	bad := strings.Replace(string(snap), `"incarnation":1,"live":true}`, `"incarnation":1,"live":true,"maintenance":true}`, 1)
	if bad == string(snap) {
		t.Fatalf("test did not find broker 2 in %s", snap)
	}
	if _, err := DecodeSnapshot([]byte(bad)); err == nil || !strings.Contains(err.Error(), "maintenance") {
		t.Fatalf("decoding %s: %v", bad, err)
	}
}
