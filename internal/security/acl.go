package security

import "github.com/twmb/franz-go/pkg/kmsg"

// ACL is one Kafka access control entry bound to a resource pattern, with Kafka's own
// numeric codes (the ones CreateAcls carries), so that what a client sent is what is
// stored and described back.
//
// ResourceType is TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID; PatternType LITERAL or
// PREFIXED (a LITERAL ResourceName of "*" is the wildcard); Principal "User:name" or
// "User:*"; Host an IP address or "*"; Permission ALLOW or DENY.
type ACL struct {
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	ResourceName string                      `json:"resource_name"`
	PatternType  kmsg.ACLResourcePatternType `json:"pattern_type"`
	Principal    string                      `json:"principal"`
	Host         string                      `json:"host"`
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
}
