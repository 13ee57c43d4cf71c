package security

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AuthorizeByResourceType reports whether principal, connected from host, may perform op
// on some resource of type rt, whichever one: Kafka's authorizeByResourceType, which
// InitProducerId asks (KIP-679: WRITE on any topic allows idempotent produce). It is true
// when some ALLOW that implies op matches the principal and host and no matching DENY
// covers the whole of what it allows: a DENY on the wildcard covers everything, a DENY of
// prefix Q covers every name and prefix that starts with Q, a literal DENY covers its one
// name. Super users are allowed; a type without any ACL follows allow.everyone.if.no.acl.found.
func (a *Authorizer) AuthorizeByResourceType(principal Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if _, ok := a.superUsers[principal]; ok {
		return true
	}
	ti := a.byType[rt]
	if ti == nil {
		return a.allowEveryoneIfNone
	}
	deniesOp := func(e *entry) bool {
		return e.matches(principal, host) && e.permission == kmsg.ACLPermissionTypeDeny &&
			(e.op == op || e.op == kmsg.ACLOperationAll)
	}
	allowsOp := func(e *entry) bool {
		return e.matches(principal, host) && e.permission == kmsg.ACLPermissionTypeAllow && implies(e.op, op)
	}
	if anyEntry(ti.wildcard, deniesOp) {
		return false
	}
	deniedByPrefix := func(name string) bool {
		for q, es := range ti.prefixed {
			if strings.HasPrefix(name, q) && anyEntry(es, deniesOp) {
				return true
			}
		}
		return false
	}
	if anyEntry(ti.wildcard, allowsOp) {
		return true
	}
	for name, es := range ti.literal {
		if anyEntry(es, allowsOp) && !anyEntry(es, deniesOp) && !deniedByPrefix(name) {
			return true
		}
	}
	for p, es := range ti.prefixed {
		if anyEntry(es, allowsOp) && !deniedByPrefix(p) {
			return true
		}
	}
	return false
}

func (e *entry) matches(principal Principal, host string) bool {
	return (e.principal == principal || e.principal == WildcardPrincipal) && (e.host == host || e.host == WildcardHost)
}

func anyEntry(es []entry, f func(*entry) bool) bool {
	for i := range es {
		if f(&es[i]) {
			return true
		}
	}
	return false
}
