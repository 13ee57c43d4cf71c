package security

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzACL: any ACL fields either fail validation or build an authorizer whose verdicts
// follow the ACL: an exact filter selects it, and a literal ALLOW for a principal on its
// own host and operation allows exactly that request. Nothing panics.
func FuzzACL(f *testing.F) {
	f.Add(int8(2), "orders", int8(3), "User:alice", "*", int8(3), int8(3), "orders")
	f.Add(int8(2), "pay-", int8(4), "User:*", "10.0.0.1", int8(2), int8(2), "pay-x")
	f.Add(int8(4), "kafka-cluster", int8(3), "User:ANONYMOUS", "::1", int8(7), int8(3), "kafka-cluster")
	f.Add(int8(0), "", int8(1), "alice", "", int8(1), int8(1), "")
	f.Fuzz(func(t *testing.T, rt int8, name string, pt int8, principal, host string, op, perm int8, resource string) {
		a := ACL{ResourceType: kmsg.ACLResourceType(rt), ResourceName: name, PatternType: kmsg.ACLResourcePatternType(pt),
			Principal: principal, Host: host, Operation: kmsg.ACLOperation(op), Permission: kmsg.ACLPermissionType(perm)}
		authz := NewAuthorizer([]ACL{a}, nil, false)
		verdict := authz.Authorize(Principal(principal), host, a.Operation, a.ResourceType, resource)
		if ValidateACL(a) != nil {
			if verdict {
				t.Fatalf("an invalid ACL %+v allowed a request", a)
			}
			return
		}
		exact := ACLFilter{ResourceType: a.ResourceType, ResourceName: &a.ResourceName, PatternType: a.PatternType,
			Principal: &a.Principal, Host: &a.Host, Operation: a.Operation, Permission: a.Permission}
		if !exact.Matches(a) || !MatchAll().Matches(a) {
			t.Fatalf("filters do not select %+v", a)
		}
		if a.Permission == kmsg.ACLPermissionTypeAllow && a.PatternType == kmsg.ACLResourcePatternTypeLiteral && a.ResourceName != WildcardResource && host != WildcardHost {
			if verdict != (resource == name) {
				t.Fatalf("ALLOW %+v on %q: %v", a, resource, verdict)
			}
		}
		if a.Permission == kmsg.ACLPermissionTypeDeny && verdict {
			t.Fatalf("a lone DENY %+v allowed a request", a)
		}
	})
}
