package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/group"
)

// The checks that the group and admin APIs share, so that each handler's own check stays
// one line. Every one of them answers true while authorization is off.

// authorizedQuietly is authorized without counting or logging a denial: for a broad check
// whose refusal only means a narrower one follows (CREATE on the cluster, then on each
// topic), which Kafka makes with logIfDenied=false.
func (s *Server) authorizedQuietly(ctx context.Context, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	a := s.authorizer()
	return a == nil || a.Authorize(principalOf(ctx), hostOf(ctx), op, rt, name)
}

// authorizedGroup is op on the consumer group named id.
func (s *Server) authorizedGroup(ctx context.Context, op kmsg.ACLOperation, id string) bool {
	return s.authorized(ctx, op, kmsg.ACLResourceTypeGroup, id)
}

// authorizedTopic is op on the topic named name.
func (s *Server) authorizedTopic(ctx context.Context, op kmsg.ACLOperation, name string) bool {
	return s.authorized(ctx, op, kmsg.ACLResourceTypeTopic, name)
}

// authorizedCluster is op on the one CLUSTER resource.
func (s *Server) authorizedCluster(ctx context.Context, op kmsg.ACLOperation) bool {
	return s.authorized(ctx, op, kmsg.ACLResourceTypeCluster, ClusterResourceName)
}

// authorizedTopicOrCluster is op on the cluster, which covers every topic, or else on the
// topic itself: how Kafka checks CREATE for CreateTopics and DELETE for DeleteTopics. The
// cluster check is quiet, since most principals are granted per topic.
func (s *Server) authorizedTopicOrCluster(ctx context.Context, op kmsg.ACLOperation, topic string) bool {
	return s.authorizedQuietly(ctx, op, kmsg.ACLResourceTypeCluster, ClusterResourceName) || s.authorizedTopic(ctx, op, topic)
}

// authorizedTopics sorts the names into those the principal may perform op on, asking
// once per distinct name.
func (s *Server) authorizedTopics(ctx context.Context, op kmsg.ACLOperation, names []string) map[string]bool {
	ok := make(map[string]bool, len(names))
	for _, n := range names {
		if _, asked := ok[n]; !asked {
			ok[n] = s.authorizedTopic(ctx, op, n)
		}
	}
	return ok
}

// configResourceDenial is the error for a config resource the principal may not perform
// op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on, or nil: topics are checked by name, broker
// and broker-logger resources against the cluster. Other types are left to the handler,
// which refuses them as invalid.
func (s *Server) configResourceDenial(ctx context.Context, op kmsg.ACLOperation, rt kmsg.ConfigResourceType, name string) *kerr.Error {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		if !s.authorizedTopic(ctx, op, name) {
			return kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !s.authorizedCluster(ctx, op) {
			return kerr.ClusterAuthorizationFailed
		}
	}
	return nil
}

// commitTopicNames lists the topics an OffsetCommit names.
func commitTopicNames(req *kmsg.OffsetCommitRequest) []string {
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		names[i] = t.Topic
	}
	return names
}

// offsetCommitRefused answers an OffsetCommit that commits nothing: every partition gets
// groupErr, or, with groupErr nil, TOPIC_AUTHORIZATION_FAILED where slot is -1 (all of
// them, when the handler calls this).
func offsetCommitRefused(req *kmsg.OffsetCommitRequest, groupErr *kerr.Error, slot []int) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		code := errCode(groupErr)
		if groupErr == nil && slot[i] < 0 {
			code = kerr.TopicAuthorizationFailed.Code
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// splitFetchTopics parts the topics an OffsetFetch names into those the principal may
// DESCRIBE, which are fetched, and the rest, which are answered
// TOPIC_AUTHORIZATION_FAILED. A nil list (every committed offset) stays nil; the offsets
// fetched for it are filtered by describableOffsets instead, so that a group's offsets do
// not reveal topics the principal cannot see.
func (s *Server) splitFetchTopics(ctx context.Context, topics []group.FetchTopic) (allowed, denied []group.FetchTopic) {
	if topics == nil {
		return nil, nil
	}
	allowed = []group.FetchTopic{}
	for _, t := range topics {
		if s.authorizedTopic(ctx, kmsg.ACLOperationDescribe, t.Topic) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	return allowed, denied
}

// describableOffsets keeps the fetched offsets of topics the principal may DESCRIBE,
// asking once per topic.
func (s *Server) describableOffsets(ctx context.Context, fs []group.FetchedOffset) []group.FetchedOffset {
	if s.authorizer() == nil {
		return fs
	}
	ok := map[string]bool{}
	out := fs[:0:0]
	for _, f := range fs {
		allowed, asked := ok[f.Topic]
		if !asked {
			// Quiet: leaving a topic out is the answer, not a refusal the client sees.
			allowed = s.authorizedQuietly(ctx, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, f.Topic)
			ok[f.Topic] = allowed
		}
		if allowed {
			out = append(out, f)
		}
	}
	return out
}

// alterAssignmentsRefused answers an AlterPartitionReassignments from a principal without
// ALTER on the cluster: the error at the top and on every partition named, as Kafka's
// error response has it, and nothing moved.
func alterAssignmentsRefused(req *kmsg.AlterPartitionAssignmentsRequest, resp *kmsg.AlterPartitionAssignmentsResponse) *kmsg.AlterPartitionAssignmentsResponse {
	denied := kerr.ClusterAuthorizationFailed
	resp.ErrorCode, resp.ErrorMessage = denied.Code, strPtr(denied.Message)
	for _, rt := range req.Topics {
		out := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		out.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			po := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			po.Partition, po.ErrorCode, po.ErrorMessage = rp.Partition, denied.Code, strPtr(denied.Message)
			out.Partitions = append(out.Partitions, po)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

// describeScramRefused answers a DescribeUserScramCredentials from a principal without
// DESCRIBE on the cluster: the error at the top and on each user named, no credentials.
func describeScramRefused(req *kmsg.DescribeUserSCRAMCredentialsRequest, resp *kmsg.DescribeUserSCRAMCredentialsResponse) *kmsg.DescribeUserSCRAMCredentialsResponse {
	denied := kerr.ClusterAuthorizationFailed
	resp.ErrorCode, resp.ErrorMessage = denied.Code, strPtr(denied.Message)
	for _, u := range req.Users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode, r.ErrorMessage = u.Name, denied.Code, strPtr(denied.Message)
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// alterScramRefused answers an AlterUserScramCredentials from a principal without ALTER
// on the cluster: every user named, once, gets the error, and no credential changes.
func alterScramRefused(req *kmsg.AlterUserSCRAMCredentialsRequest, resp *kmsg.AlterUserSCRAMCredentialsResponse) *kmsg.AlterUserSCRAMCredentialsResponse {
	denied := kerr.ClusterAuthorizationFailed
	seen := map[string]bool{}
	add := func(user string) {
		if seen[user] {
			return
		}
		seen[user] = true
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode, r.ErrorMessage = user, denied.Code, strPtr(denied.Message)
		resp.Results = append(resp.Results, r)
	}
	for _, d := range req.Deletions {
		add(d.Name)
	}
	for _, u := range req.Upsertions {
		add(u.Name)
	}
	return resp
}
