package txn

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Machine holds the transactions of one __transaction_state partition and decides every
// change to them. A change is a Transition: the Machine marks the id pending, the shell
// persists the Transition's record, then calls Complete (durable: the change takes effect)
// or Fail (not written: nothing changed). While an id is pending, every other request for
// it gets CONCURRENT_TRANSACTIONS, so a client is never told of a change that could still
// be lost.
type Machine struct {
	txns map[string]*entry
}

type entry struct {
	md      Metadata
	pending *Transition
	// persisted is false for an id whose first record is not durable yet: a failed first
	// write forgets the id again.
	persisted bool
}

// Transition is one decided change of one transactional id, not yet durable.
type Transition struct {
	next Metadata
	// dead: the id expires; its record is a tombstone.
	dead bool
}

// ID is the transactional id the transition changes.
func (t *Transition) ID() string { return t.next.TransactionalID }

// State is the state the transition moves the id to.
func (t *Transition) State() State {
	if t.dead {
		return Dead
	}
	return t.next.State
}

// Record is the transition's record in __transaction_state: Kafka's key and value, a nil
// value for an expired id.
func (t *Transition) Record() (key, value []byte) {
	key = encodeKey(t.next.TransactionalID)
	if t.dead {
		return key, nil
	}
	return key, encodeValue(t.next)
}

// NewMachine makes an empty Machine.
func NewMachine() *Machine { return &Machine{txns: make(map[string]*entry)} }

// Len is the number of transactional ids the Machine knows.
func (m *Machine) Len() int { return len(m.txns) }

// Open is the number of transactions open or being completed.
func (m *Machine) Open() int {
	n := 0
	for _, e := range m.txns {
		if s := e.md.State; s == Ongoing || s.preparing() {
			n++
		}
	}
	return n
}

// Replay applies one record of the partition, in log order, as a new leader reads it.
func (m *Machine) Replay(key, value []byte) error {
	id, err := decodeKey(key)
	if err != nil {
		return err
	}
	if value == nil {
		delete(m.txns, id)
		return nil
	}
	md, err := decodeValue(id, value)
	if err != nil {
		return err
	}
	m.txns[id] = &entry{md: md, persisted: true}
	return nil
}

// Get returns a copy of an id's durable metadata.
func (m *Machine) Get(id string) (Metadata, bool) {
	e, ok := m.txns[id]
	if !ok {
		return Metadata{}, false
	}
	return e.md.clone(), true
}

// List returns the durable metadata of the ids in any of states (all when empty) whose
// producer id is one of pids (all when empty), sorted by id.
func (m *Machine) List(states []State, pids []int64) []Metadata {
	var out []Metadata
	for _, e := range m.txns {
		if (len(states) == 0 || slices.Contains(states, e.md.State)) &&
			(len(pids) == 0 || slices.Contains(pids, e.md.ProducerID)) {
			out = append(out, e.md.clone())
		}
	}
	slices.SortFunc(out, func(a, b Metadata) int {
		switch {
		case a.TransactionalID < b.TransactionalID:
			return -1
		case a.TransactionalID > b.TransactionalID:
			return 1
		}
		return 0
	})
	return out
}

// begin marks e pending with the change to next.
func (m *Machine) begin(e *entry, next Metadata) *Transition {
	next.Partitions = normalize(next.Partitions)
	t := &Transition{next: next}
	e.pending = t
	return t
}

// Complete applies a transition whose record is durable.
func (m *Machine) Complete(t *Transition) {
	e, ok := m.txns[t.ID()]
	if !ok || e.pending != t {
		return
	}
	if t.dead {
		delete(m.txns, t.ID())
		return
	}
	e.md, e.pending, e.persisted = t.next, nil, true
}

// Fail drops a transition whose record was not written.
func (m *Machine) Fail(t *Transition) {
	e, ok := m.txns[t.ID()]
	if !ok || e.pending != t {
		return
	}
	e.pending = nil
	if !e.persisted {
		delete(m.txns, t.ID())
	}
}

// InitResult is InitProducerId's answer.
type InitResult struct {
	ProducerID    int64
	ProducerEpoch int16
	Err           *kerr.Error
}

func initFailed(err *kerr.Error) InitResult {
	return InitResult{ProducerID: -1, ProducerEpoch: -1, Err: err}
}

