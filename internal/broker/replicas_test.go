package broker

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/storage"
)

// A replica counts each broker's declared rack for min.insync.racks: the racks it was
// opened with, and the new ones once a broker registers (or re-registers) with a rack.
func TestReplicasFollowDeclaredRacks(t *testing.T) {
	b, err := New(Config{DataDir: "/data", KafkaAddr: "127.0.0.1:9092", FS: storage.NewMemFS(), Rack: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("orders", 1, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	p, kerr := b.Partition("orders", 0)
	if kerr != nil {
		t.Fatal(kerr)
	}
	self := uint64(b.cfg.NodeID)
	if got, want := p.Racks(), (partition.Racks{self: "r1"}); !maps.Equal(got, want) {
		t.Fatalf("opened with racks %v, want %v", got, want)
	}

	// Broker 2 registers in r2 (its registration is what a broker's start proposes).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := b.svc.Load().Propose(ctx, controller.RegisterBroker{ID: 2, KafkaAddr: "127.0.0.1:19092", RPCAddr: "127.0.0.1:19093", Rack: "r2", Incarnation: 1})
	if err != nil || res.Err != nil {
		t.Fatalf("registering broker 2: %v %v", err, res.Err)
	}
	// The registration is applied once Propose returns; reconcile once more (as the loop
	// does on that change) so that the check does not race the loop.
	if err := b.reconcile(); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Racks(), (partition.Racks{self: "r1", 2: "r2"}); !maps.Equal(got, want) {
		t.Fatalf("after broker 2 registered in r2 the replica has racks %v, want %v", got, want)
	}
}
