package main

import (
	"strings"
	"testing"
)

// A user created with the password on stdin is listed with its mechanism and iterations,
// a second mechanism adds to it, and delete removes one or all.
func TestSecurityUserCommands(t *testing.T) {
	addr := newFakeCluster(t, 1)
	mustRun(t, "s3cret\n", "security", "user", "create", "alice", "-b", addr, "--password-stdin", "--iterations", "8192")
	mustRun(t, "", "security", "user", "create", "alice", "-b", addr, "--mechanism", "SCRAM-SHA-256", "--password", "other")
	out := mustRun(t, "", "security", "user", "list", "-b", addr)
	for _, want := range []string{"alice  SCRAM-SHA-256  4096", "alice  SCRAM-SHA-512  8192"} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
	mustRun(t, "", "security", "user", "delete", "alice", "-b", addr, "--mechanism", "SCRAM-SHA-256")
	if out = mustRun(t, "", "security", "user", "list", "-b", addr); strings.Contains(out, "SCRAM-SHA-256") || !strings.Contains(out, "SCRAM-SHA-512") {
		t.Fatalf("after deleting one mechanism:\n%s", out)
	}
	mustRun(t, "", "security", "user", "delete", "alice", "-b", addr)
	if out = mustRun(t, "", "security", "user", "list", "-b", addr); strings.Contains(out, "alice") {
		t.Fatalf("after deleting all:\n%s", out)
	}
	wantErr(t, "", []string{"security", "user", "delete", "alice", "-b", addr}, "no SCRAM credential")
	wantErr(t, "", []string{"security", "user", "create", "bob", "-b", addr}, "no password")
	wantErr(t, "\n", []string{"security", "user", "create", "bob", "-b", addr, "--password-stdin"}, "empty password")
	wantErr(t, "", []string{"security", "user", "create", "bob", "-b", addr, "--password", "p", "--mechanism", "PLAIN"}, "unknown mechanism")
	wantErr(t, "", []string{"security", "user", "create", "bob", "-b", addr, "--password", "p", "--iterations", "100"}, "outside")
}
