package security

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACLFilter selects ACLs as DescribeAcls and DeleteAcls do (Kafka's AclBindingFilter). A
// nil name, principal or host matches any; ResourceType, Operation and Permission ANY
// match any. PatternType ANY matches every pattern type with an equal name; MATCH matches
// the patterns that would apply to a resource of that name (the literal name, the literal
// wildcard "*", and every prefix of it); LITERAL and PREFIXED match that type and an equal
// name. Principal and host compare exactly: a filter for User:alice does not select User:*.
type ACLFilter struct {
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	ResourceName *string                     `json:"resource_name,omitempty"`
	PatternType  kmsg.ACLResourcePatternType `json:"pattern_type"`
	Principal    *string                     `json:"principal,omitempty"`
	Host         *string                     `json:"host,omitempty"`
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
}

// MatchAll is the filter that selects every ACL.
func MatchAll() ACLFilter {
	return ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
}

// ValidateFilter refuses what Kafka refuses in a filter: UNKNOWN in any enum field.
func ValidateFilter(f ACLFilter) error {
	switch {
	case f.ResourceType <= kmsg.ACLResourceTypeUnknown || f.ResourceType > kmsg.ACLResourceTypeUser:
		return fmt.Errorf("%w: filter resource type %d is unknown", ErrInvalidACL, int8(f.ResourceType))
	case f.PatternType <= kmsg.ACLResourcePatternTypeUnknown || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("%w: filter pattern type %d is unknown", ErrInvalidACL, int8(f.PatternType))
	case f.Operation <= kmsg.ACLOperationUnknown || f.Operation > kmsg.ACLOperationDescribeTokens:
		return fmt.Errorf("%w: filter operation %d is unknown", ErrInvalidACL, int8(f.Operation))
	case f.Permission <= kmsg.ACLPermissionTypeUnknown || f.Permission > kmsg.ACLPermissionTypeAllow:
		return fmt.Errorf("%w: filter permission type %d is unknown", ErrInvalidACL, int8(f.Permission))
	}
	return nil
}

// Matches reports whether the filter selects acl.
func (f ACLFilter) Matches(acl ACL) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != acl.ResourceType {
		return false
	}
	if !f.matchesPattern(acl) {
		return false
	}
	return (f.Principal == nil || *f.Principal == acl.Principal) &&
		(f.Host == nil || *f.Host == acl.Host) &&
		(f.Operation == kmsg.ACLOperationAny || f.Operation == acl.Operation) &&
		(f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == acl.Permission)
}

// matchesPattern is Kafka's ResourcePatternFilter.matches.
func (f ACLFilter) matchesPattern(acl ACL) bool {
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny, kmsg.ACLResourcePatternTypeMatch:
	default:
		if f.PatternType != acl.PatternType {
			return false
		}
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType != kmsg.ACLResourcePatternTypeMatch {
		return name == acl.ResourceName
	}
	switch acl.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return name == acl.ResourceName || acl.ResourceName == WildcardResource
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, acl.ResourceName)
	}
	return false
}
