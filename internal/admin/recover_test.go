package admin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestForceRecoverEndpointsRefuseBadInput: bad plans and recoveries get 400 with a reason,
// a live broker's partitions are never recovered, and nothing is recorded.
func TestForceRecoverEndpointsRefuseBadInput(t *testing.T) {
	b, srv := newTestAdmin(t, 1, "")
	self := itoa(b.NodeID())

	for _, tc := range []struct{ name, path, msg string }{
		{"no dead", "/v1/partitions/majority_lost", "names no broker"},
		{"not a number", "/v1/partitions/majority_lost?dead_nodes=x", "is not a broker id"},
		{"negative", "/v1/partitions/majority_lost?dead_nodes=-1", "is not a broker id"},
		{"unknown broker", "/v1/partitions/majority_lost?dead_nodes=42", "broker 42 is not registered"},
		{"twice", "/v1/partitions/majority_lost?dead_nodes=" + self + "," + self, "named twice"},
	} {
		code, body := get(t, srv, tc.path)
		if code != 400 || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.name, code, body, tc.msg)
		}
	}
	for _, tc := range []struct{ name, body, msg string }{
		{"not json", "x", "the body must be"},
		{"unknown field", `{"dead_nodes":[1],"force":true}`, "force"},
		{"no dead", `{"partitions":[]}`, "names no broker"},
	} {
		if code, body := post(t, srv, "/v1/partitions/force_recover_from_nodes", tc.body); code != 400 || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.name, code, body, tc.msg)
		}
	}

	// The only broker is alive: its partition is listed with the reason it cannot be
	// recovered, and asking anyway is refused per partition.
	code, body := get(t, srv, "/v1/partitions/majority_lost?dead_nodes="+self)
	var plan []LostPartition
	if code != 200 || json.Unmarshal([]byte(body), &plan) != nil || len(plan) != 1 || plan[0].Problem == "" {
		t.Fatalf("plan with the live broker named dead: %d %s", code, body)
	}
	code, body = post(t, srv, "/v1/partitions/force_recover_from_nodes", `{"dead_nodes":[`+self+`],"partitions":[{"topic":"orders","partition":0},{"topic":"nope","partition":0}]}`)
	var res []RecoverResult
	if code != 200 || json.Unmarshal([]byte(body), &res) != nil || len(res) != 2 || res[0].Error == "" || !strings.Contains(res[1].Error, "nothing to recover") {
		t.Fatalf("recovering a live partition: %d %s", code, body)
	}
	if a, _ := b.PartitionAssignment("orders", 0); !slices.Equal(a, []int32{b.NodeID()}) {
		t.Fatalf("assignment changed: %v", a)
	}
}
