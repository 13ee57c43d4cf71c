package txn

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The requests the coordinator serves, as internal/kafka translates them: each decides
// with the Machine under c.mu, persists the transition without it, and answers once the
// transition is durable.

var errNeedProducerID = errors.New("a new producer id is needed")

// InitProducerID serves InitProducerId with a transactional id: the producer id and epoch
// the producer is to use, or the error it gets.
func (c *Coordinator) InitProducerID(id string, timeoutMs int32, expectedPID int64, expectedEpoch int16) (int64, int16, *kerr.Error) {
	cfg := c.cfg()
	preallocated := int64(-1)
	for {
		needPID := false
		newPID := func() (int64, error) {
			if preallocated >= 0 {
				return preallocated, nil
			}
			needPID = true
			return -1, errNeedProducerID
		}
		c.mu.Lock()
		sh, err := c.shardLocked(id)
		if err != nil {
			c.mu.Unlock()
			return -1, -1, err
		}
		res, t := sh.m.InitProducerID(id, timeoutMs, expectedPID, expectedEpoch, c.now(), cfg.TxnMaxTimeoutMs, newPID)
		c.mu.Unlock()
		if needPID {
			// Allocating may ask the controller for a block of ids: not under c.mu.
			pid, perr := c.host.AllocateProducerID()
			if perr != nil {
				return -1, -1, kerr.CoordinatorNotAvailable
			}
			preallocated = pid
			continue
		}
		if t == nil {
			return res.ProducerID, res.ProducerEpoch, res.Err
		}
		if err := c.apply(sh, t); err != nil {
			return -1, -1, err
		}
		return res.ProducerID, res.ProducerEpoch, res.Err
	}
}

// apply persists a transition and, when it prepares a commit or abort, starts writing its
// markers.
func (c *Coordinator) apply(sh *shard, t *Transition) *kerr.Error {
	if err := c.persist(sh, t); err != nil {
		return err
	}
	if s := t.State(); s == PrepareCommit || s == PrepareAbort {
		c.mu.Lock()
		if c.currentLocked(sh) {
			c.startMarkersLocked(sh, t.ID())
		}
		c.mu.Unlock()
	}
	return nil
}

// AddPartitions serves AddPartitionsToTxn for one transaction: the error of each
// partition. A partition of an unknown topic fails the request whole, as Kafka: it gets
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED.
func (c *Coordinator) AddPartitions(id string, pid int64, epoch int16, parts []TopicPartition) map[TopicPartition]*kerr.Error {
	out := make(map[TopicPartition]*kerr.Error, len(parts))
	unknown := false
	for _, tp := range parts {
		n, ok := c.host.PartitionCount(tp.Topic)
		if !ok || tp.Partition < 0 || tp.Partition >= n {
			out[tp], unknown = kerr.UnknownTopicOrPartition, true
		}
	}
	all := func(err *kerr.Error) map[TopicPartition]*kerr.Error {
		for _, tp := range parts {
			if out[tp] == nil {
				out[tp] = err
			}
		}
		return out
	}
	if unknown {
		return all(kerr.OperationNotAttempted)
	}
	c.mu.Lock()
	sh, err := c.shardLocked(id)
	if err != nil {
		c.mu.Unlock()
		return all(err)
	}
	err, t := sh.m.AddPartitions(id, pid, epoch, parts, c.now())
	c.mu.Unlock()
	if err == nil && t != nil {
		err = c.apply(sh, t)
	}
	return all(err)
}

// VerifyPartition answers a partition leader's check (KIP-890): whether the partition is
// in the ongoing transaction of id at pid and epoch. nil means it is.
func (c *Coordinator) VerifyPartition(id string, pid int64, epoch int16, tp TopicPartition) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, err := c.shardLocked(id)
	if err != nil {
		return err
	}
	return sh.m.VerifyPartition(id, pid, epoch, tp)
}

// AddOffsets serves AddOffsetsToTxn: the group's __consumer_offsets partition joins the
// transaction, so that its commit or abort marker lands there too.
func (c *Coordinator) AddOffsets(id string, pid int64, epoch int16, offsetsPartition int32) *kerr.Error {
	tp := TopicPartition{Topic: OffsetsTopic, Partition: offsetsPartition}
	return c.AddPartitions(id, pid, epoch, []TopicPartition{tp})[tp]
}

// EndTxn serves EndTxn: it returns once the decision (PrepareCommit or PrepareAbort) is
// durable; the markers follow in the background, and the producer's next transaction
// waits for them (CONCURRENT_TRANSACTIONS) as in Kafka.
func (c *Coordinator) EndTxn(id string, pid int64, epoch int16, commit bool) *kerr.Error {
	c.mu.Lock()
	sh, err := c.shardLocked(id)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	err, t := sh.m.EndTxn(id, pid, epoch, commit, c.now())
	if err == nil && t == nil {
		// A retry of a decision already made: make sure its markers are under way.
		if md, ok := sh.m.Get(id); ok && (md.State == PrepareCommit || md.State == PrepareAbort) {
			c.startMarkersLocked(sh, id)
		}
	}
	c.mu.Unlock()
	if err != nil || t == nil {
		return err
	}
	return c.apply(sh, t)
}

// Describe returns the metadata of each id this node coordinates, for
// DescribeTransactions; an id led elsewhere or unknown gets the error Kafka answers.
func (c *Coordinator) Describe(id string) (Metadata, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, err := c.shardLocked(id)
	if err != nil {
		return Metadata{}, err
	}
	md, ok := sh.m.Get(id)
	if !ok {
		return Metadata{}, kerr.TransactionalIDNotFound
	}
	return md, nil
}

// List returns the transactions of every loaded shard that match the filters (empty:
// any), for ListTransactions.
func (c *Coordinator) List(states []State, pids []int64) []Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Metadata
	for _, sh := range c.shards {
		if sh != nil && sh.loaded {
			out = append(out, sh.m.List(states, pids)...)
		}
	}
	return out
}
