package security

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAuthorizeByResourceType(t *testing.T) {
	topic := kmsg.ACLResourceTypeTopic
	allow := func(name string, pt kmsg.ACLResourcePatternType, op kmsg.ACLOperation) ACL {
		return ACL{ResourceType: topic, ResourceName: name, PatternType: pt, Principal: "User:alice", Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
	}
	deny := func(name string, pt kmsg.ACLResourcePatternType) ACL {
		return ACL{ResourceType: topic, ResourceName: name, PatternType: pt, Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeDeny}
	}
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	write := kmsg.ACLOperationWrite
	for _, c := range []struct {
		name string
		acls []ACL
		want bool
	}{
		{"no ACLs", nil, false},
		{"literal allow", []ACL{allow("orders", lit, write)}, true},
		{"prefixed allow for topics not created yet", []ACL{allow("orders-", pre, write)}, true},
		{"ALL implies write", []ACL{allow("orders", lit, kmsg.ACLOperationAll)}, true},
		{"read does not imply write", []ACL{allow("orders", lit, kmsg.ACLOperationRead)}, false},
		{"literal deny of the same name", []ACL{allow("orders", lit, write), deny("orders", lit)}, false},
		{"literal deny of another name", []ACL{allow("orders", lit, write), deny("payments", lit)}, true},
		{"covering prefix deny", []ACL{allow("orders-eu", pre, write), deny("orders", pre)}, false},
		{"narrower prefix deny leaves the rest", []ACL{allow("orders", pre, write), deny("orders-eu", pre)}, true},
		{"wildcard deny", []ACL{allow("orders", lit, write), deny("*", lit)}, false},
		{"wildcard allow", []ACL{allow("*", lit, write)}, true},
	} {
		a := NewAuthorizer(c.acls, nil, false)
		if got := a.AuthorizeByResourceType("User:alice", "10.0.0.1", write, topic); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
		if a.AuthorizeByResourceType("User:bob", "10.0.0.1", write, topic) && c.name != "no ACLs" {
			t.Errorf("%s: bob, who has no ACL, is allowed", c.name)
		}
	}
	if !NewAuthorizer(nil, []Principal{"User:root"}, false).AuthorizeByResourceType("User:root", "h", write, topic) {
		t.Error("a super user is refused")
	}
	if !NewAuthorizer(nil, nil, true).AuthorizeByResourceType("User:bob", "h", write, topic) {
		t.Error("allow.everyone.if.no.acl.found does not allow a type without ACLs")
	}
}
