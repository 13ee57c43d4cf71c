package security

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The names ACLs use for "every resource", "every principal" and "every host".
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
)

// Authorizer evaluates a fixed set of ACLs with Kafka's rules (AclAuthorizer, and the
// StandardAuthorizer of KRaft, which agree):
//
//   - a super user may do everything;
//   - an ACL applies to a resource when its pattern does: LITERAL by equal name, LITERAL
//     "*" for every name of its type, PREFIXED for every name that starts with it;
//   - when no ACL at all applies to the resource, the verdict is allowEveryoneIfNoACL
//     (false by default: turning authorization on with no ACLs denies everyone else);
//   - otherwise a DENY whose principal (or User:*), host (or *) and operation (or ALL)
//     match wins; then an ALLOW that matches the operation, ALL, or an operation that
//     implies it (READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
//     DESCRIBE_CONFIGS) allows; anything else is denied. Implication applies to ALLOW
//     only, as in Kafka: DENY READ does not deny DESCRIBE.
//
// It is immutable once built and safe for concurrent use; a change of ACLs builds a new one.
// A check looks up only the ACLs of its resource type and name (and the prefixes of the
// name that some ACL uses), and allocates nothing.
type Authorizer struct {
	superUsers          map[Principal]struct{}
	allowEveryoneIfNone bool
	byType              map[kmsg.ACLResourceType]*typeIndex
}

// typeIndex holds one resource type's ACLs by pattern.
type typeIndex struct {
	literal  map[string][]entry // by exact name, not "*"
	wildcard []entry            // LITERAL "*"
	prefixed map[string][]entry // by prefix
	// prefixLens are the distinct lengths of the prefixes, so that a check looks up only
	// the prefixes of the name that could be in prefixed.
	prefixLens []int
}

// entry is the part of an ACL a check compares once the pattern matched.
type entry struct {
	principal  Principal
	host       string
	op         kmsg.ACLOperation
	permission kmsg.ACLPermissionType
}

