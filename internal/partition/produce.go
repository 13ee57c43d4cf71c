package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Produce: validation, admission, the proposal, and the acknowledgement each acks value
// waits for (DESIGN.md §1).

// ProduceResult is what a Produce response reports for one partition.
type ProduceResult struct {
	BaseOffset     int64
	LogStartOffset int64
	Err            *kerr.Error
	Msg            string
}

func failed(err *kerr.Error, msg string) ProduceResult {
	return ProduceResult{BaseOffset: -1, LogStartOffset: -1, Err: err, Msg: msg}
}

// Produce validates the payload, admits it and proposes it to the partition's Raft group.
// For acks 0 and 1 the returned result is final once the leader appended the batch. For
// acks -1 the caller must call wait, which returns once the batch is committed (strict) or
// majority replicated (write caching), fails with NOT_LEADER_OR_FOLLOWER if a new leader
// truncated it, or REQUEST_TIMED_OUT when ctx ends. Nothing is stored when validation or
// admission fails. A transactional batch is refused here: it is admitted only through
// ProduceTxn, once the partition is known to be in the producer's transaction.
func (p *Partition) Produce(records []byte, acks int16) (ProduceResult, func(ctx context.Context) ProduceResult) {
	batch, h, rejected := validateProduce(p.cfg.Load(), records, false)
	if rejected != nil {
		return *rejected, nil
	}
	return p.appendBatch(batch, h, acks, plainAdmit{})
}

// appendBatch is the write path every batch shares, a client's or a transaction marker:
// the replicate window, admission under appendMu (the common checks, then adm's), the
// proposal, and the acknowledgement acks asks for. batch must be validated already.
func (p *Partition) appendBatch(batch []byte, h recordbatch.Header, acks int16, adm admitter) (ProduceResult, func(ctx context.Context) ProduceResult) {
	size := int64(len(batch))
	if !p.reserveWindow(size) {
		return failed(kerr.RequestTimedOut, "the partition's in-flight window stayed full: replication is not keeping up; retry"), nil
	}
	reserved := true
	unreserve := func() {
		if reserved {
			reserved = false
			p.releaseWindow(size)
		}
	}

	p.appendMu.Lock()
	dec := p.admitLocked(h, acks, adm)
	b := dec.bounds
	if dec.rejected != nil || dec.duplicate {
		p.appendMu.Unlock()
		unreserve()
		if dec.rejected != nil {
			return *dec.rejected, nil
		}
		return p.produceDuplicate(h, dec.dupOf, acks, b.LogStart)
	}
	// The batch is proposed where it lies in the request frame, and raft appends it there
	// too (third_party/etcd-raft does not clone proposals): frames are never reused, and
	// the raft log cache counts the frame an entry keeps alive. Each copy here or in raft
	// cost 6-9% of a broker's CPU under produce load.
	// Proposals are queued in request order under appendMu, but their appends are awaited
	// outside it, so concurrent requests ride one Raft append and one fsync. The proposal
	// is bound to the term the producer table was checked for: if leadership moved
	// meanwhile it fails rather than land with a stale dedupe decision.
	prop, err := p.host.ProposeAsyncInTerm(p.group, batch, p.prodTerm)
	if err != nil {
		p.appendMu.Unlock()
		unreserve()
		return p.proposalFailed(err), nil
	}
	adm.admittedLocked(p, h, prop)
	if len(p.unsettled) >= 64 {
		p.unsettled = slices.DeleteFunc(p.unsettled, (*raft.Proposal).Settled)
	}
	p.unsettled = append(p.unsettled, prop)
	p.appendMu.Unlock()

	if err := p.waitAppended(prop); err != nil {
		unreserve()
		return p.proposalFailed(err), nil
	}
	base, records32 := prop.BaseOffset(), h.Records()
	p.trackInflight(prop.Index(), size)
	reserved = false // released when the entry commits (refresh) or leadership ends

	res := ProduceResult{BaseOffset: base, LogStartOffset: b.LogStart}
	if acks != -1 {
		return res, nil // the host's OnChange after the append refreshes the boundaries
	}
	end := base + int64(records32)
	return res, func(ctx context.Context) ProduceResult {
		if r, ok := p.waitAcked(ctx, prop, end); !ok {
			return r
		}
		res.LogStartOffset = p.Boundaries().LogStart
		return res
	}
}

