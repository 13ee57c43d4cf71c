package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/storage"
)

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAdminEndpoints(t *testing.T) {
	b, err := broker.New(broker.Config{DataDir: "/d", KafkaAddr: "127.0.0.1:9092", FS: storage.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("orders", 2, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	p, _ := b.Partition("orders", 1)
	_, wait := p.Produce(kafkatest.Plain(4, 1000).Bytes(), -1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r := wait(ctx); r.Err != nil {
		t.Fatal(r.Err)
	}

	m := NewMetrics(b)
	s := NewServer(b, m)
	srv := httptest.NewServer(s)
	defer srv.Close()

	if code, _ := get(t, srv, "/v1/status/ready"); code != http.StatusServiceUnavailable {
		t.Fatalf("ready before SetReady: %d", code)
	}
	s.SetReady(true)
	if code, _ := get(t, srv, "/v1/status/ready"); code != http.StatusOK {
		t.Fatalf("ready: %d", code)
	}

	code, body := get(t, srv, "/v1/partitions/orders/1")
	var st PartitionStatus
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("partition status %d %s", code, body)
	}
	if st.LogEnd != 4 || st.Flushed != 4 || st.Committed != 4 || st.LastVisible != 4 || st.LogStart != 0 {
		t.Fatalf("boundaries after an acks=-1 write: %+v", st)
	}
	// No rack declared: the replica is listed with none, the ISR spans none, and both
	// minimums are the defaults (min.insync.replicas capped by the one replica).
	if len(st.ReplicaRacks) != 1 || st.ReplicaRacks[0] != (ReplicaRack{ID: 1}) || st.ISRRacks == nil || len(st.ISRRacks) != 0 ||
		st.MinInsyncReplicas != 1 || st.MinInsyncRacks != 1 {
		t.Fatalf("racks and minimums of a rackless replica: %s", body)
	}
	code, body = get(t, srv, "/v1/cluster")
	var cs broker.ClusterStatus
	if code != 200 || json.Unmarshal([]byte(body), &cs) != nil {
		t.Fatalf("cluster status %d %s", code, body)
	}
	// A single broker leads its own controller group, has applied what it committed (the
	// topic creation at least), and lists itself live.
	if cs.NodeID != 1 || cs.Controller.Leader != 1 || cs.Controller.Role != "leader" ||
		cs.Controller.Applied == 0 || cs.Controller.Applied != cs.Controller.Committed ||
		len(cs.Brokers) != 1 || !cs.Brokers[0].Live || cs.Brokers[0].ID != 1 {
		t.Fatalf("cluster status: %s", body)
	}
	for _, bad := range []string{"/v1/partitions/orders/9", "/v1/partitions/nope/0", "/v1/partitions/orders/x"} {
		if code, _ := get(t, srv, bad); code != 404 && code != 400 {
			t.Errorf("%s: %d", bad, code)
		}
	}

	m.ObserveRequest(0, time.Millisecond, 100, 50)
	m.ObserveRequest(1, time.Millisecond, 10, 700)
	m.ObserveRequest(1, time.Millisecond, 10, 300)
	m.ObserveRequest(-7, time.Millisecond, 10, 5)
	_, metrics := get(t, srv, "/metrics")
	for _, want := range []string{
		`cairn_partition_log_end_offset{partition="1",topic="orders"} 4`,
		`cairn_partition_flushed_offset{partition="1",topic="orders"} 4`,
		// A single replica leads, is the whole ISR, and sits at min.insync.replicas=1.
		`cairn_partition_leader{partition="1",topic="orders"} 1`,
		`cairn_partition_isr{partition="1",topic="orders"} 1`,
		`cairn_partition_at_min_isr{partition="1",topic="orders"} 1`,
		`cairn_partition_under_min_isr{partition="1",topic="orders"} 0`,
		`cairn_under_replicated_partitions 0`,
		`cairn_kafka_requests_total{api="Produce"} 1`,
		`cairn_kafka_bytes_in_total 130`,
		`cairn_kafka_bytes_out_total 1055`,
		`cairn_kafka_response_bytes_total{api="Produce"} 50`,
		`cairn_kafka_response_bytes_total{api="Fetch"} 1000`,
		`cairn_kafka_response_bytes_total{api="Unknown"} 5`,
		`cairn_kafka_request_duration_seconds_count{api="Produce"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// An inter-broker message of a type this release does not know, as a newer broker sends
// during a rolling upgrade, shows on /metrics: it is dropped, and an operator can see so.
func TestMetricsCountUnhandledRPCMessages(t *testing.T) {
	b, err := broker.New(broker.Config{DataDir: "/d", KafkaAddr: "127.0.0.1:9092", FS: storage.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv := httptest.NewServer(NewServer(b, NewMetrics(b)))
	defer srv.Close()
	if _, metrics := get(t, srv, "/metrics"); !strings.Contains(metrics, "cairn_rpc_messages_unhandled_total 0") {
		t.Fatal("/metrics lacks cairn_rpc_messages_unhandled_total 0")
	}

	const unknown uint8 = 250
	if _, ok := rpc.LookupType(unknown); ok {
		t.Fatalf("type %d is in the table now: pick one that is not", unknown)
	}
	newer, err := rpc.New(rpc.Options{NodeID: 2, ClusterID: "cairn", ListenAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Close()
	newer.SetPeer(b.NodeID(), b.RPCAddr())
	if err := newer.Send(b.NodeID(), unknown, []byte("from a newer release")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, metrics := get(t, srv, "/metrics")
		if strings.Contains(metrics, "cairn_rpc_messages_unhandled_total 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/metrics never counted the unhandled message")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForMetrics polls /metrics until it holds every one of want, or fails after 10s.
func waitForMetrics(t *testing.T, srv *httptest.Server, want ...string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, metrics := get(t, srv, "/metrics")
		missing := ""
		for _, w := range want {
			if !strings.Contains(metrics, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %s", missing)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The rack metrics read 0 while min.insync.racks is 1 (else every rackless cluster would
// alarm), and show a leader whose ISR spans fewer racks than the topic asks for.
func TestMetricsShowPartitionsUnderMinRacks(t *testing.T) {
	b, srv := newTestAdmin(t, 1, "r1")
	waitForMetrics(t, srv,
		`cairn_partition_leader{partition="0",topic="orders"} 1`,
		`cairn_partition_under_min_rack_isr{partition="0",topic="orders"} 0`,
		`cairn_partition_at_min_rack_isr{partition="0",topic="orders"} 0`,
		"cairn_under_min_rack_isr_partition_count 0",
		"cairn_at_min_rack_isr_partition_count 0")

	// Stored past the creation check, as a broker that changed rack leaves it: one rack
	// cannot hold a batch that must span two. min.insync.replicas=3 on one replica is
	// in force as 1.
	if err := b.SetTopicConfig("orders", map[string]string{"min.insync.racks": "2", "min.insync.replicas": "3"}); err != nil {
		t.Fatal(err)
	}
	waitForMetrics(t, srv,
		`cairn_partition_under_min_rack_isr{partition="0",topic="orders"} 1`,
		`cairn_partition_at_min_rack_isr{partition="0",topic="orders"} 0`,
		"cairn_under_min_rack_isr_partition_count 1",
		"cairn_at_min_rack_isr_partition_count 0")

	code, body := get(t, srv, "/v1/partitions/orders/0")
	var st PartitionStatus
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("partition status %d %s", code, body)
	}
	if len(st.ReplicaRacks) != 1 || st.ReplicaRacks[0] != (ReplicaRack{ID: 1, Rack: "r1"}) ||
		!slices.Equal(st.ISRRacks, []string{"r1"}) || st.MinInsyncReplicas != 1 || st.MinInsyncRacks != 2 {
		t.Fatalf("partition status of a rack-r1 replica under min.insync.racks=2: %s", body)
	}
}

// newTestAdmin starts a one-broker cluster on an in-memory disk, in rack (may be ""), with
// a topic "orders" of the given partitions, and an admin server over it; both stop when
// the test ends.
func newTestAdmin(t *testing.T, partitions int32, rack string) (*broker.Broker, *httptest.Server) {
	t.Helper()
	b, err := broker.New(broker.Config{DataDir: "/d", KafkaAddr: "127.0.0.1:9092", Rack: rack, FS: storage.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if _, err := b.CreateTopic("orders", partitions, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(b, NewMetrics(b)))
	t.Cleanup(srv.Close)
	return b, srv
}