// NewAuthorizer indexes acls. superUsers are always allowed; allowEveryoneIfNoACL is
// Kafka's allow.everyone.if.no.acl.found. ACLs that ValidateACL refuses are ignored: they
// cannot have been stored.
func NewAuthorizer(acls []ACL, superUsers []Principal, allowEveryoneIfNoACL bool) *Authorizer {
	a := &Authorizer{
		superUsers:          make(map[Principal]struct{}, len(superUsers)),
		allowEveryoneIfNone: allowEveryoneIfNoACL,
		byType:              map[kmsg.ACLResourceType]*typeIndex{},
	}
	for _, p := range superUsers {
		a.superUsers[p] = struct{}{}
	}
	for _, acl := range acls {
		if ValidateACL(acl) != nil {
			continue
		}
		ti := a.byType[acl.ResourceType]
		if ti == nil {
			ti = &typeIndex{literal: map[string][]entry{}, prefixed: map[string][]entry{}}
			a.byType[acl.ResourceType] = ti
		}
		e := entry{principal: Principal(acl.Principal), host: acl.Host, op: acl.Operation, permission: acl.Permission}
		switch {
		case acl.PatternType == kmsg.ACLResourcePatternTypePrefixed:
			if _, ok := ti.prefixed[acl.ResourceName]; !ok && !containsInt(ti.prefixLens, len(acl.ResourceName)) {
				ti.prefixLens = append(ti.prefixLens, len(acl.ResourceName))
			}
			ti.prefixed[acl.ResourceName] = append(ti.prefixed[acl.ResourceName], e)
		case acl.ResourceName == WildcardResource:
			ti.wildcard = append(ti.wildcard, e)
		default:
			ti.literal[acl.ResourceName] = append(ti.literal[acl.ResourceName], e)
		}
	}
	return a
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// IsSuperUser reports whether p is one of the super users.
func (a *Authorizer) IsSuperUser(p Principal) bool {
	_, ok := a.superUsers[p]
	return ok
}

// Authorize reports whether principal, connected from host, may perform op on the resource
// of type rt named name.
func (a *Authorizer) Authorize(principal Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if _, ok := a.superUsers[principal]; ok {
		return true
	}
	ti := a.byType[rt]
	if ti == nil {
		return a.allowEveryoneIfNone
	}
	var v verdict
	v.scan(ti.literal[name], principal, host, op)
	v.scan(ti.wildcard, principal, host, op)
	for _, n := range ti.prefixLens {
		if n <= len(name) {
			v.scan(ti.prefixed[name[:n]], principal, host, op)
		}
	}
	switch {
	case v.denied:
		return false
	case v.allowed:
		return true
	case !v.found:
		return a.allowEveryoneIfNone
	}
	return false
}

// verdict accumulates what the ACLs that apply to a resource say about one request.
type verdict struct {
	found, denied, allowed bool
}

func (v *verdict) scan(es []entry, principal Principal, host string, op kmsg.ACLOperation) {
	if len(es) > 0 {
		v.found = true
	}
	for i := range es {
		e := &es[i]
		if (e.principal != principal && e.principal != WildcardPrincipal) || (e.host != host && e.host != WildcardHost) {
			continue
		}
		switch e.permission {
		case kmsg.ACLPermissionTypeDeny:
			if e.op == op || e.op == kmsg.ACLOperationAll {
				v.denied = true
			}
		case kmsg.ACLPermissionTypeAllow:
			if implies(e.op, op) {
				v.allowed = true
			}
		}
	}
}

// implies reports whether an ALLOW of granted allows op, by Kafka's implication rules.
func implies(granted, op kmsg.ACLOperation) bool {
	if granted == op || granted == kmsg.ACLOperationAll {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch granted {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return granted == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// ErrInvalidACL is wrapped by every error ValidateACL returns.
var ErrInvalidACL = errors.New("invalid ACL")

// ValidateACL checks that acl is one CreateAcls may store, with Kafka's messages: a
// resource type Cairn protects (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID), a LITERAL or
// PREFIXED pattern with a non-empty name (the CLUSTER's is "kafka-cluster"), a principal
// "Type:name", a host that is "*" or an IP address, and a concrete operation and
// permission (not ANY or UNKNOWN).
func ValidateACL(acl ACL) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidACL, fmt.Sprintf(format, args...))
	}
	switch acl.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId:
	default:
		return bad("resource type %s (%d) is not one of TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID", acl.ResourceType, int8(acl.ResourceType))
	}
	switch acl.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
	default:
		return bad("pattern type %s (%d) is not LITERAL or PREFIXED", acl.PatternType, int8(acl.PatternType))
	}
	if acl.ResourceName == "" {
		return bad("resource name must not be empty")
	}
	if acl.ResourceType == kmsg.ACLResourceTypeCluster && acl.ResourceName != "kafka-cluster" {
		return bad("the only valid name for the CLUSTER resource is kafka-cluster, not %q", acl.ResourceName)
	}
	if err := ValidatePrincipal(acl.Principal); err != nil {
		return bad("%v", err)
	}
	if acl.Host != WildcardHost && net.ParseIP(acl.Host) == nil {
		return bad("host %q is neither * nor an IP address", acl.Host)
	}
	if acl.Operation <= kmsg.ACLOperationAny || acl.Operation > kmsg.ACLOperationDescribeTokens {
		return bad("operation %s (%d) is not a concrete operation", acl.Operation, int8(acl.Operation))
	}
	if acl.Permission != kmsg.ACLPermissionTypeAllow && acl.Permission != kmsg.ACLPermissionTypeDeny {
		return bad("permission type %s (%d) is not ALLOW or DENY", acl.Permission, int8(acl.Permission))
	}
	return nil
}

// ValidatePrincipal checks Kafka's "Type:name" form (SecurityUtils.parseKafkaPrincipal):
// both parts non-empty.
func ValidatePrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("principal %q is not of the form Type:name (for example User:alice)", p)
	}
	return nil
}

// ParseSuperUsers parses Kafka's super.users: principals separated by ";" ("User:a;User:b"),
// blanks around each ignored.
func ParseSuperUsers(v string) ([]Principal, error) {
	var out []Principal
	for _, s := range strings.Split(v, ";") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if err := ValidatePrincipal(s); err != nil {
			return nil, err
		}
		out = append(out, Principal(s))
	}
	return out, nil
}
