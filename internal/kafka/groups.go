package kafka

import (
	"bytes"
	"context"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/group"
)

// The consumer group APIs translate requests into calls on the node's group coordinator
// (internal/group) and its answers back into responses; version differences are resolved
// here. JoinGroup and SyncGroup answer once the rebalance gets that far, which the
// coordinator bounds by the rebalance timeout; everything else answers at once, except
// writes to __consumer_offsets, which answer once they are as durable as acks=-1.

const (
	coordinatorKeyGroup       = 0
	coordinatorKeyTransaction = 1
)

func handleFindCoordinator(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) (nodeID int32, host string, port int32, err *kerr.Error, msg string) {
		switch req.CoordinatorType {
		case coordinatorKeyGroup:
			if !s.authorizedGroup(ctx, kmsg.ACLOperationDescribe, key) {
				return -1, "", -1, kerr.GroupAuthorizationFailed, ""
			}
			bi, kerrv := s.b.GroupCoordinator(key)
			if kerrv != nil {
				return -1, "", -1, kerrv, "the consumer offsets topic is not available yet"
			}
			bi, ok := bi.On(listenerOf(ctx))
			if !ok {
				return -1, "", -1, kerr.CoordinatorNotAvailable, "the group's coordinator has no listener named " + listenerOf(ctx)
			}
			return bi.NodeID, bi.Host, bi.Port, nil, ""
		case coordinatorKeyTransaction:
			if !s.authorized(ctx, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key) {
				return -1, "", -1, kerr.TransactionalIDAuthorizationFailed, ""
			}
			bi, kerrv := s.b.TxnCoordinator(key)
			if kerrv != nil {
				return -1, "", -1, kerrv, "the transaction state topic is not available yet"
			}
			bi, ok := bi.On(listenerOf(ctx))
			if !ok {
				return -1, "", -1, kerr.CoordinatorNotAvailable, "the transaction coordinator has no listener named " + listenerOf(ctx)
			}
			return bi.NodeID, bi.Host, bi.Port, nil, ""
		default:
			return -1, "", -1, kerr.InvalidRequest, "unknown coordinator key type"
		}
	}
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key = key
			var err *kerr.Error
			var msg string
			c.NodeID, c.Host, c.Port, err, msg = find(key)
			c.ErrorCode, c.ErrorMessage = errCode(err), errMsg(err, msg)
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return respond(resp)
	}
	var err *kerr.Error
	var msg string
	resp.NodeID, resp.Host, resp.Port, err, msg = find(req.CoordinatorKey)
	resp.ErrorCode, resp.ErrorMessage = errCode(err), errMsg(err, msg)
	return respond(resp)
}

func handleJoinGroup(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.JoinGroupRequest)
	if !s.authorizedGroup(ctx, kmsg.ACLOperationRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.MemberID, resp.Generation = kerr.GroupAuthorizationFailed.Code, req.MemberID, -1
		if req.Version < 7 {
			resp.Protocol = strPtr("") // not nullable before v7
		}
		return respond(resp)
	}
	jr := group.JoinRequest{
		Group:                  req.Group,
		MemberID:               req.MemberID,
		InstanceID:             req.InstanceID,
		ClientID:               clientID(ctx),
		ClientHost:             clientHost(ctx),
		ProtocolType:           req.ProtocolType,
		SessionTimeout:         time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:       time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		RequireKnownMemberID:   req.Version >= 4,
		SupportsSkipAssignment: req.Version >= 9,
	}
	if req.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	if req.Version < 5 {
		jr.InstanceID = nil
	}
	if req.Reason != nil {
		jr.Reason = *req.Reason
	}
	for _, p := range req.Protocols {
		// Copies: the coordinator keeps these, and must not pin the request's frame.
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)})
	}
	ch := s.b.Groups().Join(jr)
	return func(ctx context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		var r group.JoinResult
		select {
		case r = <-ch:
		case <-ctx.Done():
			r = group.JoinResult{Err: kerr.RebalanceInProgress, MemberID: req.MemberID, Generation: -1}
		}
		resp.ErrorCode = errCode(r.Err)
		resp.Generation = r.Generation
		resp.ProtocolType = r.ProtocolType
		resp.Protocol = r.Protocol
		if req.Version < 7 && resp.Protocol == nil {
			resp.Protocol = strPtr("") // not nullable before v7
		}
		resp.LeaderID = r.Leader
		resp.MemberID = r.MemberID
		resp.SkipAssignment = r.SkipAssignment
		for _, m := range r.Members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.InstanceID, m.Metadata
			resp.Members = append(resp.Members, rm)
		}
		return resp
	}
}

