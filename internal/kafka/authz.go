package kafka

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

// Authorizer decides what a principal may do. The broker implements it with the ACLs in
// the controller's log; the Kafka layer only asks, once per resource a request names.
type Authorizer interface {
	// AuthorizationEnabled is false while no authorizer is configured
	// (authorizer.class.name empty): then every request is allowed, as in Kafka.
	AuthorizationEnabled() bool
	// Authorize reports whether principal, connected from host (an IP address), may
	// perform op on the resource of type rt named name (the cluster's name is
	// "kafka-cluster").
	Authorize(principal security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
}

// ClusterResourceName is the name of the one CLUSTER resource, as Kafka's ACLs name it.
const ClusterResourceName = "kafka-cluster"

// authState is the server's authorizer and its denial count.
type authState struct {
	authz  atomic.Pointer[Authorizer]
	denied atomic.Int64
}

// SetAuthorizer makes the server ask a before serving each request. Until it is called,
// or while a reports AuthorizationEnabled false, everything is allowed.
func (s *Server) SetAuthorizer(a Authorizer) { s.auth.authz.Store(&a) }

// AuthorizationDenials counts the operations refused for want of an ACL, for metrics.
func (s *Server) AuthorizationDenials() int64 { return s.auth.denied.Load() }

// authorizer returns the configured authorizer, or nil when authorization is off.
func (s *Server) authorizer() Authorizer {
	p := s.auth.authz.Load()
	if p == nil || *p == nil || !(*p).AuthorizationEnabled() {
		return nil
	}
	return *p
}

// authorized reports whether the request's principal may perform op on the resource. A
// denial is counted and logged at debug level: a client without an ACL retries, and a
// warning per attempt would flood the log.
func (s *Server) authorized(ctx context.Context, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	a := s.authorizer()
	if a == nil {
		return true
	}
	p, host := principalOf(ctx), hostOf(ctx)
	if a.Authorize(p, host, op, rt, name) {
		return true
	}
	s.auth.denied.Add(1)
	s.lg.Debug("request denied", "principal", string(p), "host", host, "operation", op.String(), "resource_type", rt.String(), "resource", name)
	return false
}

// authorizedOperations is the bit field of ops (1<<op) that the request's principal may
// perform on the resource, as Metadata, DescribeCluster and DescribeGroups report it when
// asked. With authorization off every op in ops is allowed.
func (s *Server) authorizedOperations(ctx context.Context, rt kmsg.ACLResourceType, name string, ops []kmsg.ACLOperation) int32 {
	a := s.authorizer()
	p, host := principalOf(ctx), hostOf(ctx)
	var bits int32
	for _, op := range ops {
		// A question about what is allowed is not an attempt: it is neither counted nor
		// logged as a denial.
		if a == nil || a.Authorize(p, host, op, rt, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// The operations each resource type defines, as Kafka's authorized-operations fields
// enumerate them.
var (
	topicOperations = []kmsg.ACLOperation{
		kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
	}
	groupOperations = []kmsg.ACLOperation{
		kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
	}
	clusterOperations = []kmsg.ACLOperation{
		kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
		kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
	}
)

// hostOf is the client's IP address as ACLs match it ("127.0.0.1"), without the slash
// that Kafka's group APIs put before it.
func hostOf(ctx context.Context) string {
	return strings.TrimPrefix(clientHost(ctx), "/")
}
