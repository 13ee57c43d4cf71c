package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

// testACL allows principal to READ the topic named topic.
func testACL(topic, principal string) security.ACL {
	return security.ACL{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: topic, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: principal, Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
}

func aclJSON(topic, principal string) string {
	b, _ := json.Marshal(testACL(topic, principal))
	return string(b)
}

func TestACLsCreateAndDelete(t *testing.T) {
	h := newHarness(t)
	a, b, c := testACL("orders", "User:alice"), testACL("orders", "User:bob"), testACL("pay", "User:alice")
	gen := h.s.AuthzGeneration()
	h.ok(CreateACLs{ACLs: []security.ACL{a, b}})
	if h.s.AuthzGeneration() == gen {
		t.Fatal("creating ACLs did not change the authorization generation")
	}
	// Creating an existing ACL is a success that changes nothing, as in Kafka.
	h.ok(CreateACLs{ACLs: []security.ACL{c, a}})
	eq(t, h.s.ACLs(), []security.ACL{a, b, c})

	alice := "User:alice"
	byAlice := security.MatchAll()
	byAlice.Principal = &alice
	orders := "orders"
	onOrders := security.MatchAll()
	onOrders.ResourceName = &orders
	res := h.ok(DeleteACLs{Filters: []security.ACLFilter{byAlice, onOrders}})
	eq(t, res.DeletedACLs, [][]security.ACL{{a, c}, {a, b}})
	// The replica keeps the result for a proposer whose forwarded proposal came back
	// with only its index.
	kept, ok := h.s.DeletedACLsAt(res.Index)
	eq(t, ok, true)
	eq(t, kept, res.DeletedACLs)
	eq(t, h.s.ACLs(), []security.ACL(nil))

	// A filter that matches nothing deletes nothing and is no error.
	h.ok(CreateACLs{ACLs: []security.ACL{b}})
	res = h.ok(DeleteACLs{Filters: []security.ACLFilter{byAlice}})
	eq(t, res.DeletedACLs, [][]security.ACL{nil})
	eq(t, h.s.ACLs(), []security.ACL{b})
}

func TestACLsRefused(t *testing.T) {
	h := newHarness(t)
	bad := testACL("orders", "alice")
	unknown := security.MatchAll()
	unknown.Operation = kmsg.ACLOperationUnknown
	cases := map[string]Command{
		"invalid ACL": CreateACLs{ACLs: []security.ACL{testACL("ok", "User:a"), bad}},
		"no ACLs":     CreateACLs{},
		"no filters":  DeleteACLs{},
	}
	for name, c := range cases {
		res := h.apply(c)
		if res.Err != kerr.InvalidRequest || res.Msg == "" {
			t.Errorf("%s: %v %q, want INVALID_REQUEST with a reason", name, res.Err, res.Msg)
		}
	}
	// Nothing of a refused command is kept: not half a write.
	eq(t, h.s.ACLs(), []security.ACL(nil))
	if res := h.apply(CreateACLs{ACLs: []security.ACL{bad}}); !strings.Contains(res.Msg, "Type:name") {
		t.Fatalf("message %q does not say what a principal looks like", res.Msg)
	}
}

func TestACLsSurviveSnapshotAndBumpGeneration(t *testing.T) {
	h := newHarness(t)
	h.ok(CreateACLs{ACLs: []security.ACL{testACL("orders", "User:alice")}})
	snap, err := h.s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := New()
	gen := r.AuthzGeneration()
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	eq(t, r.ACLs(), h.s.ACLs())
	if r.AuthzGeneration() == gen {
		t.Fatal("a restore did not change the authorization generation")
	}
	gen = r.AuthzGeneration()
	b, _ := EncodeCommand(SetClusterConfig{Overrides: map[string]string{"super.users": "User:a"}})
	if res, err := r.Apply(r.AppliedIndex()+1, b); err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	if r.AuthzGeneration() == gen {
		t.Fatal("a cluster config change did not change the authorization generation")
	}
}