// InitProducerID decides InitProducerId for a transactional id: a new id gets a fresh
// producer id at epoch 0; a known one gets its epoch bumped, which fences every older
// instance of the producer; an id whose transaction is open has that transaction aborted
// first (the answer is then CONCURRENT_TRANSACTIONS, and the client retries). expectedPID
// and expectedEpoch are the producer id and epoch the client has (-1 when none): KIP-360
// lets a producer keep its id across an epoch bump it asked for, and retry one it did not
// hear the answer to. newPID hands out a fresh producer id.
func (m *Machine) InitProducerID(id string, timeoutMs int32, expectedPID int64, expectedEpoch int16, now time.Time,
	maxTimeoutMs int32, newPID func() (int64, error)) (InitResult, *Transition) {
	if timeoutMs <= 0 || timeoutMs > maxTimeoutMs {
		return initFailed(kerr.InvalidTransactionTimeout), nil
	}
	expected := expectedPID >= 0 || expectedEpoch >= 0
	e, ok := m.txns[id]
	if !ok || e.md.State == Dead {
		pid, err := newPID()
		if err != nil {
			return initFailed(kerr.CoordinatorNotAvailable), nil
		}
		e = &entry{md: Metadata{TransactionalID: id, ProducerID: pid, PreviousProducerID: noProducerID,
			ProducerEpoch: noProducerEpoch, LastProducerEpoch: noProducerEpoch, TimeoutMs: timeoutMs, State: Empty, LastUpdate: now}}
		m.txns[id] = e
	}
	if e.pending != nil {
		return initFailed(kerr.ConcurrentTransactions), nil
	}
	md := e.md
	if expected && md.ProducerEpoch != noProducerEpoch && expectedPID != md.ProducerID &&
		!(expectedPID == md.PreviousProducerID && epochExhausted(expectedEpoch)) {
		return initFailed(kerr.ProducerFenced), nil
	}
	switch md.State {
	case PrepareCommit, PrepareAbort:
		return initFailed(kerr.ConcurrentTransactions), nil
	case Ongoing:
		// A new instance of the producer: fence the old one and abort what it left open.
		return initFailed(kerr.ConcurrentTransactions), m.begin(e, fenceAndAbort(md, now))
	case Empty, CompleteCommit, CompleteAbort:
	default:
		return initFailed(kerr.InvalidTxnState), nil
	}

	next := md.clone()
	next.TimeoutMs, next.State, next.Partitions, next.StartTime, next.LastUpdate = timeoutMs, Empty, nil, time.Time{}, now
	if epochExhausted(md.ProducerEpoch) && (!expected || expectedEpoch == md.ProducerEpoch) {
		// The epochs ran out: a new producer id, remembering the old one so that a client
		// that did not hear this answer can retry with it.
		pid, err := newPID()
		if err != nil {
			return initFailed(kerr.CoordinatorNotAvailable), nil
		}
		next.PreviousProducerID, next.ProducerID, next.ProducerEpoch = md.ProducerID, pid, 0
		next.LastProducerEpoch = noProducerEpoch
		if expected {
			next.LastProducerEpoch = md.ProducerEpoch
		}
		return InitResult{ProducerID: next.ProducerID, ProducerEpoch: next.ProducerEpoch}, m.begin(e, next)
	}
	next.PreviousProducerID = noProducerID
	switch {
	case !expected:
		next.ProducerEpoch = md.ProducerEpoch + 1
	case md.ProducerEpoch == noProducerEpoch || expectedEpoch == md.ProducerEpoch:
		next.ProducerEpoch, next.LastProducerEpoch = md.ProducerEpoch+1, md.ProducerEpoch
	case expectedEpoch == md.LastProducerEpoch:
		// A retry of the bump this producer asked for: the same answer, nothing to write.
		return InitResult{ProducerID: md.ProducerID, ProducerEpoch: md.ProducerEpoch}, nil
	default:
		return initFailed(kerr.ProducerFenced), nil
	}
	return InitResult{ProducerID: next.ProducerID, ProducerEpoch: next.ProducerEpoch}, m.begin(e, next)
}

// fenceAndAbort is the abort of an open transaction that its producer did not ask for: the
// epoch is bumped so that the producer that opened it can write nothing more, and the
// markers carry the new epoch. At the last epoch there is nothing to bump to: the abort
// keeps it, and the producer's next InitProducerId rotates its id.
func fenceAndAbort(md Metadata, now time.Time) Metadata {
	next := md.clone()
	if !epochExhausted(md.ProducerEpoch) {
		next.ProducerEpoch++
	}
	next.LastProducerEpoch = noProducerEpoch
	next.State, next.LastUpdate = PrepareAbort, now
	return next
}

// checkProducer is Kafka's check of the producer id and epoch a transactional request
// names against the id's metadata.
func (m *Machine) checkProducer(id string, pid int64, epoch int16) (*entry, *kerr.Error) {
	e, ok := m.txns[id]
	switch {
	case !ok || e.md.State == Dead || pid != e.md.ProducerID:
		return nil, kerr.InvalidProducerIDMapping
	case epoch != e.md.ProducerEpoch:
		return nil, kerr.ProducerFenced
	case e.pending != nil:
		return nil, kerr.ConcurrentTransactions
	}
	return e, nil
}

