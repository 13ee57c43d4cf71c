package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/cairn-io/cairn/internal/contract"
)

// The contract endpoint answers from the topic's live settings: a one-replica topic with
// write caching set on the topic is written on 1 replica and may lose its flush window,
// and each setting names where it came from.
func TestContractEndpoint(t *testing.T) {
	b, srv := newTestAdmin(t, 2, "r1")
	if err := b.SetTopicConfig("orders", map[string]string{"write.caching": "true", "flush.ms": "250"}); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, srv, "/v1/topics/orders/contract")
	var c contract.Contract
	if code != http.StatusOK || json.Unmarshal([]byte(body), &c) != nil {
		t.Fatalf("contract: %d %s", code, body)
	}
	all := c.Promises[len(c.Promises)-1]
	if c.Partitions != 2 || all.Acks != "all" || all.Stage != "written" || all.Replicas != 1 || all.Racks != 1 {
		t.Fatalf("contract of a write-caching one-replica topic: %s", body)
	}
	if !strings.Contains(c.MayLose, "flush.ms=250") {
		t.Fatalf("may lose %q: want the topic's flush.ms", c.MayLose)
	}
	sources := map[string]string{}
	for _, s := range c.Settings {
		sources[s.Name+"="+s.Value] = s.Source
	}
	if sources["write.caching=true"] != "topic" || sources["min.insync.replicas=1"] != "default" {
		t.Fatalf("settings %+v", c.Settings)
	}
	if len(c.Refused) == 0 || c.Refused[0].Name != "flush.messages" || c.Refused[0].Instead == "" {
		t.Fatalf("refused %+v", c.Refused)
	}

	code, body = get(t, srv, "/v1/topics/orders/contract?partition=1")
	if json.Unmarshal([]byte(body), &c) != nil || code != http.StatusOK || c.Partitions != 1 {
		t.Fatalf("one partition: %d %s", code, body)
	}
}

// Bad input: an unknown topic or partition is 404, a malformed or unknown query parameter
// 400, each with a message that says which.
func TestContractEndpointBadInput(t *testing.T) {
	_, srv := newTestAdmin(t, 2, "")
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/v1/topics/nope/contract", http.StatusNotFound, `no such topic "nope"`},
		{"/v1/topics/orders/contract?partition=2", http.StatusNotFound, "has no partition 2 (it has 2)"},
		{"/v1/topics/orders/contract?partition=-1", http.StatusBadRequest, "partition must be one non-negative number"},
		{"/v1/topics/orders/contract?partition=x", http.StatusBadRequest, "partition must be one non-negative number"},
		{"/v1/topics/orders/contract?partition=0&partition=1", http.StatusBadRequest, "partition must be one non-negative number"},
		{"/v1/topics/orders/contract?acks=1", http.StatusBadRequest, `unknown query parameter "acks"`},
	} {
		code, body := get(t, srv, tc.path)
		var e struct{ Error string }
		if code != tc.code || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, tc.msg) {
			t.Errorf("%s: %d %s, want %d with %q", tc.path, code, body, tc.code, tc.msg)
		}
	}
}
