// Package txn is the transaction coordinator. The Machine (machine.go) decides, for the
// transactional ids of one __transaction_state partition, what InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, the transaction timeout and the
// transactional id expiry do, with Kafka's answers, and it encodes and decodes the
// partition's records. It does no I/O, starts no goroutines and reads no clock.
//
// The Coordinator (coordinator.go) is its shell: one Machine per __transaction_state
// partition this node leads. It persists each Transition at acks=all before the change
// takes effect, writes the transaction markers through each participant's own Raft group
// (through its Host), and tells the Machine how the write went (Complete or Fail). A
// change is decided, persisted, then applied, so what a client is told was durable first,
// and a new leader that replays the partition resumes from the same state, markers
// included (PendingMarkers).
//
// The package owns the transactions' metadata and the rule that one change per
// transactional id is in flight at a time. It must not import the broker or the Kafka
// protocol server: the broker gives it a Host, and internal/kafka translates requests.
package txn

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is a transaction's state, with the byte Kafka stores in TxnMetadataValue.State.
type State int8

const (
	Empty          State = 0
	Ongoing        State = 1
	PrepareCommit  State = 2
	PrepareAbort   State = 3
	CompleteCommit State = 4
	CompleteAbort  State = 5
	// Dead is an expired transactional id on its way out: its record is a tombstone.
	Dead State = 6
	// PrepareEpochFence is Kafka's in-memory step before aborting a fenced transaction.
	// Kafka never persists it and neither does this Machine (the fence and the abort are one
	// Transition); it exists so a record holding it can be read.
	PrepareEpochFence State = 7
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
	"CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's name, which DescribeTransactions and ListTransactions report.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// ParseState reads Kafka's name of a state, as ListTransactions' filter gives it.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

func (s State) valid() bool { return s >= Empty && s <= PrepareEpochFence }

// inTxn reports whether partitions may be part of the transaction in this state; the
// complete states have emptied them.
func (s State) preparing() bool { return s == PrepareCommit || s == PrepareAbort }

// idle states are those a new transaction starts from, and the only ones an id may expire
// in.
func (s State) idle() bool { return s == Empty || s == CompleteCommit || s == CompleteAbort }

const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
	maxEpoch        int16 = 32767
)

// epochExhausted is Kafka's test: the last epoch is kept back so that fencing a producer
// at Short.MaxValue-1 can still bump once.
func epochExhausted(e int16) bool { return e >= maxEpoch-1 }

// OffsetsTopic is the topic a group's offsets go to; AddOffsets adds one of its partitions
// to the transaction, as Kafka does, instead of recording the group.
const OffsetsTopic = "__consumer_offsets"

// TopicPartition is one partition a transaction wrote to.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// normalize makes a partition set: sorted, without duplicates, nil when empty, and not
// sharing the caller's array.
func normalize(tps []TopicPartition) []TopicPartition {
	if len(tps) == 0 {
		return nil
	}
	out := slices.Clone(tps)
	slices.SortFunc(out, compareTP)
	return slices.Compact(out)
}

// Metadata is one transactional id's state, as persisted (but for LastProducerEpoch).
type Metadata struct {
	TransactionalID string
	ProducerID      int64
	// PreviousProducerID is the producer id this one replaced when the epochs ran out, -1
	// otherwise. It is set by the rotation and cleared by the next change, as Kafka's
	// lastProducerId is (which then equals ProducerID): it only lets a producer that did not
	// hear the rotation's answer retry InitProducerId with its old id (KIP-360).
	PreviousProducerID int64
	ProducerEpoch      int16
	// LastProducerEpoch is the epoch before the last InitProducerId bump that a producer asked
	// for with its current id and epoch, so that a retry of that bump gets the same answer.
	// Kafka does not persist it and neither do the records here: after a replay it is -1.
	LastProducerEpoch int16
	TimeoutMs         int32
	State             State
	// Partitions is sorted and without duplicates.
	Partitions []TopicPartition
	// StartTime is when the transaction's first partition was added; zero when none is open.
	StartTime  time.Time
	LastUpdate time.Time
}

func (m Metadata) clone() Metadata {
	m.Partitions = slices.Clone(m.Partitions)
	return m
}

func (m Metadata) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: pid=%d epoch=%d", m.TransactionalID, m.ProducerID, m.ProducerEpoch)
	if m.LastProducerEpoch != noProducerEpoch {
		fmt.Fprintf(&b, " last-epoch=%d", m.LastProducerEpoch)
	}
	if m.PreviousProducerID != noProducerID {
		fmt.Fprintf(&b, " prev-pid=%d", m.PreviousProducerID)
	}
	fmt.Fprintf(&b, " timeout=%d %s", m.TimeoutMs, m.State)
	if len(m.Partitions) > 0 {
		parts := make([]string, len(m.Partitions))
		for i, tp := range m.Partitions {
			parts[i] = tp.String()
		}
		fmt.Fprintf(&b, " parts=%s", strings.Join(parts, ","))
	}
	if !m.StartTime.IsZero() {
		fmt.Fprintf(&b, " start=%d", m.StartTime.UnixMilli())
	}
	fmt.Fprintf(&b, " update=%d", m.LastUpdate.UnixMilli())
	return b.String()
}
