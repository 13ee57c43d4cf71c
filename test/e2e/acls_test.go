package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// describeAllACLs is every ACL b serves (DescribeAcls with a match-everything filter).
func describeAllACLs(t *testing.T, adm *kadm.Client) (kadm.DescribedACLs, error) {
	t.Helper()
	res, err := adm.DescribeACLs(ctxFor(t, 15*time.Second), kadm.NewACLs().AnyResource().
		ResourcePatternType(kadm.ACLPatternAny).Operations().Allow().AllowHosts().Deny().DenyHosts())
	if err != nil {
		return nil, err
	}
	var out kadm.DescribedACLs
	for _, r := range res {
		if r.Err != nil {
			return nil, r.Err
		}
		out = append(out, r.Described...)
	}
	return out, nil
}

// TestACLsReplicated: on three brokers, kadm creates ACLs through broker 1; broker 3
// describes them (ACLs are controller state) and the CLI lists them through broker 2; a
// filter deletes some through broker 2 and broker 1 stops describing them. Bad creations
// are refused one by one and store nothing.
//
// Then enforcement, without SASL: with the authorizer on, super.users without
// User:ANONYMOUS and allow.everyone.if.no.acl.found false, a plaintext client's CreateAcls
// and DescribeAcls get CLUSTER_AUTHORIZATION_FAILED; once super.users lists
// User:ANONYMOUS they succeed. The anonymous client is allowed ALTER_CONFIGS on the
// cluster by an ACL, so that it may still change super.users once IncrementalAlterConfigs
// is itself authorized; that ACL grants neither ALTER nor DESCRIBE.
func TestACLsReplicated(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	ctx := ctxFor(t, 90*time.Second)
	adm1 := bs[0].Admin(t)
	created, err := adm1.CreateACLs(ctx, kadm.NewACLs().Topics("orders").Groups("billing").Allow("User:alice").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	created2, err := adm1.CreateACLs(ctx, kadm.NewACLs().Topics("pay-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Deny("User:bob").DenyHosts("10.1.2.3").Operations(kadm.OpWrite))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(created, created2...) {
		if c.Err != nil {
			t.Fatalf("create %s %s: %v %s", c.Name, c.Operation, c.Err, c.ErrMessage)
		}
	}
	bad, err := adm1.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("alice").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if bad[0].Err != kerr.InvalidRequest || !strings.Contains(bad[0].ErrMessage, "Type:name") {
		t.Fatalf("principal without a type: %v %q, want INVALID_REQUEST saying what a principal is", bad[0].Err, bad[0].ErrMessage)
	}

	adm3 := bs[2].Admin(t)
	var described kadm.DescribedACLs
	waitFor(t, 20*time.Second, func() bool {
		described, err = describeAllACLs(t, adm3)
		return err == nil && len(described) == 3
	})
	for _, d := range described {
		if d.Principal == "alice" || d.Name == "t" {
			t.Fatalf("broker 3 describes the refused ACL: %+v", d)
		}
	}
	out := cairnCLI(t, bs[1], "", "security", "acl", "list")
	for _, want := range []string{"topic     orders   literal   User:alice", "group     billing  literal   User:alice", "topic     pay-     prefixed  User:bob    10.1.2.3  write      deny"} {
		if !strings.Contains(out.Stdout, want) {
			t.Fatalf("cli list through broker 2 lacks %q:\n%s", want, out.Stdout)
		}
	}

	// Delete User:alice's ACLs on any resource, by filter, through broker 2.
	deleted, err := bs[1].Admin(t).DeleteACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow("User:alice").AllowHosts().Operations())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range deleted {
		if d.Err != nil {
			t.Fatalf("delete: %v %s", d.Err, d.ErrMessage)
		}
		n += len(d.Deleted)
	}
	if n != 2 {
		t.Fatalf("deleted %d ACLs, want 2: %+v", n, deleted)
	}
	waitFor(t, 20*time.Second, func() bool {
		described, err = describeAllACLs(t, adm1)
		return err == nil && len(described) == 1 && described[0].Principal == "User:bob"
	})

	// Enforcement. The CLI deletes bob's ACL through broker 3 first: what is left is only
	// the cluster ALTER_CONFIGS grant.
	out = cairnCLI(t, bs[2], "", "security", "acl", "delete", "--topic", "pay-", "--resource-pattern-type", "prefixed")
	if !strings.Contains(out.Stdout, "1 ACLs deleted") {
		t.Fatalf("cli delete: %s", out.Stdout)
	}
	cairnCLI(t, bs[0], "", "security", "acl", "create", "--cluster", "--allow-principal", "User:ANONYMOUS", "--operation", "alter_configs")
	setCluster(t, adm1, "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users", "User:admin", "allow.everyone.if.no.acl.found", "false")
	for i, b := range bs {
		adm := b.Admin(t)
		waitFor(t, 20*time.Second, func() bool {
			res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("x").Allow("User:carol").Operations(kadm.OpRead))
			return err == nil && res[0].Err == kerr.ClusterAuthorizationFailed
		})
		if _, err := describeAllACLs(t, adm); err != kerr.ClusterAuthorizationFailed {
			t.Fatalf("broker %d: DescribeAcls as User:ANONYMOUS: %v, want CLUSTER_AUTHORIZATION_FAILED", i+1, err)
		}
	}
	r := run(t, 30*time.Second, "", cairnBin, "security", "acl", "list", "-b", bs[1].KafkaAddr)
	if r.Err == nil || !strings.Contains(r.Stderr, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("cli list when denied: %v", r)
	}

	setCluster(t, adm1, "super.users", "User:admin;User:ANONYMOUS")
	waitFor(t, 20*time.Second, func() bool {
		res, err := adm3.CreateACLs(ctx, kadm.NewACLs().Topics("x").Allow("User:carol").Operations(kadm.OpRead))
		return err == nil && res[0].Err == nil
	})
	waitFor(t, 20*time.Second, func() bool {
		described, err = describeAllACLs(t, adm1)
		return err == nil && len(described) == 2
	})
}
