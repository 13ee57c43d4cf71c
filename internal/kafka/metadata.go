package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
)

// unrequestedAuthorizedOperations is Kafka's marker for "authorized operations not asked for".
const unrequestedAuthorizedOperations = -2147483648

func handleMetadata(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, bi := range s.b.Brokers() {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = bi.NodeID, bi.Host, bi.Port
		if bi.Rack != "" {
			mb.Rack = strPtr(bi.Rack)
		}
		resp.Brokers = append(resp.Brokers, mb)
	}
	resp.ClusterID = strPtr(s.b.ClusterID())
	resp.ControllerID = s.b.ControllerID()
	resp.AuthorizedOperations = unrequestedAuthorizedOperations
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = s.clusterAuthorizedOperations(ctx)
	}
	topicOps := req.Version >= 8 && req.IncludeTopicAuthorizedOperations
	describable := s.topicChecks(ctx, kmsg.ACLOperationDescribe)

	// v0 asks for every topic with an empty list; v1+ with a null one.
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		// Only the topics the principal may describe, internal ones included: the others
		// are left out rather than answered with an error, as Kafka does.
		for _, info := range s.b.Topics() {
			if describable.allowed(info.Name) {
				resp.Topics = append(resp.Topics, s.metadataTopic(ctx, info, topicOps))
			}
		}
		return respond(resp)
	}
	autoCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		name := *rt.Topic
		if !describable.allowed(name) {
			// Whether or not it exists: a denied client learns nothing of which topics do.
			resp.Topics = append(resp.Topics, topicAuthorizationFailed(name))
			continue
		}
		info, ok := s.b.Topic(name)
		if !ok && autoCreate {
			if !s.mayCreateTopic(ctx, name) {
				resp.Topics = append(resp.Topics, topicAuthorizationFailed(name))
				continue
			}
			if verr := broker.ValidateTopicName(name); verr != nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic, mt.ErrorCode = strPtr(name), verr.Code.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			var cerr *broker.Error
			info, cerr = s.b.AutoCreateTopic(name)
			ok = cerr == nil
		}
		if !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.ErrorCode = strPtr(name), kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, s.metadataTopic(ctx, info, topicOps))
	}
	return respond(resp)
}

func topicAuthorizationFailed(name string) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.ErrorCode = strPtr(name), kerr.TopicAuthorizationFailed.Code
	mt.AuthorizedOperations = unrequestedAuthorizedOperations
	return mt
}

// metadataTopic describes one topic; with ops, it fills in what the principal may do on it.
func (s *Server) metadataTopic(ctx context.Context, info broker.TopicInfo, ops bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = strPtr(info.Name)
	mt.TopicID = info.ID
	mt.IsInternal = info.Internal
	mt.AuthorizedOperations = unrequestedAuthorizedOperations
	if ops {
		mt.AuthorizedOperations = s.authorizedOperations(ctx, kmsg.ACLResourceTypeTopic, info.Name, topicOperations)
	}
	live := map[int32]bool{}
	for _, bi := range s.b.Brokers() {
		live[bi.NodeID] = true
	}
	for i, v := range s.b.PartitionViews(info.Name) {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(i)
		mp.Leader = v.Leader
		mp.LeaderEpoch = v.LeaderEpoch
		if v.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mp.Replicas = append([]int32{}, v.Replicas...)
		mp.ISR = append([]int32{}, v.ISR...)
		mp.OfflineReplicas = []int32{}
		for _, r := range v.Replicas {
			if !live[r] {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

func handleDescribeCluster(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = strPtr("only the brokers endpoint type (1) is served")
		return respond(resp)
	}
	resp.EndpointType = 1
	resp.ClusterID = s.b.ClusterID()
	resp.ControllerID = s.b.ControllerID()
	resp.ClusterAuthorizedOperations = unrequestedAuthorizedOperations
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.clusterAuthorizedOperations(ctx)
	}
	for _, bi := range s.b.Brokers() {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = bi.NodeID, bi.Host, bi.Port
		if bi.Rack != "" {
			rb.Rack = strPtr(bi.Rack)
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	return respond(resp)
}
