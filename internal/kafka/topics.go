package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/config"
)

func handleCreateTopics(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := make(map[string]int)
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		out := kmsg.NewCreateTopicsResponseTopic()
		out.Topic = rt.Topic
		out.NumPartitions, out.ReplicationFactor = -1, -1
		fail := func(code *kerr.Error, msg string) {
			out.ErrorCode, out.ErrorMessage = code.Code, strPtr(msg)
			resp.Topics = append(resp.Topics, out)
		}
		if seen[rt.Topic] > 1 {
			fail(kerr.InvalidRequest, "topic appears more than once in the request")
			continue
		}
		if !s.authorizedTopicOrCluster(ctx, kmsg.ACLOperationCreate, rt.Topic) {
			fail(kerr.TopicAuthorizationFailed, "Authorization failed.")
			continue
		}
		partitions, rf := rt.NumPartitions, rt.ReplicationFactor
		var assignment [][]int32
		if len(rt.ReplicaAssignment) > 0 {
			if partitions != -1 || rf != -1 {
				fail(kerr.InvalidRequest, "give either a replica assignment or a partition count and replication factor, not both")
				continue
			}
			if msg := checkAssignment(s, rt.ReplicaAssignment); msg != "" {
				fail(kerr.InvalidReplicaAssignment, msg)
				continue
			}
			partitions, rf = int32(len(rt.ReplicaAssignment)), int16(len(rt.ReplicaAssignment[0].Replicas))
			assignment = make([][]int32, partitions)
			for _, ra := range rt.ReplicaAssignment {
				assignment[ra.Partition] = ra.Replicas
			}
		}
		configs := make(map[string]string, len(rt.Configs))
		bad := ""
		for _, c := range rt.Configs {
			if c.Value == nil {
				bad = "config " + c.Name + " has a null value"
				break
			}
			configs[c.Name] = *c.Value
		}
		if bad != "" {
			fail(kerr.InvalidConfig, bad)
			continue
		}
		info, err := s.b.CreateTopicOn(rt.Topic, partitions, rf, assignment, configs, req.ValidateOnly)
		if err != nil {
			fail(err.Code, err.Msg)
			continue
		}
		out.TopicID = info.ID
		out.NumPartitions, out.ReplicationFactor = info.Partitions, info.ReplicationFactor
		if req.Version >= 5 && !s.authorizedQuietly(ctx, kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, rt.Topic) {
			// Created, but its configs are not the principal's to read.
			out.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if req.Version >= 5 {
			cluster := s.b.ClusterConfigOverrides()
			for _, v := range config.DescribeTopic(configs, cluster) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = v.Name, strPtr(v.Value), v.ReadOnly, int8(v.Source), v.Sensitive
				out.Configs = append(out.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, out)
	}
	return respond(resp)
}

// checkAssignment accepts a manual assignment only where every replica is a live broker,
// with the same replica count for every partition and no broker twice in one partition.
func checkAssignment(s *Server, as []kmsg.CreateTopicsRequestTopicReplicaAssignment) string {
	live := map[int32]bool{}
	for _, bi := range s.b.Brokers() {
		live[bi.NodeID] = true
	}
	for i, a := range as {
		if a.Partition != int32(i) {
			return "replica assignment must list partitions 0..n-1 in order"
		}
		if len(a.Replicas) == 0 || len(a.Replicas) != len(as[0].Replicas) {
			return "every partition needs the same, non-zero number of replicas"
		}
		dup := map[int32]bool{}
		for _, r := range a.Replicas {
			if !live[r] {
				return "replica assignment names a broker that does not exist"
			}
			if dup[r] {
				return "replica assignment names a broker twice for one partition"
			}
			dup[r] = true
		}
	}
	return ""
}

func handleDeleteTopics(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	names := req.TopicNames
	var ids [][16]byte
	if req.Version >= 6 {
		names = nil
		for _, t := range req.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			} else {
				ids = append(ids, t.TopicID)
			}
		}
	}
	// DELETE on the cluster covers every topic. Otherwise a topic the principal may not
	// describe is refused before its existence is looked at, and one named by id is not
	// even named back, so that the answers reveal nothing about topics it cannot see.
	clusterDelete := s.authorizedQuietly(ctx, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeCluster, ClusterResourceName)
	mayDelete := func(name string) (describe, del bool) {
		if clusterDelete {
			return true, true
		}
		if !s.authorizedTopic(ctx, kmsg.ACLOperationDescribe, name) {
			return false, false
		}
		return true, s.authorizedTopic(ctx, kmsg.ACLOperationDelete, name)
	}
	for _, id := range ids {
		out := kmsg.NewDeleteTopicsResponseTopic()
		out.TopicID = id
		name := ""
		for _, ti := range s.b.Topics() {
			if ti.ID == id {
				name = ti.Name
			}
		}
		if name == "" {
			out.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, out)
			continue
		}
		describe, del := mayDelete(name)
		if describe {
			out.Topic = strPtr(name)
		}
		if !del {
			out.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, out)
			continue
		}
		if err := s.b.DeleteTopic(name); err != nil {
			out.ErrorCode, out.ErrorMessage = err.Code.Code, strPtr(err.Msg)
		}
		resp.Topics = append(resp.Topics, out)
	}
	for _, name := range names {
		out := kmsg.NewDeleteTopicsResponseTopic()
		out.Topic = strPtr(name)
		describe, del := mayDelete(name)
		if !describe {
			out.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, out)
			continue
		}
		if _, exists := s.b.Topic(name); exists && !del {
			out.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, out)
			continue
		}
		if info, ok := s.b.Topic(name); ok {
			out.TopicID = info.ID
		}
		if err := s.b.DeleteTopic(name); err != nil {
			out.ErrorCode, out.ErrorMessage = err.Code.Code, strPtr(err.Msg)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return respond(resp)
}

func handleCreatePartitions(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, rt := range req.Topics {
		out := kmsg.NewCreatePartitionsResponseTopic()
		out.Topic = rt.Topic
		var err *broker.Error
		if !s.authorizedTopic(ctx, kmsg.ACLOperationAlter, rt.Topic) {
			err = &broker.Error{Code: kerr.TopicAuthorizationFailed, Msg: "Authorization failed."}
		} else if rt.Assignment != nil && int32(len(rt.Assignment)) != rt.Count-currentPartitions(s, rt.Topic) {
			err = &broker.Error{Code: kerr.InvalidReplicaAssignment, Msg: "the assignment must list exactly the new partitions"}
		} else {
			err = s.b.CreatePartitions(rt.Topic, rt.Count, req.ValidateOnly)
		}
		if err != nil {
			out.ErrorCode, out.ErrorMessage = err.Code.Code, strPtr(err.Msg)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return respond(resp)
}

func currentPartitions(s *Server, name string) int32 {
	info, _ := s.b.Topic(name)
	return info.Partitions
}
