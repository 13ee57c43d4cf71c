package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/security"
)

// Authorization from the controller's applied state: the ACLs and the cluster properties
// authorizer.class.name, super.users and allow.everyone.if.no.acl.found. Every broker
// decides from its own replica, so a check needs no round trip; the authorizer is rebuilt
// only when the state's authorization generation moves (an ACL or cluster config change,
// or a restored snapshot), so a check is an atomic load and a few map lookups.

// authzCache is the authorizer of one generation of one controller state.
type authzCache struct {
	state   *controller.State
	gen     uint64
	enabled bool
	a       *security.Authorizer
}

// authorizer returns the current authorizer, rebuilding it when the state moved on. Two
// requests that race to rebuild build equal authorizers; either may be kept.
func (b *Broker) authorizer() *authzCache {
	st := b.state()
	gen := st.AuthzGeneration()
	if c := b.authz.Load(); c != nil && c.state == st && c.gen == gen {
		return c
	}
	cfg := config.ResolveCluster(st.ClusterConfig())
	supers, err := security.ParseSuperUsers(cfg.SuperUsers)
	if err != nil {
		// config validated super.users before it was stored; an unreadable value
		// grants no one anything rather than everything.
		supers = nil
	}
	c := &authzCache{state: st, gen: gen, enabled: cfg.AuthorizerEnabled,
		a: security.NewAuthorizer(st.ACLs(), supers, cfg.AllowEveryoneIfNoACLFound)}
	b.authz.Store(c)
	return c
}

// AuthorizationEnabled reports whether requests are checked against ACLs: whether the
// cluster property authorizer.class.name is set.
func (b *Broker) AuthorizationEnabled() bool { return b.authorizer().enabled }

// Authorize reports whether principal, connected from host, may perform op on the
// resource of type rt named name. With authorization off everything is allowed.
func (b *Broker) Authorize(principal security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	c := b.authorizer()
	return !c.enabled || c.a.Authorize(principal, host, op, rt, name)
}

// ACLs lists every ACL, in creation order, as every broker's replica holds them.
func (b *Broker) ACLs() []security.ACL { return b.state().ACLs() }

// DescribeACLs lists the ACLs that filter matches.
func (b *Broker) DescribeACLs(filter security.ACLFilter) []security.ACL {
	var out []security.ACL
	for _, a := range b.state().ACLs() {
		if filter.Matches(a) {
			out = append(out, a)
		}
	}
	return out
}

// CreateACLs stores acls, which the caller validated one by one (security.ValidateACL) to
// answer each creation; creating an existing ACL succeeds and changes nothing. Large
// batches go as several commands of at most controller.MaxACLsPerCommand.
func (b *Broker) CreateACLs(acls []security.ACL) *Error {
	for len(acls) > 0 {
		n := min(len(acls), controller.MaxACLsPerCommand)
		if _, err := b.propose(controller.CreateACLs{ACLs: acls[:n]}); err != nil {
			return err
		}
		acls = acls[n:]
	}
	return nil
}

// DeleteACLs removes every ACL one of filters matches and returns, for each filter, the
// ACLs it matched (always one list per filter).
func (b *Broker) DeleteACLs(filters []security.ACLFilter) ([][]security.ACL, *Error) {
	var out [][]security.ACL
	for len(filters) > 0 {
		n := min(len(filters), controller.MaxACLsPerCommand)
		res, err := b.propose(controller.DeleteACLs{Filters: filters[:n]})
		if err != nil {
			return nil, err
		}
		deleted := res.DeletedACLs
		if deleted == nil {
			// Forwarded to the controller leader, the proposal came back with its index
			// only; this broker's replica applied the same entry and kept its result.
			deleted, _ = b.state().DeletedACLsAt(res.Index)
		}
		if len(deleted) != n {
			return nil, errorf(kerr.UnknownServerError, "the ACLs were deleted, but what each filter matched is no longer known")
		}
		out = append(out, deleted...)
		filters = filters[n:]
	}
	return out, nil
}

// AuthorizeByResourceType reports whether principal may perform op on some resource of
// type rt (kafka.ResourceTypeAuthorizer), for InitProducerId's "WRITE on any topic".
func (b *Broker) AuthorizeByResourceType(principal security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	c := b.authorizer()
	return !c.enabled || c.a.AuthorizeByResourceType(principal, host, op, rt)
}
