package main

import (
	"strings"
	"testing"
)

// ACLs created from kafka-acls.sh-like flags are listed, narrowed by resource and
// principal, and deleted by filter; bad flags are refused before any request.
func TestSecurityACLCommands(t *testing.T) {
	addr := newFakeCluster(t, 1)
	out := mustRun(t, "", "security", "acl", "create", "-b", addr, "--allow-principal", "User:alice", "--operation", "read,describe", "--topic", "orders", "--group", "g1")
	if strings.Count(out, "created:") != 4 || !strings.Contains(out, "allow User:alice from * to read topic:orders (literal)") {
		t.Fatalf("create:\n%s", out)
	}
	mustRun(t, "", "security", "acl", "create", "-b", addr, "--deny-principal", "User:bob", "--deny-host", "10.0.0.1", "--operation", "write", "--topic", "pay-", "--resource-pattern-type", "prefixed")
	out = mustRun(t, "", "security", "acl", "list", "-b", addr)
	for _, want := range []string{"topic     orders  literal   User:alice  *         read       allow", "topic     pay-    prefixed  User:bob    10.0.0.1  write      deny", "group     g1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
	if out = mustRun(t, "", "security", "acl", "list", "-b", addr, "--principal", "User:bob"); strings.Contains(out, "alice") || !strings.Contains(out, "User:bob") {
		t.Fatalf("list --principal User:bob:\n%s", out)
	}
	out = mustRun(t, "", "security", "acl", "delete", "-b", addr, "--topic", "orders")
	if !strings.Contains(out, "2 ACLs deleted") {
		t.Fatalf("delete:\n%s", out)
	}
	if out = mustRun(t, "", "security", "acl", "list", "-b", addr, "--topic", "orders"); strings.Contains(out, "alice") {
		t.Fatalf("after delete:\n%s", out)
	}
	wantErr(t, "", []string{"security", "acl", "create", "-b", addr, "--allow-principal", "User:a"}, "no resource")
	wantErr(t, "", []string{"security", "acl", "create", "-b", addr, "--topic", "t"}, "no principal")
	wantErr(t, "", []string{"security", "acl", "create", "-b", addr, "--topic", "t", "--allow-principal", "User:a", "--operation", "fly"}, "not a Kafka ACL operation")
	wantErr(t, "", []string{"security", "acl", "create", "-b", addr, "--topic", "t", "--allow-principal", "User:a", "--resource-pattern-type", "match"}, "is not one of literal, prefixed")
	wantErr(t, "", []string{"security", "acl", "delete", "-b", addr}, "no resource")
}
