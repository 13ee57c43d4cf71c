package security

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
	read    = kmsg.ACLOperationRead
	write   = kmsg.ACLOperationWrite
	desc    = kmsg.ACLOperationDescribe
)

func acl(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) ACL {
	return ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func TestAuthorizerKafkaRules(t *testing.T) {
	alice, bob := UserPrincipal("alice"), UserPrincipal("bob")
	a := NewAuthorizer([]ACL{
		acl(topic, "orders", literal, "User:alice", "*", read, allow),
		acl(topic, "pay-", prefix, "User:alice", "*", write, allow),
		acl(topic, "pay-secret", literal, "User:alice", "*", write, deny),
		acl(topic, "*", literal, "User:bob", "10.0.0.1", kmsg.ACLOperationAll, allow),
		acl(topic, "logs", literal, "User:*", "*", read, allow),
		acl(topic, "logs", literal, "User:bob", "*", read, deny),
		acl(topic, "cfg", literal, "User:alice", "*", kmsg.ACLOperationAlterConfigs, allow),
		acl(topic, "nodesc", literal, "User:alice", "*", read, allow),
		acl(topic, "nodesc", literal, "User:alice", "*", desc, deny),
		acl(group, "g", literal, "User:alice", "*", read, allow),
	}, []Principal{"User:admin"}, false)
	cases := []struct {
		name      string
		p         Principal
		host      string
		op        kmsg.ACLOperation
		rt        kmsg.ACLResourceType
		resource  string
		wantAllow bool
	}{
		{"literal allow", alice, "1.2.3.4", read, topic, "orders", true},
		{"other op", alice, "1.2.3.4", write, topic, "orders", false},
		{"read implies describe", alice, "1.2.3.4", desc, topic, "orders", true},
		{"describe does not imply read", alice, "1.2.3.4", read, topic, "cfg", false},
		{"alter_configs implies describe_configs", alice, "1.2.3.4", kmsg.ACLOperationDescribeConfigs, topic, "cfg", true},
		{"prefixed allow", alice, "1.2.3.4", write, topic, "pay-in", true},
		{"prefixed implies describe", alice, "1.2.3.4", desc, topic, "pay-in", true},
		{"prefix itself", alice, "1.2.3.4", write, topic, "pay-", true},
		{"shorter than prefix", alice, "1.2.3.4", write, topic, "pay", false},
		{"deny beats prefixed allow", alice, "1.2.3.4", write, topic, "pay-secret", false},
		{"deny write keeps describe", alice, "1.2.3.4", desc, topic, "pay-secret", true},
		{"deny describe beats read's implication", alice, "1.2.3.4", desc, topic, "nodesc", false},
		{"deny describe leaves read", alice, "1.2.3.4", read, topic, "nodesc", true},
		{"wildcard resource, right host", bob, "10.0.0.1", write, topic, "anything", true},
		{"wildcard resource, other host", bob, "10.0.0.2", write, topic, "anything", false},
		{"wildcard principal", alice, "1.2.3.4", read, topic, "logs", true},
		{"deny of one principal beats wildcard allow", bob, "9.9.9.9", read, topic, "logs", false},
		{"deny beats wildcard-resource ALL", bob, "10.0.0.1", read, topic, "logs", false},
		{"resource without ACLs denied", alice, "1.2.3.4", read, topic, "none-here", false},
		{"type without ACLs denied", alice, "1.2.3.4", desc, cluster, "kafka-cluster", false},
		{"group", alice, "1.2.3.4", read, group, "g", true},
		{"group name is not a topic name", alice, "1.2.3.4", read, group, "orders", false},
		{"super user", "User:admin", "1.2.3.4", kmsg.ACLOperationAlter, cluster, "kafka-cluster", true},
		{"super user past deny", "User:admin", "1.2.3.4", read, topic, "logs", true},
		{"anonymous", Anonymous, "1.2.3.4", read, topic, "logs", true},
	}
	for _, c := range cases {
		if got := a.Authorize(c.p, c.host, c.op, c.rt, c.resource); got != c.wantAllow {
			t.Errorf("%s: Authorize(%s, %s, %s, %s, %q) = %v, want %v", c.name, c.p, c.host, c.op, c.rt, c.resource, got, c.wantAllow)
		}
	}
}

// allow.everyone.if.no.acl.found allows only where no ACL at all applies to the resource:
// an ACL for someone else still denies the rest.
func TestAuthorizerAllowEveryoneIfNoACL(t *testing.T) {
	a := NewAuthorizer([]ACL{acl(topic, "private", literal, "User:alice", "*", read, allow)}, nil, true)
	if !a.Authorize("User:bob", "1.1.1.1", read, topic, "public") {
		t.Fatal("no ACL on the resource: want allowed")
	}
	if !a.Authorize("User:bob", "1.1.1.1", read, group, "g") {
		t.Fatal("no ACL of the type: want allowed")
	}
	if a.Authorize("User:bob", "1.1.1.1", read, topic, "private") {
		t.Fatal("an ACL applies to the resource: want denied")
	}
	if !a.Authorize("User:alice", "1.1.1.1", read, topic, "private") {
		t.Fatal("alice's ACL: want allowed")
	}
}

func TestAuthorizerNoACLsDeniesAllButSuperUsers(t *testing.T) {
	a := NewAuthorizer(nil, []Principal{"User:root"}, false)
	if a.Authorize(Anonymous, "127.0.0.1", desc, cluster, "kafka-cluster") {
		t.Fatal("no ACLs: want denied")
	}
	if !a.Authorize("User:root", "127.0.0.1", desc, cluster, "kafka-cluster") || !a.IsSuperUser("User:root") {
		t.Fatal("super user: want allowed")
	}
}

func TestValidateACL(t *testing.T) {
	good := acl(topic, "t", literal, "User:alice", "*", read, allow)
	if err := ValidateACL(good); err != nil {
		t.Fatal(err)
	}
	mod := func(f func(*ACL)) ACL { a := good; f(&a); return a }
	bad := map[string]ACL{
		"unknown resource type": mod(func(a *ACL) { a.ResourceType = 42 }),
		"any resource type":     mod(func(a *ACL) { a.ResourceType = kmsg.ACLResourceTypeAny }),
		"user resource type":    mod(func(a *ACL) { a.ResourceType = kmsg.ACLResourceTypeUser }),
		"any pattern":           mod(func(a *ACL) { a.PatternType = kmsg.ACLResourcePatternTypeAny }),
		"match pattern":         mod(func(a *ACL) { a.PatternType = kmsg.ACLResourcePatternTypeMatch }),
		"empty name":            mod(func(a *ACL) { a.ResourceName = "" }),
		"cluster name":          mod(func(a *ACL) { a.ResourceType = cluster }),
		"principal no type":     mod(func(a *ACL) { a.Principal = "alice" }),
		"principal no name":     mod(func(a *ACL) { a.Principal = "User:" }),
		"host name":             mod(func(a *ACL) { a.Host = "example.com" }),
		"empty host":            mod(func(a *ACL) { a.Host = "" }),
		"any operation":         mod(func(a *ACL) { a.Operation = kmsg.ACLOperationAny }),
		"unknown operation":     mod(func(a *ACL) { a.Operation = 99 }),
		"any permission":        mod(func(a *ACL) { a.Permission = kmsg.ACLPermissionTypeAny }),
	}
	for name, a := range bad {
		if err := ValidateACL(a); !errors.Is(err, ErrInvalidACL) {
			t.Errorf("%s: ValidateACL = %v, want ErrInvalidACL", name, err)
		}
	}
	if ValidateACL(mod(func(a *ACL) { a.ResourceType, a.ResourceName = cluster, "kafka-cluster" })) != nil ||
		ValidateACL(mod(func(a *ACL) { a.Host = "::1" })) != nil {
		t.Fatal("valid cluster ACL or IPv6 host refused")
	}
}

func TestACLFilter(t *testing.T) {
	acls := []ACL{
		acl(topic, "orders", literal, "User:alice", "*", read, allow),   // 0
		acl(topic, "*", literal, "User:bob", "*", write, allow),         // 1
		acl(topic, "ord", prefix, "User:alice", "10.0.0.1", read, deny), // 2
		acl(group, "orders", literal, "User:alice", "*", read, allow),   // 3
	}
	s := func(v string) *string { return &v }
	cases := map[string]struct {
		f    ACLFilter
		want []int
	}{
		"all":               {MatchAll(), []int{0, 1, 2, 3}},
		"topics":            {func() ACLFilter { f := MatchAll(); f.ResourceType = topic; return f }(), []int{0, 1, 2}},
		"any pattern, name": {func() ACLFilter { f := MatchAll(); f.ResourceName = s("orders"); return f }(), []int{0, 3}},
		"any pattern, *":    {func() ACLFilter { f := MatchAll(); f.ResourceName = s("*"); return f }(), []int{1}},
		"match": {func() ACLFilter {
			f := MatchAll()
			f.ResourceName = s("orders")
			f.PatternType = kmsg.ACLResourcePatternTypeMatch
			return f
		}(), []int{0, 1, 2, 3}},
		"match other": {func() ACLFilter {
			f := MatchAll()
			f.ResourceName = s("x")
			f.PatternType = kmsg.ACLResourcePatternTypeMatch
			return f
		}(), []int{1}},
		"prefixed exact":     {func() ACLFilter { f := MatchAll(); f.ResourceName = s("ord"); f.PatternType = prefix; return f }(), []int{2}},
		"literal only":       {func() ACLFilter { f := MatchAll(); f.PatternType = literal; return f }(), []int{0, 1, 3}},
		"principal exact":    {func() ACLFilter { f := MatchAll(); f.Principal = s("User:bob"); return f }(), []int{1}},
		"principal wildcard": {func() ACLFilter { f := MatchAll(); f.Principal = s("User:*"); return f }(), nil},
		"host":               {func() ACLFilter { f := MatchAll(); f.Host = s("10.0.0.1"); return f }(), []int{2}},
		"op and perm":        {func() ACLFilter { f := MatchAll(); f.Operation, f.Permission = read, allow; return f }(), []int{0, 3}},
	}
	for name, c := range cases {
		var got []int
		for i, a := range acls {
			if c.f.Matches(a) {
				got = append(got, i)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: matched %v, want %v", name, got, c.want)
		}
	}
	if ValidateFilter(MatchAll()) != nil {
		t.Fatal("MatchAll refused")
	}
	f := MatchAll()
	f.PatternType = 0
	if ValidateFilter(f) == nil {
		t.Fatal("UNKNOWN pattern type accepted")
	}
}

func TestParseSuperUsers(t *testing.T) {
	got, err := ParseSuperUsers(" User:a ;User:b;;")
	if err != nil || fmt.Sprint(got) != "[User:a User:b]" {
		t.Fatalf("ParseSuperUsers = %v, %v", got, err)
	}
	if _, err := ParseSuperUsers("User:a;bob"); err == nil {
		t.Fatal("principal without a type accepted")
	}
	if got, err := ParseSuperUsers(""); err != nil || got != nil {
		t.Fatalf("empty: %v, %v", got, err)
	}
}

// 10k ACLs: literal, prefixed and wildcard, over topics and groups.
func benchAuthorizer() *Authorizer {
	var acls []ACL
	for i := range 10_000 {
		p := fmt.Sprintf("User:u%d", i%500)
		switch i % 4 {
		case 0, 1:
			acls = append(acls, acl(topic, fmt.Sprintf("topic-%d", i), literal, p, "*", read, allow))
		case 2:
			acls = append(acls, acl(topic, fmt.Sprintf("team-%d-", i), prefix, p, "*", write, allow))
		case 3:
			acls = append(acls, acl(group, fmt.Sprintf("group-%d", i), literal, p, "*", read, allow))
		}
	}
	acls = append(acls, acl(topic, "*", literal, "User:ops", "*", desc, allow))
	return NewAuthorizer(acls, []Principal{"User:admin"}, false)
}

func BenchmarkAuthorize10kACLs(b *testing.B) {
	a := benchAuthorizer()
	b.ReportAllocs()
	for b.Loop() {
		if !a.Authorize("User:u10", "127.0.0.1", desc, topic, "team-9010-orders") {
			b.Fatal("denied")
		}
		if a.Authorize("User:u1", "127.0.0.1", write, topic, "topic-4") {
			b.Fatal("allowed")
		}
	}
}

func TestAuthorizeDoesNotAllocate(t *testing.T) {
	a := benchAuthorizer()
	n := testing.AllocsPerRun(100, func() {
		a.Authorize("User:u10", "127.0.0.1", desc, topic, "team-9010-orders")
	})
	if n != 0 {
		t.Fatalf("%v allocations per check", n)
	}
}
