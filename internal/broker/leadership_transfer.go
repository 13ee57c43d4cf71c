package broker

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/rpc"
)

// Leadership transfer on request (admin HTTP, ElectLeaders, the leader balancer). Any
// broker takes the request: it checks the target against what it knows (the assignment,
// the leader's ISR, the target's liveness and maintenance), then the partition's leader
// starts a Raft leadership transfer, directly when that is this broker, else on a
// msgTransferLeader sent to the leader's broker. Raft's transfer is fire and forget (it
// gives up silently after an election timeout), so the requester asks again until the
// leadership shows up on the target or transferWait passes.
//
// Wire (versioned): request = version u8 | group uvarint | target uvarint. No answer: the
// requester watches the leadership, which every broker publishes (leaders.go).

const msgTransferLeader = rpc.MsgTransferLeader

const transferLeaderVersion = 1

// transferWait bounds how long TransferLeadership waits for the leadership to move;
// transferRetry is how often it asks the leader again meanwhile, leaderlessRetry how often
// it looks again for a leader to ask.
const (
	transferWait    = 10 * time.Second
	transferRetry   = time.Second
	leaderlessRetry = 200 * time.Millisecond
)

var errBadTransfer = errors.New("malformed leadership transfer request")

func encodeTransferLeader(group uint64, target int32) []byte {
	buf := []byte{transferLeaderVersion}
	buf = binary.AppendUvarint(buf, group)
	return binary.AppendUvarint(buf, uint64(target))
}

func decodeTransferLeader(b []byte) (uint64, int32, error) {
	if len(b) < 1 || b[0] != transferLeaderVersion {
		return 0, 0, errBadTransfer
	}
	b = b[1:]
	group, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, errBadTransfer
	}
	b = b[n:]
	target, n := binary.Uvarint(b)
	if n <= 0 || n != len(b) || target == 0 || target > 1<<31-1 {
		return 0, 0, errBadTransfer
	}
	return group, int32(target), nil
}

// handleTransferLeader serves another broker's request to move a leadership this broker
// holds. It checks again what it can check better than the requester: that it leads the
// group, and that the target is not in maintenance.
func (b *Broker) handleTransferLeader(from int32, _ uint8, payload []byte) {
	group, target, err := decodeTransferLeader(payload)
	if err != nil {
		b.lg.Warn("dropping a malformed leadership transfer request", "from", from, "err", err)
		return
	}
	if st, err := b.host.Status(group); err != nil || st.Leader != uint64(b.cfg.NodeID) || target == b.cfg.NodeID {
		return // no longer the leader (or never was): the requester sees it and asks the new one
	}
	if br, ok := b.state().Broker(target); !ok || br.Maintenance || !br.Live {
		return
	}
	if r := b.replicaOfGroup(group); r != nil && !containsID(nodeIDs(r.p.ISR()), target) {
		return // the requester's view of the ISR was stale the other way
	}
	_ = b.host.TransferLeadership(group, uint64(target))
}

// TransferLeadership moves the leadership of a partition to target, one of its replicas,
// and waits (bounded) until target leads. It works from any broker. Refusals:
// UNKNOWN_TOPIC_OR_PARTITION; INVALID_REPLICA_ASSIGNMENT when target is not a replica of
// the partition (Kafka's code for a replica that does not fit the assignment);
// PREFERRED_LEADER_NOT_AVAILABLE when target is not live, not in the ISR or in maintenance;
// LEADER_NOT_AVAILABLE when the partition has no leader to hand over; REQUEST_TIMED_OUT
// when the leadership did not move in time. Target leading already is success.
func (b *Broker) TransferLeadership(topic string, p int32, target int32) *Error {
	return b.transferWithin(topic, p, target, transferWait)
}

// ElectPreferredLeader moves the leadership of a partition to its preferred replica (the
// first of its assignment), waiting at most wait: ElectLeaders' PREFERRED election. It is
// ELECTION_NOT_NEEDED when the preferred replica leads already; otherwise it fails as
// TransferLeadership does.
func (b *Broker) ElectPreferredLeader(topic string, p int32, wait time.Duration) *Error {
	t, ok := b.topic(topic)
	if !ok || p < 0 || p >= t.Partitions() || len(t.Assignment[p]) == 0 {
		return errorf(kerr.UnknownTopicOrPartition, "partition %s/%d does not exist", topic, p)
	}
	preferred := t.Assignment[p][0]
	if b.PartitionView(*t, p).Leader == preferred {
		return errorf(kerr.ElectionNotNeeded, "the preferred replica, broker %d, leads %s/%d already", preferred, topic, p)
	}
	return b.transferWithin(topic, p, preferred, wait)
}

