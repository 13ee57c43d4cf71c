package broker

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/storage"
)

// Each listener's clients see the brokers that have it, at their addresses on it; a broker
// registered without listeners (kafka.addr alone, or an older build) is PLAINTEXT only.
func TestBrokersOnListener(t *testing.T) {
	b, err := New(Config{DataDir: "/data", KafkaAddr: ":9092", FS: storage.NewMemFS(),
		Listeners: []ListenerAddr{{"PLAINTEXT", "h1:9092"}, {"SSL", "h1:9094"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := b.svc.Load().Propose(ctx, controller.RegisterBroker{ID: 2, KafkaAddr: "h2:9092", RPCAddr: "h2:9093", Incarnation: 1})
	if err != nil || res.Err != nil {
		t.Fatalf("registering broker 2: %v %v", err, res.Err)
	}
	addrs := func(listener string) map[int32]string {
		out := map[int32]string{}
		for _, bi := range b.BrokersOn(listener) {
			out[bi.NodeID] = net.JoinHostPort(bi.Host, strconv.Itoa(int(bi.Port)))
		}
		return out
	}
	for listener, want := range map[string]map[int32]string{
		"PLAINTEXT": {1: "h1:9092", 2: "h2:9092"},
		"SSL":       {1: "h1:9094"},
		"INTERNAL":  {},
	} {
		got := addrs(listener)
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", listener, got, want)
		}
		for id, a := range want {
			if got[id] != a {
				t.Errorf("%s: %v, want %v", listener, got, want)
			}
		}
	}
	if bi, _ := b.broker(1); bi.Host != "h1" || bi.Port != 9092 {
		t.Errorf("broker 1's first address: %+v", bi)
	}
}