// validateProduce checks a produce payload against the topic's configuration: exactly
// one well-formed batch within max.message.bytes, with records the topic accepts,
// transactional exactly when txn is set (and then from an idempotent producer, as every
// transactional producer is). It reads no partition state, so it runs before the request
// takes any of the partition's locks or window.
func validateProduce(cfg *config.TopicConfig, records []byte, txn bool) ([]byte, recordbatch.Header, *ProduceResult) {
	reject := func(err *kerr.Error, msg string) ([]byte, recordbatch.Header, *ProduceResult) {
		r := failed(err, msg)
		return nil, recordbatch.Header{}, &r
	}
	batches, headers, err := SplitBatches(records, cfg.MaxMessageBytes)
	if err != nil {
		var ve *ValidationError
		errors.As(err, &ve)
		return reject(ve.Err, ve.Msg)
	}
	if len(batches) != 1 {
		return reject(kerr.InvalidRecord, "a produce request must carry exactly one record batch per partition")
	}
	h := headers[0]
	switch isTxn := h.Attributes&recordbatch.AttrTransactional != 0; {
	case isTxn && !txn:
		return reject(kerr.InvalidRecord, "a transactional batch needs a transactional id")
	case !isTxn && txn:
		return reject(kerr.InvalidRecord, "a transactional produce must carry a transactional batch")
	case isTxn && (h.ProducerID < 0 || h.ProducerEpoch < 0):
		// A sequence may be missing (-1) only in a batch the group coordinator writes for
		// TxnOffsetCommit; the Kafka layer refuses one from a client (broker.ProduceTxn).
		return reject(kerr.InvalidRecord, "a transactional batch must carry a producer id and epoch")
	}
	if verr := checkRecords(cfg, batches[0]); verr != nil {
		return reject(verr.Err, verr.Msg)
	}
	return batches[0], h, nil
}

// admission is admitLocked's decision on a validated batch: refused (rejected set), a
// retry of a batch already admitted (duplicate, answered with the original dupOf), or
// neither, when the batch may be proposed. dupOf is held by value so that admitting a
// batch allocates nothing.
type admission struct {
	bounds    Boundaries     // the boundaries the decision was made on
	rejected  *ProduceResult // refused: nothing is appended
	duplicate bool
	dupOf     seqBatch
}

// admitter is what admission does differently for a client's batch, a transactional batch
// and a transaction marker. Both methods run under appendMu on the leader, with the
// producer table current: decideLocked refuses the batch, names the original of a retry,
// or admits it (bounds are filled in by admitLocked); admittedLocked records the proposed
// batch in the producer table.
type admitter interface {
	decideLocked(p *Partition, h recordbatch.Header) admission
	admittedLocked(p *Partition, h recordbatch.Header, prop *raft.Proposal)
}

func refuse(err *kerr.Error, msg string) admission {
	r := failed(err, msg)
	return admission{rejected: &r}
}

// plainAdmit admits a client's non-transactional batch: idempotent producers' sequence
// rules. It is empty, so passing it as an admitter allocates nothing.
type plainAdmit struct{}

func (plainAdmit) decideLocked(p *Partition, h recordbatch.Header) admission {
	dupOf, dup, verr := p.checkSequence(h)
	switch {
	case verr != nil:
		return refuse(verr.Err, verr.Msg)
	case dup:
		return admission{duplicate: true, dupOf: dupOf}
	}
	// As Kafka does: a batch outside the transaction would land inside it, where neither
	// a commit nor an abort covers it.
	if st := p.producers[h.ProducerID]; h.ProducerID >= 0 && st != nil && st.txnOpen {
		return refuse(kerr.InvalidTxnState, "the producer has a transaction open on this partition: its batches must be transactional")
	}
	return admission{}
}

func (plainAdmit) admittedLocked(p *Partition, h recordbatch.Header, prop *raft.Proposal) {
	p.recordSequence(h, 0, prop)
}

// admitLocked decides whether this replica may append a validated batch now: it must be
// open and lead; an acks=all batch needs min.insync.replicas in-sync replicas before it
// is appended (DESIGN.md §3); and then adm decides (for an idempotent producer's batch, it
// must follow on its sequence, or repeat one already admitted). It runs under appendMu,
// held until the batch it admits is proposed, so the producer-table check and the
// proposal are one step. The cheap checks come first: a replica that does not lead, or an
// acks=all batch that min.insync refuses, costs no rebuild of the producer table from the
// log.
func (p *Partition) admitLocked(h recordbatch.Header, acks int16, adm admitter) admission {
	b := p.Boundaries()
	reject := func(err *kerr.Error, msg string) admission {
		r := failed(err, msg)
		return admission{bounds: b, rejected: &r}
	}
	if p.isClosed() {
		return reject(kerr.NotLeaderForPartition, "partition is closing")
	}
	if !b.IsLeader {
		return reject(kerr.NotLeaderForPartition, "this broker does not lead the partition")
	}
	if acks == -1 {
		p.mu.Lock()
		isr, need := p.isrLocked(p.now()), p.minInsyncLocked()
		var rackShort string
		if len(isr) >= need { // each rule has its own message; min.insync.replicas's comes first
			rackShort = p.isrRackShortfallLocked(isr)
		}
		p.mu.Unlock()
		if len(isr) < need {
			return reject(kerr.NotEnoughReplicas, fmt.Sprintf("the partition has %d in-sync replicas; min.insync.replicas needs %d", len(isr), need))
		}
		if rackShort != "" {
			return reject(kerr.NotEnoughReplicas, rackShort)
		}
	}
	if err := p.currentProducersLocked(b); err != nil {
		return reject(kerr.KafkaStorageError, err.Error())
	}
	dec := adm.decideLocked(p, h)
	dec.bounds = b
	return dec
}

