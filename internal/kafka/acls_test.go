package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/security"
)

// startACLBroker is startBroker with the broker as the server's authorizer, as
// `cairn start` wires it, and cluster overrides set.
func startACLBroker(t *testing.T, overrides map[string]string) (*kadm.Client, *kgo.Client, *broker.Broker) {
	t.Helper()
	_, b, addr := newAuthzServer(t, overrides)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl), cl, b
}

func newAuthzServer(t testing.TB, overrides map[string]string) (*Server, *broker.Broker, string) {
	t.Helper()
	s, b, addr := serveTestBroker(t, overrides, nil)
	s.SetAuthorizer(b)
	return s, b, addr
}

func aclCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// kadm creates ACLs, describes them by filter and deletes them by filter.
func TestACLsThroughKadm(t *testing.T) {
	adm, _, _ := startACLBroker(t, nil)
	ctx := aclCtx(t)
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("orders").Groups("g1").Allow("User:alice").
		Operations(kadm.OpRead, kadm.OpDescribe))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range created {
		if c.Err != nil {
			t.Fatalf("create %s %s: %v %s", c.Name, c.Operation, c.Err, c.ErrMessage)
		}
	}
	created, err = adm.CreateACLs(ctx, kadm.NewACLs().Topics("pay-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Deny("User:bob").DenyHosts("10.0.0.1").Operations(kadm.OpWrite))
	if err != nil || created[0].Err != nil {
		t.Fatal(err, created)
	}

	all, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations().Allow().AllowHosts().Deny().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	if n := countDescribed(all); n != 5 {
		t.Fatalf("described %d ACLs, want 5: %+v", n, all)
	}
	// MATCH on topic pay-in finds the prefixed deny.
	match, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("pay-in").ResourcePatternType(kadm.ACLPatternMatch).
		Operations().Allow().AllowHosts().Deny().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	if n := countDescribed(match); n != 1 || match[0].Described[0].Principal != "User:bob" || match[0].Described[0].Host != "10.0.0.1" {
		t.Fatalf("MATCH pay-in: %+v", match)
	}

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts().Operations())
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 2 {
		t.Fatalf("deleted %+v", deleted)
	}
	all, err = adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations().Allow().AllowHosts().Deny().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	if n := countDescribed(all); n != 3 {
		t.Fatalf("after delete: %d ACLs, want 3: %+v", n, all)
	}
}

func countDescribed(rs kadm.DescribeACLsResults) int {
	n := 0
	for _, r := range rs {
		n += len(r.Described)
	}
	return n
}

// Bad creations are refused one by one with INVALID_REQUEST and a message; the good one
// in the same request is stored.
func TestCreateACLsBadInput(t *testing.T) {
	_, cl, b := startACLBroker(t, nil)
	ctx := aclCtx(t)
	good := kmsg.NewCreateACLsRequestCreation()
	good.ResourceType, good.ResourceName, good.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
	good.Principal, good.Host, good.Operation, good.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	mod := func(f func(*kmsg.CreateACLsRequestCreation)) kmsg.CreateACLsRequestCreation {
		c := good
		f(&c)
		return c
	}
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = []kmsg.CreateACLsRequestCreation{
		mod(func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = 42 }),
		mod(func(c *kmsg.CreateACLsRequestCreation) { c.ResourcePatternType = kmsg.ACLResourcePatternTypeAny }),
		mod(func(c *kmsg.CreateACLsRequestCreation) { c.Principal = "alice" }),
		mod(func(c *kmsg.CreateACLsRequestCreation) { c.Host = "not-an-ip" }),
		mod(func(c *kmsg.CreateACLsRequestCreation) { c.Operation = kmsg.ACLOperationAny }),
		mod(func(c *kmsg.CreateACLsRequestCreation) {
			c.ResourceType, c.ResourceName = kmsg.ACLResourceTypeCluster, "other"
		}),
		good,
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results[:len(resp.Results)-1] {
		if r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage == "" {
			t.Errorf("creation %d: code %d message %v, want INVALID_REQUEST with a message", i, r.ErrorCode, r.ErrorMessage)
		}
	}
	if last := resp.Results[len(resp.Results)-1]; last.ErrorCode != 0 {
		t.Fatalf("good creation: %d %v", last.ErrorCode, last.ErrorMessage)
	}
	if acls := b.ACLs(); len(acls) != 1 || acls[0].Principal != "User:alice" {
		t.Fatalf("stored %+v, want only the good ACL", acls)
	}

	// A filter with UNKNOWN fields: DescribeAcls refuses it whole, DeleteAcls per filter.
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.ResourcePatternType, dreq.Operation, dreq.PermissionType = kmsg.ACLResourceTypeAny, 0, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil || dresp.ErrorCode != kerr.InvalidRequest.Code || dresp.ErrorMessage == nil {
		t.Fatalf("describe with an UNKNOWN pattern: %v %+v", err, dresp)
	}
	xreq := kmsg.NewPtrDeleteACLsRequest()
	bad := kmsg.NewDeleteACLsRequestFilter()
	bad.ResourceType, bad.ResourcePatternType, bad.Operation, bad.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, 0, kmsg.ACLPermissionTypeAny
	xreq.Filters = []kmsg.DeleteACLsRequestFilter{bad}
	xresp, err := xreq.RequestWith(ctx, cl)
	if err != nil || xresp.Results[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("delete with an UNKNOWN operation: %v %+v", err, xresp)
	}
	if len(b.ACLs()) != 1 {
		t.Fatal("a refused delete filter deleted something")
	}
}

