package admin

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/broker"
)

func TestHealthOverviewEndpoint(t *testing.T) {
	_, srv := newTestAdmin(t, 2, "")

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