// AddPartitions decides AddPartitionsToTxn (and AddOffsetsToTxn, whose partition is the
// group's offsets partition): the transaction becomes Ongoing with the partitions added.
// Partitions already in it need no write.
func (m *Machine) AddPartitions(id string, pid int64, epoch int16, parts []TopicPartition, now time.Time) (*kerr.Error, *Transition) {
	e, err := m.checkProducer(id, pid, epoch)
	if err != nil {
		return err, nil
	}
	md := e.md
	switch md.State {
	case PrepareCommit, PrepareAbort:
		return kerr.ConcurrentTransactions, nil
	case Ongoing:
		missing := false
		for _, tp := range parts {
			if _, found := slices.BinarySearchFunc(md.Partitions, tp, compareTP); !found {
				missing = true
				break
			}
		}
		if !missing {
			return nil, nil
		}
	case Empty, CompleteCommit, CompleteAbort:
		md.Partitions, md.StartTime = nil, now
	default:
		return kerr.InvalidTxnState, nil
	}
	next := md.clone()
	next.Partitions = append(next.Partitions, parts...)
	next.State, next.LastUpdate = Ongoing, now
	return nil, m.begin(e, next)
}

// VerifyPartition answers whether tp is in the ongoing transaction of id at pid and epoch
// (KIP-890): a partition leader asks before it accepts the transaction's first batch.
func (m *Machine) VerifyPartition(id string, pid int64, epoch int16, tp TopicPartition) *kerr.Error {
	e, ok := m.txns[id]
	switch {
	case !ok || e.md.State == Dead || pid != e.md.ProducerID:
		return kerr.InvalidProducerIDMapping
	case epoch != e.md.ProducerEpoch:
		return kerr.ProducerFenced
	case e.md.State != Ongoing:
		return kerr.InvalidTxnState
	}
	if _, found := slices.BinarySearchFunc(e.md.Partitions, tp, compareTP); !found {
		return kerr.InvalidTxnState
	}
	return nil
}

// EndTxn decides EndTxn: an ongoing transaction moves to PrepareCommit or PrepareAbort. A
// retry of an outcome already complete is answered with success and writes nothing; one
// still being completed gets CONCURRENT_TRANSACTIONS; anything else, an EndTxn without a
// transaction included, INVALID_TXN_STATE.
func (m *Machine) EndTxn(id string, pid int64, epoch int16, commit bool, now time.Time) (*kerr.Error, *Transition) {
	e, err := m.checkProducer(id, pid, epoch)
	if err != nil {
		return err, nil
	}
	md := e.md
	switch {
	case md.State == Ongoing:
		next := md.clone()
		next.State, next.LastUpdate = PrepareAbort, now
		if commit {
			next.State = PrepareCommit
		}
		return nil, m.begin(e, next)
	case md.State == CompleteCommit && commit, md.State == CompleteAbort && !commit:
		return nil, nil
	case md.State == PrepareCommit && commit, md.State == PrepareAbort && !commit:
		return kerr.ConcurrentTransactions, nil
	}
	return kerr.InvalidTxnState, nil
}

// MarkersWritten completes a prepared transaction once every marker is acknowledged.
func (m *Machine) MarkersWritten(id string, now time.Time) *Transition {
	e, ok := m.txns[id]
	if !ok || e.pending != nil || !e.md.State.preparing() {
		return nil
	}
	next := e.md.clone()
	next.State = CompleteAbort
	if e.md.State == PrepareCommit {
		next.State = CompleteCommit
	}
	next.Partitions, next.StartTime, next.LastUpdate = nil, time.Time{}, now
	return m.begin(e, next)
}

// PendingMarkers lists the ids whose transaction is prepared but not complete, sorted: a
// new leader writes their markers again.
func (m *Machine) PendingMarkers() []string {
	var out []string
	for id, e := range m.txns {
		if e.md.State.preparing() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Expired lists the ids whose transaction has been open longer than its timeout, sorted.
func (m *Machine) Expired(now time.Time) []string {
	var out []string
	for id, e := range m.txns {
		if e.md.State == Ongoing && e.pending == nil &&
			now.Sub(e.md.StartTime) > time.Duration(e.md.TimeoutMs)*time.Millisecond {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// AbortTimedOut decides the abort of a transaction past its timeout; nil when it is not
// (or no longer) one.
func (m *Machine) AbortTimedOut(id string, now time.Time) *Transition {
	e, ok := m.txns[id]
	if !ok || e.pending != nil || e.md.State != Ongoing {
		return nil
	}
	return m.begin(e, fenceAndAbort(e.md, now))
}

// ExpireIDs decides the removal of the ids idle for longer than expirationMs
// (transactional.id.expiration.ms), sorted by id.
func (m *Machine) ExpireIDs(now time.Time, expirationMs int64) []*Transition {
	var ids []string
	for id, e := range m.txns {
		if e.md.State.idle() && e.pending == nil && now.Sub(e.md.LastUpdate) > time.Duration(expirationMs)*time.Millisecond {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]*Transition, 0, len(ids))
	for _, id := range ids {
		e := m.txns[id]
		t := m.begin(e, e.md.clone())
		t.dead = true
		out = append(out, t)
	}
	return out
}