// With the authorizer on, no ACLs and no super user, an anonymous client may not manage
// ACLs; listed in super.users, it may.
func TestACLAPIsNeedClusterPermission(t *testing.T) {
	adm, cl, b := startACLBroker(t, map[string]string{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
	ctx := aclCtx(t)
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if created[0].Err != kerr.ClusterAuthorizationFailed {
		t.Fatalf("create: %v, want CLUSTER_AUTHORIZATION_FAILED", created[0].Err)
	}
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.ResourcePatternType, dreq.Operation, dreq.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if dresp, err := dreq.RequestWith(ctx, cl); err != nil || dresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("describe: %v %+v", err, dresp)
	}
	if len(b.ACLs()) != 0 {
		t.Fatal("a denied creation was stored")
	}

	if err := b.SetClusterConfig(map[string]string{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"}); err != nil {
		t.Fatal(err)
	}
	created, err = adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead))
	if err != nil || created[0].Err != nil {
		t.Fatalf("create as a super user: %v %+v", err, created)
	}
	if !b.Authorize("User:alice", "127.0.0.1", kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "t") ||
		b.Authorize("User:bob", "127.0.0.1", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") {
		t.Fatal("the broker's verdicts do not follow the created ACL")
	}
}

// FuzzACLRequests: any bytes that decode as a DescribeAcls, CreateAcls or DeleteAcls
// request, at any served version, get a response with one result per creation or filter,
// and nothing the broker stores is an invalid ACL. The first byte picks the API, the
// second the version.
func FuzzACLRequests(f *testing.F) {
	seed := func(key int16, r kmsg.Request, v int16) {
		r.SetVersion(v)
		f.Add(append([]byte{byte(key - 29), byte(v)}, r.AppendTo(nil)...))
	}
	c := kmsg.NewCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.Principal, cr.Host, cr.Operation, cr.PermissionType = 2, "t", "User:a", "*", 3, 3
	c.Creations = append(c.Creations, cr)
	seed(30, &c, 1)
	seed(30, &c, 3)
	d := kmsg.NewDeleteACLsRequest()
	d.Filters = append(d.Filters, kmsg.NewDeleteACLsRequestFilter())
	seed(31, &d, 2)
	desc := kmsg.NewDescribeACLsRequest()
	seed(29, &desc, 0)
	s, b, _ := newAuthzServer(f, nil)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		key, v := 29+int16(in[0]%3), int16(in[1]%4)
		req := kmsg.RequestForKey(key)
		req.SetVersion(v)
		if req.ReadFrom(in[2:]) != nil {
			return
		}
		resp := apis[key].handle(s, ctx, req)(ctx)
		switch r := resp.(type) {
		case *kmsg.CreateACLsResponse:
			if len(r.Results) != len(req.(*kmsg.CreateACLsRequest).Creations) {
				t.Fatalf("%d results for %d creations", len(r.Results), len(req.(*kmsg.CreateACLsRequest).Creations))
			}
		case *kmsg.DeleteACLsResponse:
			if len(r.Results) != len(req.(*kmsg.DeleteACLsRequest).Filters) {
				t.Fatalf("%d results for %d filters", len(r.Results), len(req.(*kmsg.DeleteACLsRequest).Filters))
			}
		}
		for _, a := range b.ACLs() {
			if err := security.ValidateACL(a); err != nil {
				t.Fatalf("stored an invalid ACL: %v", err)
			}
		}
	})
}
