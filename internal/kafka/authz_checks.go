package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/security"
)

// topicChecks answers one request's question "may the principal perform op on this
// topic?", asking the authorizer once per topic however many partitions the request names
// (as Kafka's filterByAuthorized does), so that a denial is counted and logged once.
type topicChecks struct {
	s    *Server
	ctx  context.Context
	op   kmsg.ACLOperation
	off  bool // authorization is off: no map on the produce path
	seen map[string]bool
}

func (s *Server) topicChecks(ctx context.Context, op kmsg.ACLOperation) *topicChecks {
	return &topicChecks{s: s, ctx: ctx, op: op, off: s.authorizer() == nil}
}

func (c *topicChecks) allowed(topic string) bool {
	if c.off {
		return true
	}
	if ok, done := c.seen[topic]; done {
		return ok
	}
	ok := c.s.authorized(c.ctx, c.op, kmsg.ACLResourceTypeTopic, topic)
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[topic] = ok
	return ok
}

// ResourceTypeAuthorizer is an Authorizer that can also say whether a principal may
// perform op on some resource of a type, whichever one (Kafka's authorizeByResourceType):
// whether any ACL, literal or prefixed, would allow it and none denies it outright.
type ResourceTypeAuthorizer interface {
	AuthorizeByResourceType(principal security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool
}

// mayWriteIdempotently is InitProducerId's check without a transactional id: IDEMPOTENT_WRITE
// on the cluster, or, since KIP-679 made idempotence the producers' default, WRITE on any
// topic. An authorizer that cannot answer "any topic" is asked about each existing topic,
// which misses a prefixed ACL for topics not created yet: such a producer is refused until
// the authorizer implements ResourceTypeAuthorizer.
func (s *Server) mayWriteIdempotently(ctx context.Context) bool {
	a := s.authorizer()
	if a == nil {
		return true
	}
	if a.Authorize(principalOf(ctx), hostOf(ctx), kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		return true
	}
	if rta, ok := a.(ResourceTypeAuthorizer); ok {
		if rta.AuthorizeByResourceType(principalOf(ctx), hostOf(ctx), kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
			return true
		}
	} else {
		for _, t := range s.b.Topics() {
			if a.Authorize(principalOf(ctx), hostOf(ctx), kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, t.Name) {
				return true
			}
		}
	}
	s.auth.denied.Add(1)
	s.lg.Debug("request denied", "principal", string(principalOf(ctx)), "host", hostOf(ctx), "operation", kmsg.ACLOperationIdempotentWrite.String(), "resource_type", kmsg.ACLResourceTypeCluster.String(), "resource", ClusterResourceName)
	return false
}

// mayCreateTopic is the check for creating a topic by naming it (Metadata's auto-creation):
// CREATE on the cluster, or on the topic itself.
func (s *Server) mayCreateTopic(ctx context.Context, name string) bool {
	a := s.authorizer()
	if a == nil {
		return true
	}
	// The cluster is asked without counting a denial: a topic ACL may still allow it.
	if a.Authorize(principalOf(ctx), hostOf(ctx), kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		return true
	}
	return s.authorized(ctx, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, name)
}

// clusterAuthorizedOperations is ClusterAuthorizedOperations as Metadata and DescribeCluster
// report it when asked: the cluster operations the principal may perform, or none at all
// when it may not describe the cluster (as Kafka).
func (s *Server) clusterAuthorizedOperations(ctx context.Context) int32 {
	if !s.authorized(ctx, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		return 0
	}
	return s.authorizedOperations(ctx, kmsg.ACLResourceTypeCluster, ClusterResourceName, clusterOperations)
}

// The broker answers both questions from its replica of the controller's ACLs.
var (
	_ Authorizer             = (*broker.Broker)(nil)
	_ ResourceTypeAuthorizer = (*broker.Broker)(nil)
)
