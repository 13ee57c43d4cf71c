package kafka

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

// DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), v0-v3, with Kafka's semantics:
//
//   - Each is gated on the CLUSTER resource, as Kafka does: DESCRIBE for DescribeAcls,
//     ALTER for the other two; a denial answers CLUSTER_AUTHORIZATION_FAILED (for every
//     creation or filter) and changes nothing.
//   - A creation is checked on its own (security.ValidateACL): an unknown resource type, a
//     pattern type other than LITERAL or PREFIXED, a principal without its type, a host that
//     is not an IP address or "*" are INVALID_REQUEST with a message for that creation; the
//     valid ones are stored together. Creating an existing ACL succeeds.
//   - A filter with an UNKNOWN field is INVALID_REQUEST (the whole DescribeAcls, or that
//     filter of a DeleteAcls); v0, which has no pattern type, filters LITERAL patterns.
//   - DeleteAcls answers, per filter, the ACLs it removed.

func aclOf(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) security.ACL {
	return security.ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

// aclErrorMessage strips the sentinel's prefix: the client is told what is wrong with
// its ACL, not that it is invalid twice.
func aclErrorMessage(err error) *string {
	msg := strings.TrimPrefix(err.Error(), security.ErrInvalidACL.Error()+": ")
	return &msg
}

func handleDescribeACLs(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if !s.authorized(ctx, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, strPtr("DescribeAcls needs DESCRIBE on the cluster")
		return respond(resp)
	}
	f := security.ACLFilter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if err := security.ValidateFilter(f); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, aclErrorMessage(err)
		return respond(resp)
	}
	type resource struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}
	index := map[resource]int{}
	for _, a := range s.b.DescribeACLs(f) {
		key := resource{a.ResourceType, a.ResourceName, a.PatternType}
		i, ok := index[key]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = a.ResourceType, a.ResourceName, a.PatternType
			resp.Resources = append(resp.Resources, r)
			i = len(resp.Resources) - 1
			index[key] = i
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = a.Principal, a.Host, a.Operation, a.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, e)
	}
	return respond(resp)
}

func handleCreateACLs(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
	}
	if !s.authorized(ctx, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.ClusterAuthorizationFailed.Code, strPtr("CreateAcls needs ALTER on the cluster")
		}
		return respond(resp)
	}
	var valid []security.ACL
	var validAt []int
	for i, c := range req.Creations {
		a := aclOf(c.ResourceType, c.ResourceName, c.ResourcePatternType, c.Principal, c.Host, c.Operation, c.PermissionType)
		if err := security.ValidateACL(a); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, aclErrorMessage(err)
			continue
		}
		valid, validAt = append(valid, a), append(validAt, i)
	}
	if len(valid) == 0 {
		return respond(resp)
	}
	if err := s.b.CreateACLs(valid); err != nil {
		for _, i := range validAt {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = err.Code.Code, strPtr(err.Msg)
		}
	}
	return respond(resp)
}

func handleDeleteACLs(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	if !s.authorized(ctx, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResourceName) {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.ClusterAuthorizationFailed.Code, strPtr("DeleteAcls needs ALTER on the cluster")
		}
		return respond(resp)
	}
	var filters []security.ACLFilter
	var validAt []int
	for i, rf := range req.Filters {
		f := security.ACLFilter{ResourceType: rf.ResourceType, ResourceName: rf.ResourceName, PatternType: rf.ResourcePatternType,
			Principal: rf.Principal, Host: rf.Host, Operation: rf.Operation, Permission: rf.PermissionType}
		if err := security.ValidateFilter(f); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, aclErrorMessage(err)
			continue
		}
		filters, validAt = append(filters, f), append(validAt, i)
	}
	if len(filters) == 0 {
		return respond(resp)
	}
	deleted, err := s.b.DeleteACLs(filters)
	for j, i := range validAt {
		if err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = err.Code.Code, strPtr(err.Msg)
			continue
		}
		if j >= len(deleted) { // the broker answers one list per filter; never index past it
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.UnknownServerError.Code, strPtr("no result for this filter")
			continue
		}
		resp.Results[i].MatchingACLs = matchingACLs(deleted[j])
	}
	return respond(resp)
}

func matchingACLs(acls []security.ACL) []kmsg.DeleteACLsResponseResultMatchingACL {
	out := make([]kmsg.DeleteACLsResponseResultMatchingACL, 0, len(acls))
	for _, a := range acls {
		m := kmsg.NewDeleteACLsResponseResultMatchingACL()
		m.ResourceType, m.ResourceName, m.ResourcePatternType = a.ResourceType, a.ResourceName, a.PatternType
		m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, a.Operation, a.Permission
		out = append(out, m)
	}
	return out
}
