package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
)

// ElectLeaders (43), versions 0-2.
//
// PREFERRED (0; v0 has no election type and means it) moves each partition's leadership
// to its preferred replica, the first of its assignment, by Raft leadership transfer
// (broker.ElectPreferredLeader), and waits for it within the request's timeout:
//   - NONE: the preferred replica leads now;
//   - ELECTION_NOT_NEEDED: it led already;
//   - PREFERRED_LEADER_NOT_AVAILABLE: it is not live, not in the ISR, or in maintenance;
//   - LEADER_NOT_AVAILABLE: the partition has no leader to hand over from;
//   - REQUEST_TIMED_OUT: the transfer did not finish in time (it may still);
//   - UNKNOWN_TOPIC_OR_PARTITION.
//
// Null topics mean every partition of every topic, internal ones included.
//
// Deviations: UNCLEAN (1) is refused per partition with POLICY_VIOLATION and a message:
// Raft never elects a replica that may miss committed entries, so there is no unclean
// election to run (Kafka would answer ELECTION_NOT_NEEDED while a leader exists, or elect
// an out-of-sync replica). POLICY_VIOLATION is what Kafka's own tooling prints as a
// refusal with its reason. The disaster procedure for a partition that lost its majority
// for good is `cairn cluster partitions force-recover`. Any other election type is
// INVALID_REQUEST, at the top level and on every partition. The request may reach any
// broker, not only the controller.

const (
	electionPreferred = 0
	electionUnclean   = 1
)

// maxConcurrentElections bounds the transfers one request waits on at once.
const maxConcurrentElections = 32

const uncleanRefusal = "unclean leader election is not supported: Raft only elects a replica that holds every committed entry, so no election can skip one; for a partition that lost its majority for good, the disaster procedure is `cairn cluster partitions force-recover`"

func handleElectLeaders(s *Server, ctx context.Context, kreq kmsg.Request) respondFunc {
	req := kreq.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	type job struct {
		topic, slot int
		p           int32
	}
	var jobs []job
	add := func(topic string, parts []int32) {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
			jobs = append(jobs, job{topic: len(resp.Topics), slot: len(rt.Partitions) - 1, p: p})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Topics == nil {
		for _, t := range s.b.Topics() {
			parts := make([]int32, t.Partitions)
			for i := range parts {
				parts[i] = int32(i)
			}
			add(t.Name, parts)
		}
	} else {
		for _, rt := range req.Topics {
			add(rt.Topic, rt.Partitions)
		}
	}
	set := func(j job, code *kerr.Error, msg string) {
		rp := &resp.Topics[j.topic].Partitions[j.slot]
		rp.ErrorCode, rp.ErrorMessage = errCode(code), errMsg(code, msg)
	}
	if !s.authorizedCluster(ctx, kmsg.ACLOperationAlter) {
		// As Kafka: the named partitions each carry the error too; "every partition" is
		// not spelled out to a principal that may not act on the cluster.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		if req.Topics == nil {
			resp.Topics = nil
			return respond(resp)
		}
		for _, j := range jobs {
			set(j, kerr.ClusterAuthorizationFailed, "")
		}
		return respond(resp)
	}
	if req.ElectionType != electionPreferred {
		code, msg := kerr.PolicyViolation, uncleanRefusal
		if req.ElectionType != electionUnclean {
			code, msg = kerr.InvalidRequest, "election type must be 0 (preferred) or 1 (unclean)"
			resp.ErrorCode = code.Code
		}
		for _, j := range jobs {
			set(j, code, msg)
		}
		return respond(resp)
	}
	wait := time.Duration(req.TimeoutMillis) * time.Millisecond
	if wait <= 0 {
		wait = 30 * time.Second
	}
	return func(context.Context) kmsg.Response {
		var wg sync.WaitGroup
		var mu sync.Mutex
		sem := make(chan struct{}, maxConcurrentElections)
		deadline := time.Now().Add(wait)
		for _, j := range jobs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				var err *broker.Error
				if left := time.Until(deadline); left <= 0 {
					err = &broker.Error{Code: kerr.RequestTimedOut, Msg: "the request's timeout passed before this partition's turn"}
				} else {
					err = s.b.ElectPreferredLeader(resp.Topics[j.topic].Topic, j.p, left)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					set(j, err.Code, err.Msg)
				}
			}()
		}
		wg.Wait()
		return resp
	}
}
