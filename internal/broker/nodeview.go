package broker

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/rpc"
)

// Node views: what one broker holds, for the web console (internal/console), which shows
// the whole cluster from any broker. Each broker knows the five boundaries of its own
// replicas and the groups it coordinates, and nothing else does: a follower's flushed
// offset, or a group's members, are not in the controller. So the console's broker asks
// every live broker (msgNodeViewRequest) and joins the answers. It is read-only, and slow
// questions do not hold anything: a broker that does not answer within nodeViewWait is
// shown as not answering.
//
// Wire: JSON both ways ({"v":1,...}), since the console is not a hot path and the views
// grow fields; an unknown version is refused without an answer.

const (
	msgNodeViewRequest  = rpc.MsgNodeViewRequest
	msgNodeViewResponse = rpc.MsgNodeViewResponse
	nodeViewVersion     = 1
	nodeViewWait        = 2 * time.Second
	// nodeViewMaxBytes bounds one answer, well under the transport's frame limit: a view
	// past it is cut and marked Truncated.
	nodeViewMaxBytes = 4 << 20
)

var errBadNodeView = errors.New("malformed node view message")

// NodeViewQuery says what to gather.
type NodeViewQuery struct {
	// Topics whose replicas to report (nil: none).
	Topics []string `json:"topics,omitempty"`
	// Groups asks for the groups the broker coordinates.
	Groups bool `json:"groups,omitempty"`
}

// NodeView is what one broker holds.
type NodeView struct {
	Broker    int32 `json:"broker"`
	Answered  bool  `json:"answered"`
	Truncated bool  `json:"truncated,omitempty"`
	// Replicas are its replicas of the queried topics, by topic and partition.
	Replicas []ReplicaView `json:"replicas,omitempty"`
	// Groups are the groups it coordinates, by id.
	Groups []GroupView `json:"groups,omitempty"`
}

// ReplicaView is one replica's boundaries as its own broker knows them.
type ReplicaView struct {
	Topic              string `json:"topic"`
	Partition          int32  `json:"partition"`
	IsLeader           bool   `json:"is_leader"`
	LeaderEpoch        int32  `json:"leader_epoch"`
	LogStart           int64  `json:"log_start"`
	LogEnd             int64  `json:"log_end"`
	Flushed            int64  `json:"flushed"`
	MajorityReplicated int64  `json:"majority_replicated"`
	Committed          int64  `json:"committed"`
	LastVisible        int64  `json:"last_visible"`
}

// GroupView is one consumer group as its coordinator knows it.
type GroupView struct {
	Group        string            `json:"group"`
	State        string            `json:"state"`
	ProtocolType string            `json:"protocol_type"`
	Protocol     string            `json:"protocol"`
	Members      []GroupMemberView `json:"members"`
	Offsets      []CommittedOffset `json:"offsets"`
}