// currentProducersLocked rebuilds the producer table from the log if it was not built for
// the term b is in (under appendMu, on the leader).
func (p *Partition) currentProducersLocked(b Boundaries) error {
	if p.prodTerm == uint64(b.LeaderEpoch) {
		return nil
	}
	if err := p.rebuildProducersLocked(); err != nil {
		p.lg.Error("rebuilding producer state", "err", err)
		return err
	}
	p.prodTerm = uint64(b.LeaderEpoch)
	return nil
}

// produceDuplicate answers a retried batch with the offset of its original. For acks=-1
// the retry is acknowledged only under the same rule as the original: through the
// original's own proposal while this leader still tracks it, else once the offset is
// visible, the batch stored there is still this producer's (a new leader may have
// replaced it), and min.insync.replicas voters hold the log up to now.
func (p *Partition) produceDuplicate(h recordbatch.Header, orig seqBatch, acks int16, logStart int64) (ProduceResult, func(context.Context) ProduceResult) {
	base := orig.baseOffset
	if orig.prop != nil { // the original is still on its way into the log
		if err := p.waitAppended(orig.prop); err != nil {
			return p.proposalFailed(err), nil
		}
		base = orig.prop.BaseOffset()
	}
	res := ProduceResult{BaseOffset: base, LogStartOffset: logStart}
	if acks != -1 {
		return res, nil
	}
	end := base + int64(orig.records)
	return res, func(ctx context.Context) ProduceResult {
		if orig.prop != nil {
			if r, ok := p.waitAcked(ctx, orig.prop, end); !ok {
				return r
			}
		} else {
			if err := p.WaitVisible(ctx, end); err != nil {
				return p.proposalFailed(err)
			}
			if !p.storedIs(base, h) {
				return failed(kerr.NotLeaderForPartition, "the original of this retried batch was replaced by a new leader's log; retry")
			}
			p.mu.Lock()
			upTo := p.leaderEnd
			p.mu.Unlock()
			if r, ok := p.waitHolders(ctx, upTo, "the batch is stored but fewer replicas than min.insync.replicas hold it"); !ok {
				return r
			}
		}
		res.LogStartOffset = p.Boundaries().LogStart
		return res
	}
}

// storedIs reports whether the visible batch at base is h's (same producer, epoch and
// sequence range, and both markers or both data).
func (p *Partition) storedIs(base int64, h recordbatch.Header) bool {
	raw, err := p.log.ReadBatches(base, 1, p.Boundaries().LastVisible)
	if err != nil || len(raw) == 0 {
		return false
	}
	got, ok := recordbatch.ParseHeader(raw)
	return ok && got.BaseOffset == base && got.ProducerID == h.ProducerID && got.ProducerEpoch == h.ProducerEpoch &&
		got.BaseSequence == h.BaseSequence && got.LastSequence() == h.LastSequence() &&
		got.Attributes&recordbatch.AttrControl == h.Attributes&recordbatch.AttrControl
}

// rebuildProducersLocked rebuilds the producer table from the log once every proposal in
// flight has been appended or has failed (under appendMu).
func (p *Partition) rebuildProducersLocked() error {
	for _, prop := range p.unsettled {
		ctx, cancel := context.WithTimeout(context.Background(), appendTimeout)
		_ = prop.Wait(ctx, raft.StageAppended)
		cancel()
	}
	p.unsettled = p.unsettled[:0]
	clear(p.producers)
	// A guard is not in the log: the rebuilt table may hold a marker this replica applied
	// as a follower after the guard was given, and a guard that outlived that marker would
	// admit a late batch into a transaction already ended (KIP-890's hanging transaction).
	clear(p.guards)
	return p.rebuildProducers()
}

// proposalFailed maps a proposal's failure to the Produce error a client sees.
func (p *Partition) proposalFailed(err error) ProduceResult {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return failed(kerr.RequestTimedOut, "the batch was appended but not acknowledged within the timeout")
	case errors.Is(err, raft.ErrTruncated):
		return failed(kerr.NotLeaderForPartition, "a new leader replaced the batch before it was committed; retry")
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrGroupRemoved), errors.Is(err, raft.ErrHostClosed),
		errors.Is(err, raft.ErrUnknownGroup), errors.Is(err, errPartitionClosed):
		return failed(kerr.NotLeaderForPartition, "this broker no longer leads the partition; retry")
	default:
		p.lg.Error("produce failed", "err", err)
		return failed(kerr.KafkaStorageError, err.Error())
	}
}