// transferWithin asks for the transfer and waits until target leads, asking again every
// transferRetry. A partition in the middle of an election (no leader known here) is asked
// again until wait passes, as is a leader whose ISR, as last heard here, lacks target.
func (b *Broker) transferWithin(topic string, p int32, target int32, wait time.Duration) *Error {
	deadline := time.Now().Add(wait)
	var next time.Time // when to ask the leader (again)
	var last *Error    // the refusal to report if the leadership never moves
	leader := int32(-1)
	for {
		if !time.Now().Before(next) {
			t, asked, err := b.requestTransfer(topic, p, target)
			switch {
			case t != nil && asked == target:
				return nil
			case t != nil:
				leader, last, next = asked, err, time.Now().Add(transferRetry)
			case err.Code == kerr.LeaderNotAvailable:
				last, next = err, time.Now().Add(leaderlessRetry)
			default:
				return err
			}
		}
		if t, ok := b.topic(topic); ok && p < t.Partitions() {
			if v := b.PartitionView(*t, p); v.Leader == target {
				return nil
			} else if v.Leader >= 0 {
				leader = v.Leader
			}
		}
		if time.Now().After(deadline) {
			if last != nil {
				return last
			}
			return errorf(kerr.RequestTimedOut, "the leadership of %s/%d did not move to broker %d within %s (it is on broker %d)", topic, p, target, wait, leader)
		}
		select {
		case <-b.ctx.Done():
			return errorf(kerr.RequestTimedOut, "the broker is stopping")
		case <-b.leaders.changed():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// requestTransfer checks a transfer and asks the partition's leader to start it, without
// waiting. It returns the topic and the leader it asked (target itself: nothing to do), or
// a nil topic and why it did not ask. One refusal comes with the leader asked all the same:
// target missing from the ISR of a leader on another broker, whose ISR reaches this one
// only every few seconds (leaders.go); that leader checks its own ISR.
func (b *Broker) requestTransfer(topic string, p int32, target int32) (*controller.Topic, int32, *Error) {
	t, ok := b.topic(topic)
	if !ok || p < 0 || p >= t.Partitions() || int(p) >= len(t.Groups) {
		return nil, -1, errorf(kerr.UnknownTopicOrPartition, "partition %s/%d does not exist", topic, p)
	}
	if !containsID(t.Assignment[p], target) {
		return nil, -1, errorf(kerr.InvalidReplicaAssignment, "broker %d is not a replica of %s/%d (replicas %v)", target, topic, p, t.Assignment[p])
	}
	v := b.PartitionView(*t, p)
	if v.Leader == target {
		return t, target, nil
	}
	if why := b.ineligibleLeader(target); why != "" {
		return nil, -1, errorf(kerr.PreferredLeaderNotAvailable, "broker %d cannot lead %s/%d: %s", target, topic, p, why)
	}
	if v.Leader < 0 {
		return nil, -1, errorf(kerr.LeaderNotAvailable, "%s/%d has no leader to hand over from", topic, p)
	}
	var stale *Error
	if !containsID(v.ISR, target) {
		stale = errorf(kerr.PreferredLeaderNotAvailable, "broker %d is not in the ISR of %s/%d (ISR %v)", target, topic, p, v.ISR)
		if v.Leader == b.cfg.NodeID {
			return nil, -1, stale
		}
	}
	group := t.Groups[p]
	if v.Leader == b.cfg.NodeID {
		if err := b.host.TransferLeadership(group, uint64(target)); err != nil {
			return nil, -1, errorf(kerr.LeaderNotAvailable, "starting the transfer of %s/%d: %v", topic, p, err)
		}
		return t, v.Leader, nil
	}
	if err := b.transport.Send(v.Leader, msgTransferLeader, encodeTransferLeader(group, target)); err != nil {
		return nil, -1, errorf(kerr.LeaderNotAvailable, "asking broker %d, the leader of %s/%d: %v", v.Leader, topic, p, err)
	}
	return t, v.Leader, stale
}

// ineligibleLeader says why a broker may not take a leadership ("" if it may): it is
// unknown, not live, or in maintenance.
func (b *Broker) ineligibleLeader(id int32) string {
	br, ok := b.state().Broker(id)
	switch {
	case !ok:
		return "it is not registered"
	case !br.Live:
		return "it is not live"
	case br.Maintenance:
		return "it is in maintenance"
	}
	return ""
}

// replicaOfGroup returns the local replica of a partition's Raft group (nil: none, or the
// controller's group).
func (b *Broker) replicaOfGroup(group uint64) *replica {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, r := range b.replicas {
		if r.group == group {
			return r
		}
	}
	return nil
}
