package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

// AuthorizationEnabled reports whether requests are checked against ACLs. Until an
// authorizer can be configured, nothing is checked.
func (b *Broker) AuthorizationEnabled() bool { return false }

// Authorize reports whether principal, connected from host, may perform op on the
// resource of type rt named name. With authorization off everything is allowed.
func (b *Broker) Authorize(principal security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return true
}
