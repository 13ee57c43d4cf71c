package admin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func post(t *testing.T, srv *httptest.Server, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMoveEndpointsRefuseBadInput: each bad move request gets its status and a JSON
// {"message","code"} body that says why, and nothing is recorded.
func TestMoveEndpointsRefuseBadInput(t *testing.T) {
	b, srv := newTestAdmin(t, 1, "")
	self := b.NodeID()

	for _, tc := range []struct {
		name, path, body string
		code             int
		msg              string
	}{
		{"not json", "/v1/partitions/orders/0/replicas", "four", 400, "JSON array"},
		{"null body", "/v1/partitions/orders/0/replicas", "null", 400, "JSON array"},
		{"object body", "/v1/partitions/orders/0/replicas", `{"node_id":1}`, 400, "JSON array"},
		{"string id", "/v1/partitions/orders/0/replicas", `["1"]`, 400, "replica 0 is \"1\""},
		{"no node_id", "/v1/partitions/orders/0/replicas", `[{"core":0}]`, 400, "no node_id"},
		{"unknown field", "/v1/partitions/orders/0/replicas", `[{"node_id":1,"shard":2}]`, 400, "shard"},
		{"empty", "/v1/partitions/orders/0/replicas", `[]`, 400, "empty"},
		{"unknown broker", "/v1/partitions/orders/0/replicas", `[{"node_id":42,"core":0}]`, 400, "broker 42 is not registered"},
		{"duplicate", "/v1/partitions/orders/0/replicas", `[1,1]`, 400, "named twice"},
		{"negative", "/v1/partitions/orders/0/replicas", `[-1]`, 400, "negative"},
		{"partition not a number", "/v1/partitions/orders/x/replicas", `[1]`, 400, "not a number"},
		{"unknown topic", "/v1/partitions/nope/0/replicas", `[1]`, 404, "does not exist"},
		{"unknown partition", "/v1/partitions/orders/3/replicas", `[1]`, 404, "no partition 3"},
		{"cancel none in progress", "/v1/partitions/orders/0/cancel_reconfiguration", ``, 409, "not being reassigned"},
		{"cancel unknown topic", "/v1/partitions/nope/0/cancel_reconfiguration", ``, 404, "does not exist"},
	} {
		code, body := post(t, srv, tc.path, tc.body)
		var e httpError
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Errorf("%s: body %q is not JSON: %v", tc.name, body, err)
			continue
		}
		if code != tc.code || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, code, body, tc.code, tc.msg)
		}
	}

	// The current replicas again, in either body shape, are accepted and record nothing.
	for _, body := range []string{`[{"node_id":` + itoa(self) + `,"core":0}]`, `[` + itoa(self) + `]`} {
		if code, resp := post(t, srv, "/v1/partitions/orders/0/replicas", body); code != 200 || strings.TrimSpace(resp) != "{}" {
			t.Errorf("no-op move %s: %d %s", body, code, resp)
		}
	}
	code, body := get(t, srv, "/v1/partitions/reconfigurations")
	if code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("reconfigurations after refused moves: %d %s", code, body)
	}
	if a, _ := b.PartitionAssignment("orders", 0); !slices.Equal(a, []int32{self}) {
		t.Fatalf("assignment %v", a)
	}
}

func TestParseReplicasShapes(t *testing.T) {
	for body, want := range map[string][]int32{
		`[4,5,6]`: {4, 5, 6},
		`[{"node_id":4,"core":0},{"node_id":5,"core":1}]`: {4, 5},
		`[{"node_id":4}, 5]`:                              {4, 5},
		`[]`:                                              {},
	} {
		got, err := parseReplicas(strings.NewReader(body))
		if err != nil || got == nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v %v, want %v", body, got, err, want)
		}
	}
}

func itoa(id int32) string { b, _ := json.Marshal(id); return string(b) }
