package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/security"
)

// Requester is the client a produce came from, as ACLs match it: its principal and the IP
// address it connected from. A forwarded produce carries it to the leader.
type Requester struct {
	Principal security.Principal
	Host      string
}

// forwardedRequester is who a leader takes a forwarded produce to be from: the requester it
// carries, or, for a v1 request without one, ANONYMOUS from an unknown host (which only an
// ACL for any host matches).
func forwardedRequester(req forwardRequest) Requester {
	if req.requester == nil {
		return Requester{Principal: security.Anonymous}
	}
	return *req.requester
}

// requesterToForward is the requester a forwarded produce carries: the client, while
// authorization is on; none (the v1 message, which a broker of the previous release still
// reads) while it is off, when the leader has nothing to check.
func requesterToForward(a produceAuthorizer, r Requester) *Requester {
	if !a.AuthorizationEnabled() {
		return nil
	}
	return &r
}

// produceAuthorizer is what the leader's re-check asks; *Broker implements it, and tests
// give it a table.
type produceAuthorizer interface {
	AuthorizationEnabled() bool
	Authorize(principal security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
}

// authorizeForwarded is the leader's own check of a forwarded produce: WRITE on its topic
// for the client that sent it. The forwarding broker checked too, but a follower must
// never be a way around an ACL: it may be of another release, or its view of the ACLs
// behind the leader's. denied is true, with the answer to send back, when it may not.
func authorizeForwarded(a produceAuthorizer, req forwardRequest) (res partition.ProduceResult, denied bool) {
	if a == nil || !a.AuthorizationEnabled() {
		return res, false
	}
	r := forwardedRequester(req)
	if a.Authorize(r.Principal, r.Host, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, req.topic) {
		return res, false
	}
	return produceFailed(kerr.TopicAuthorizationFailed, string(r.Principal)+" may not write to topic "+req.topic), true
}