func handleSyncGroup(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.SyncGroupRequest)
	if !s.authorizedGroup(ctx, kmsg.ACLOperationRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode, resp.MemberAssignment = kerr.GroupAuthorizationFailed.Code, []byte{}
		return respond(resp)
	}
	sr := group.SyncRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation}
	if req.Version >= 3 {
		sr.InstanceID = req.InstanceID
	}
	if req.Version >= 5 {
		sr.ProtocolType, sr.Protocol = req.ProtocolType, req.Protocol
	}
	for _, a := range req.GroupAssignment {
		sr.Assignments = append(sr.Assignments, group.Assignment{MemberID: a.MemberID, Assignment: bytes.Clone(a.MemberAssignment)})
	}
	ch := s.b.Groups().Sync(sr)
	return func(ctx context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		var r group.SyncResult
		select {
		case r = <-ch:
		case <-ctx.Done():
			r = group.SyncResult{Err: kerr.RebalanceInProgress}
		}
		resp.ErrorCode = errCode(r.Err)
		resp.ProtocolType, resp.Protocol = r.ProtocolType, r.Protocol
		resp.MemberAssignment = r.Assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
		return resp
	}
}

func handleHeartbeat(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if !s.authorizedGroup(ctx, kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	var instance *string
	if req.Version >= 3 {
		instance = req.InstanceID
	}
	resp.ErrorCode = errCode(s.b.Groups().Heartbeat(req.Group, req.MemberID, instance, req.Generation))
	return respond(resp)
}

func handleLeaveGroup(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !s.authorizedGroup(ctx, kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	var members []group.LeaveMember
	if req.Version < 3 {
		members = []group.LeaveMember{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			lm := group.LeaveMember{MemberID: m.MemberID, InstanceID: m.InstanceID}
			if m.Reason != nil {
				lm.Reason = *m.Reason
			}
			members = append(members, lm)
		}
	}
	top, per := s.b.Groups().Leave(req.Group, members)
	if req.Version < 3 {
		if top == nil && len(per) == 1 {
			top = per[0]
		}
		resp.ErrorCode = errCode(top)
		return respond(resp)
	}
	resp.ErrorCode = errCode(top)
	if top == nil {
		for i, m := range req.Members {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
			rm.ErrorCode = errCode(per[i])
			resp.Members = append(resp.Members, rm)
		}
	}
	return respond(resp)
}

func handleOffsetCommit(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.OffsetCommitRequest)
	if !s.authorizedGroup(ctx, kmsg.ACLOperationRead, req.Group) {
		return respond(offsetCommitRefused(req, kerr.GroupAuthorizationFailed, nil))
	}
	readable := s.authorizedTopics(ctx, kmsg.ACLOperationRead, commitTopicNames(req))
	cr := group.CommitRequest{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation, RetentionMs: -1}
	if req.Version == 0 {
		cr.Generation, cr.MemberID = -1, ""
	}
	if req.Version >= 2 && req.Version <= 4 {
		cr.RetentionMs = req.RetentionTimeMillis
	}
	if req.Version >= 7 {
		cr.InstanceID = req.InstanceID
	}
	slot := make([]int, len(req.Topics)) // each request topic's index in cr.Topics, -1 if refused
	for i, t := range req.Topics {
		if !readable[t.Topic] {
			slot[i] = -1
			continue
		}
		slot[i] = len(cr.Topics)
		ct := group.CommitTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			cp := group.CommitPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: -1, Metadata: p.Metadata, TimestampMs: -1}
			if req.Version >= 6 {
				cp.LeaderEpoch = p.LeaderEpoch
			}
			if req.Version == 1 {
				cp.TimestampMs = p.Timestamp
			}
			ct.Partitions = append(ct.Partitions, cp)
		}
		cr.Topics = append(cr.Topics, ct)
	}
	if len(cr.Topics) == 0 && len(req.Topics) > 0 {
		// Every topic was refused: there is nothing to hand the coordinator.
		return respond(offsetCommitRefused(req, nil, slot))
	}
	wait := s.b.Groups().Commit(cr)
	return func(context.Context) kmsg.Response {
		errs := wait()
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for i, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				if slot[i] < 0 {
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				} else {
					rp.ErrorCode = errCode(errs[slot[i]][j])
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

func handleOffsetFetch(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	co := s.b.Groups()
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			out := kmsg.NewOffsetFetchResponseGroup()
			out.Group = rg.Group
			var topics []group.FetchTopic
			if rg.Topics != nil {
				topics = []group.FetchTopic{}
				for _, t := range rg.Topics {
					topics = append(topics, group.FetchTopic{Topic: t.Topic, Partitions: t.Partitions})
				}
			}
			if !s.authorizedGroup(ctx, kmsg.ACLOperationDescribe, rg.Group) {
				out.ErrorCode = kerr.GroupAuthorizationFailed.Code
				resp.Groups = append(resp.Groups, out)
				continue
			}
			allowed, denied := s.splitFetchTopics(ctx, topics)
			fetched, err := co.FetchOffsets(rg.Group, allowed, req.RequireStable)
			if topics == nil {
				fetched = s.describableOffsets(ctx, fetched)
			}
			out.ErrorCode = errCode(err)
			if err == nil {
				for _, ft := range denied {
					t := kmsg.NewOffsetFetchResponseGroupTopic()
					t.Topic = ft.Topic
					for _, p := range ft.Partitions {
						rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.TopicAuthorizationFailed.Code
						t.Partitions = append(t.Partitions, rp)
					}
					out.Topics = append(out.Topics, t)
				}
			}
			for _, ft := range groupFetched(fetched) {
				t := kmsg.NewOffsetFetchResponseGroupTopic()
				t.Topic = ft[0].Topic
				for _, f := range ft {
					p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = f.Partition, f.Offset, f.LeaderEpoch, strPtr(f.Metadata), errCode(f.Err)
					t.Partitions = append(t.Partitions, p)
				}
				out.Topics = append(out.Topics, t)
			}
			resp.Groups = append(resp.Groups, out)
		}
		return respond(resp)
	}
	var topics []group.FetchTopic
	// v0-1 always name topics; from v2 a null list asks for every committed offset.
	if req.Topics != nil || req.Version < 2 {
		topics = []group.FetchTopic{}
		for _, t := range req.Topics {
			topics = append(topics, group.FetchTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	var fetched []group.FetchedOffset
	var denied []group.FetchTopic
	var err *kerr.Error
	if !s.authorizedGroup(ctx, kmsg.ACLOperationDescribe, req.Group) {
		err = kerr.GroupAuthorizationFailed
	} else {
		var allowed []group.FetchTopic
		allowed, denied = s.splitFetchTopics(ctx, topics)
		fetched, err = co.FetchOffsets(req.Group, allowed, req.RequireStable)
		if topics == nil {
			fetched = s.describableOffsets(ctx, fetched)
		}
	}
	if err != nil {
		if req.Version >= 2 {
			resp.ErrorCode = err.Code
			return respond(resp)
		}
		// v0-1 have no request-level error: report it on every partition.
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, err.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return respond(resp)
	}
	for _, ft := range groupFetched(fetched) {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = ft[0].Topic
		for _, f := range ft {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = f.Partition, f.Offset, f.LeaderEpoch, strPtr(f.Metadata), errCode(f.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for _, ft := range denied {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = ft.Topic
		for _, p := range ft.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return respond(resp)
}

// groupFetched splits fetched offsets into runs of one topic, in order.
func groupFetched(fs []group.FetchedOffset) [][]group.FetchedOffset {
	var out [][]group.FetchedOffset
	for i, f := range fs {
		if i == 0 || f.Topic != fs[i-1].Topic {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], f)
	}
	return out
}

func handleListGroups(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	var states []string
	if req.Version >= 4 {
		states = req.StatesFilter
	}
	list, err := s.b.Groups().ListGroups(states)
	resp.ErrorCode = errCode(err)
	// DESCRIBE on the cluster lists every group; without it, those the principal may
	// describe, as Kafka does (the cluster check is quiet: most principals lack it).
	all := s.authorizedQuietly(ctx, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResourceName)
	for _, l := range list {
		if !all && !s.authorizedQuietly(ctx, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, l.Group) {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState = l.Group, l.ProtocolType, l.State.String()
		resp.Groups = append(resp.Groups, g)
	}
	return respond(resp)
}

func handleDescribeGroups(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group, g.AuthorizedOperations = id, unrequestedAuthorizedOperations
		if !s.authorizedGroup(ctx, kmsg.ACLOperationDescribe, id) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		d := s.b.Groups().DescribeGroup(id)
		g.ErrorCode = errCode(d.Err)
		g.State, g.ProtocolType, g.Protocol = d.State.String(), d.ProtocolType, d.Protocol
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = s.authorizedOperations(ctx, kmsg.ACLResourceTypeGroup, id, groupOperations)
		}
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.MemberID, m.InstanceID, m.ClientID, m.ClientHost
			rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
			g.Members = append(g.Members, rm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return respond(resp)
}

func handleDeleteGroups(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	var deletable []string
	slot := make([]int, len(req.Groups)) // each group's index in deletable, -1 if refused
	for i, id := range req.Groups {
		slot[i] = -1
		if s.authorizedGroup(ctx, kmsg.ACLOperationDelete, id) {
			slot[i] = len(deletable)
			deletable = append(deletable, id)
		}
	}
	wait := s.b.Groups().DeleteGroups(deletable)
	return func(context.Context) kmsg.Response {
		errs := wait()
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for i, id := range req.Groups {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			if slot[i] >= 0 {
				g.ErrorCode = errCode(errs[slot[i]])
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
}

func handleOffsetDelete(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	if !s.authorizedGroup(ctx, kmsg.ACLOperationDelete, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	var topics []group.FetchTopic
	slot := make([]int, len(req.Topics)) // each request topic's index in topics, -1 if refused
	for i, t := range req.Topics {
		slot[i] = -1
		if !s.authorizedTopic(ctx, kmsg.ACLOperationRead, t.Topic) {
			continue
		}
		slot[i] = len(topics)
		ft := group.FetchTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			ft.Partitions = append(ft.Partitions, p.Partition)
		}
		topics = append(topics, ft)
	}
	top, wait := s.b.Groups().DeleteOffsets(req.Group, topics)
	return func(context.Context) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = errCode(top)
		if top != nil {
			return resp
		}
		errs := wait()
		for i, t := range req.Topics {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				if slot[i] >= 0 {
					rp.ErrorCode = errCode(errs[slot[i]][j])
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

type clientIDKey struct{}
type clientHostKey struct{}

func withClientID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clientIDKey{}, id)
}

func withClientHost(ctx context.Context, addr net.Addr) context.Context {
	host := ""
	if addr != nil {
		host = addr.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	return context.WithValue(ctx, clientHostKey{}, "/"+host)
}

// clientID is the client id of the request's header.
func clientID(ctx context.Context) string {
	s, _ := ctx.Value(clientIDKey{}).(string)
	return s
}

// clientHost is the connection's peer as Kafka reports it ("/127.0.0.1").
func clientHost(ctx context.Context) string {
	s, _ := ctx.Value(clientHostKey{}).(string)
	return s
}