// GroupMemberView is one member and, for the consumer protocol, what it is assigned.
type GroupMemberView struct {
	MemberID   string           `json:"member_id"`
	InstanceID string           `json:"instance_id,omitempty"`
	ClientID   string           `json:"client_id"`
	ClientHost string           `json:"client_host"`
	Assigned   []TopicPartition `json:"assigned,omitempty"`
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// CommittedOffset is a group's committed offset of one partition.
type CommittedOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

type nodeViewRequest struct {
	V     int           `json:"v"`
	Corr  uint64        `json:"corr"`
	Query NodeViewQuery `json:"query"`
}

type nodeViewResponse struct {
	V    int      `json:"v"`
	Corr uint64   `json:"corr"`
	View NodeView `json:"view"`
}

func decodeNodeViewRequest(b []byte) (nodeViewRequest, error) {
	var r nodeViewRequest
	if err := json.Unmarshal(b, &r); err != nil || r.V != nodeViewVersion {
		return nodeViewRequest{}, errBadNodeView
	}
	return r, nil
}

func decodeNodeViewResponse(b []byte) (nodeViewResponse, error) {
	var r nodeViewResponse
	if err := json.Unmarshal(b, &r); err != nil || r.V != nodeViewVersion {
		return nodeViewResponse{}, errBadNodeView
	}
	return r, nil
}

// localNodeView gathers q on this broker.
func (b *Broker) localNodeView(q NodeViewQuery) NodeView {
	v := NodeView{Broker: b.cfg.NodeID, Answered: true}
	if len(q.Topics) > 0 {
		for _, p := range b.Partitions() {
			if !slices.Contains(q.Topics, p.Topic()) {
				continue
			}
			bd := p.Boundaries()
			v.Replicas = append(v.Replicas, ReplicaView{Topic: p.Topic(), Partition: p.ID(), IsLeader: bd.IsLeader,
				LeaderEpoch: bd.LeaderEpoch, LogStart: bd.LogStart, LogEnd: bd.LogEnd, Flushed: bd.Flushed,
				MajorityReplicated: bd.MajorityReplicated, Committed: bd.Committed, LastVisible: bd.LastVisible})
		}
		slices.SortFunc(v.Replicas, func(a, c ReplicaView) int {
			if n := strings.Compare(a.Topic, c.Topic); n != 0 {
				return n
			}
			return int(a.Partition - c.Partition)
		})
	}
	if q.Groups && b.groups != nil {
		listed, _ := b.groups.ListGroups(nil) // while a shard loads, the groups loaded so far
		for _, l := range listed {
			v.Groups = append(v.Groups, b.groupView(l.Group))
		}
	}
	return v
}

// groupView describes one group this broker coordinates.
func (b *Broker) groupView(id string) GroupView {
	d := b.groups.DescribeGroup(id)
	g := GroupView{Group: id, State: d.State.String(), ProtocolType: d.ProtocolType, Protocol: d.Protocol}
	for _, m := range d.Members {
		mv := GroupMemberView{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost}
		if m.InstanceID != nil {
			mv.InstanceID = *m.InstanceID
		}
		if d.ProtocolType == "consumer" && len(m.Assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if a.ReadFrom(m.Assignment) == nil {
				for _, t := range a.Topics {
					for _, p := range t.Partitions {
						mv.Assigned = append(mv.Assigned, TopicPartition{Topic: t.Topic, Partition: p})
					}
				}
			}
		}
		g.Members = append(g.Members, mv)
	}
	offsets, _ := b.groups.FetchOffsets(id, nil, false)
	for _, o := range offsets {
		if o.Err == nil && o.Offset >= 0 {
			g.Offsets = append(g.Offsets, CommittedOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
		}
	}
	return g
}

// encodeNodeView encodes an answer, cutting the view until it fits nodeViewMaxBytes.
func encodeNodeView(corr uint64, v NodeView) []byte {
	for {
		buf, err := json.Marshal(nodeViewResponse{V: nodeViewVersion, Corr: corr, View: v})
		if err == nil && len(buf) <= nodeViewMaxBytes {
			return buf
		}
		v.Truncated = true
		switch {
		case len(v.Replicas) > 0:
			v.Replicas = v.Replicas[:len(v.Replicas)/2]
		case len(v.Groups) > 0:
			v.Groups = v.Groups[:len(v.Groups)/2]
		default:
			buf, _ = json.Marshal(nodeViewResponse{V: nodeViewVersion, Corr: corr, View: NodeView{Broker: v.Broker, Answered: true, Truncated: true}})
			return buf
		}
	}
}

func (b *Broker) handleNodeView(from int32, msgType uint8, payload []byte) {
	switch msgType {
	case msgNodeViewRequest:
		req, err := decodeNodeViewRequest(payload)
		if err != nil {
			b.lg.Warn("dropping a malformed node view request", "from", from, "err", err)
			return
		}
		_ = b.transport.Send(from, msgNodeViewResponse, encodeNodeView(req.Corr, b.localNodeView(req.Query)))
	case msgNodeViewResponse:
		resp, err := decodeNodeViewResponse(payload)
		if err != nil {
			b.lg.Warn("dropping a malformed node view response", "from", from, "err", err)
			return
		}
		resp.View.Broker, resp.View.Answered = from, true
		b.viewCalls.answer(resp.Corr, resp.View)
	}
}

// NodeViews asks every registered broker not decommissioned (this one directly) for q, in broker order. A
// broker that is down or does not answer in time is listed with Answered false.
func (b *Broker) NodeViews(ctx context.Context, q NodeViewQuery) []NodeView {
	ctx, cancel := context.WithTimeout(ctx, nodeViewWait)
	defer cancel()
	var brokers []controller.Broker
	for _, br := range b.state().Brokers() {
		if br.Membership != controller.MembershipDecommissioned { // gone for good: nothing to ask
			brokers = append(brokers, br)
		}
	}
	out := make([]NodeView, len(brokers))
	var wg sync.WaitGroup
	for i, br := range brokers {
		out[i] = NodeView{Broker: br.ID}
		if br.ID == b.cfg.NodeID {
			out[i] = b.localNodeView(q)
			continue
		}
		if !br.Live {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := b.viewCalls.call(ctx, func(corr uint64) error {
				buf, _ := json.Marshal(nodeViewRequest{V: nodeViewVersion, Corr: corr, Query: q})
				return b.transport.Send(br.ID, msgNodeViewRequest, buf)
			})
			if err == nil {
				out[i] = v
			}
		}()
	}
	wg.Wait()
	return out
}
