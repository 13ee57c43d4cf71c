package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/storage"
)

func TestHealthOverviewEndpoint(t *testing.T) {
	b, err := broker.New(broker.Config{DataDir: "/d", KafkaAddr: "127.0.0.1:9092", FS: storage.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic("orders", 2, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(b, NewMetrics(b)))
	defer srv.Close()

	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get(t, srv, "/v1/cluster/health_overview")
		if code != http.StatusOK {
			t.Fatalf("GET /v1/cluster/health_overview: HTTP %d: %s", code, body)
		}
		var h broker.HealthOverview
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			t.Fatalf("decoding %s: %v", body, err)
		}
		if h.Healthy && h.ControllerID == 1 && slices.Equal(h.AllNodes, []int32{1}) && h.NodesDown != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not healthy within 10s: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := get(t, srv, "/v1/cluster/health_overview?x=1"); code != http.StatusOK {
		t.Errorf("a query string changes nothing, got HTTP %d", code)
	}
	resp, err := http.Post(srv.URL+"/v1/cluster/health_overview", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: HTTP %d, want 405", resp.StatusCode)
	}
}
