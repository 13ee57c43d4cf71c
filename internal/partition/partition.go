// Package partition owns Kafka semantics over one partition's log: validating produce
// payloads, idempotent-producer dedupe, the acknowledgement boundaries of DESIGN.md §1
// (log end, flushed, majority replicated, committed, last visible), the flush policy
// (strict fsync or write caching with flush.ms / flush.bytes), waiters for each acks stage,
// and what Fetch and ListOffsets may see. It must not parse Kafka requests or touch the
// network, and it reaches disk only through internal/storage.
package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	etcdraft "go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/raft"
	"github.com/cairn-io/cairn/internal/recordbatch"
	"github.com/cairn-io/cairn/internal/storage"
)

// Options configures a partition replica. Storage must already be open; the partition
// owns it from then on, and adds its Raft group to Host.
type Options struct {
	Topic     string
	Partition int32
	Storage   *raft.LogStorage
	Host      *raft.Host
	// Group is the partition's Raft group id; Self this replica's Raft node id.
	Group, Self uint64
	// Replicas are the group's voters when it is created (ignored once the log holds a
	// configuration); empty means Self alone.
	Replicas []uint64
	Config   config.TopicConfig
	Logger   *slog.Logger
	// OnRoleChange, if set, is called (from the replica's own goroutine; it must not block)
	// when the replica's role, leader or term changes.
	OnRoleChange func()
}

// Boundaries are the partition's offsets, each exclusive (the next offset past the
// boundary), with the replica's view of its group.
type Boundaries struct {
	LogStart           int64
	LogEnd             int64
	Flushed            int64
	MajorityReplicated int64
	Committed          int64
	LastVisible        int64
	// LeaderEpoch is the Raft term.
	LeaderEpoch int32
	// Leader is the Raft id of the leader this replica knows (0: none); IsLeader whether
	// it is this replica.
	Leader   uint64
	IsLeader bool
}

// Partition is one replica of a partition: a Raft group whose log is the partition log
// (DESIGN.md §2). The leader accepts produce requests and serves reads; followers only
// replicate.
type Partition struct {
	topic string
	id    int32
	ls    *raft.LogStorage
	log   *storage.Log
	host  *raft.Host
	group uint64
	self  uint64
	cfg   atomic.Pointer[config.TopicConfig]
	lg    *slog.Logger

	// appendMu serializes appends with the producer-state checks that precede them, so a
	// sequence check and the append it admits are one step.
	appendMu  sync.Mutex
	producers map[int64]*producerState
	// prodTerm is the term the producer table was rebuilt for: a replica that becomes
	// leader rebuilds it from its log, which holds every batch the old leader may have
	// acknowledged. 0 forces a rebuild (a proposal failed).
	prodTerm uint64
	// unsettled are the proposals made since the last rebuild (pruned then).
	unsettled []*raft.Proposal

	mu       sync.Mutex
	bounds   Boundaries
	voters   []uint64                     // the group's voters (both halves of a joint config)
	progress map[uint64]raft.PeerProgress // leader: each voter's replication, as of the last refresh
	// caughtUp is when each voter last held the leader's whole log (flushed, or written
	// under write caching), for the ISR (DESIGN.md §3); reset when leadership changes.
	caughtUp map[uint64]time.Time
	// The replicate window: bytes reserved by producers (proposed or about to be) and the
	// appended entries holding them until they commit.
	inflightBytes int64
	inflight      []inflightEntry
	// leaderEnd is the leader's last Raft index as of the last refresh (what progress is
	// compared with); applied the last index applied on this replica.
	leaderEnd, applied uint64
	changed            chan struct{} // closed and replaced whenever a boundary moves
	watchers           map[chan struct{}]struct{}
	closed             bool

	onRole func()
	kick   chan struct{} // the Raft group moved: refresh the boundaries

	refreshMu sync.Mutex // serializes refresh (held across reading the group and applying)
	stop      chan struct{}
	done      chan struct{}
}

// Open builds the partition replica and starts its Raft group. A sole voter campaigns at
// once, and Open waits (briefly) until it leads, so a single-node partition is writable
// when Open returns.
func Open(opts Options) (*Partition, error) {
	lg := opts.Logger
	if lg == nil {
		lg = slog.Default()
	}
	p := &Partition{
		topic:     opts.Topic,
		id:        opts.Partition,
		ls:        opts.Storage,
		log:       opts.Storage.Log(),
		host:      opts.Host,
		group:     opts.Group,
		self:      opts.Self,
		lg:        lg.With("topic", opts.Topic, "partition", opts.Partition),
		producers: make(map[int64]*producerState),
		caughtUp:  make(map[uint64]time.Time),
		changed:   make(chan struct{}),
		watchers:  make(map[chan struct{}]struct{}),
		kick:      make(chan struct{}, 1),
		onRole:    opts.OnRoleChange,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	cfg := opts.Config
	p.cfg.Store(&cfg)
	voters := opts.Replicas
	if len(voters) == 0 {
		voters = []uint64{opts.Self}
	}
	p.bounds = Boundaries{LogStart: p.log.LogStartOffset(), LogEnd: p.log.LogEndOffset(), Flushed: p.log.FlushedOffset()}
	err := opts.Host.AddGroup(opts.Group, raft.GroupConfig{
		Storage:    opts.Storage,
		Bootstrap:  &raftpb.ConfState{Voters: voters},
		OnChange:   p.signal,
		FlushDelay: p.flushDelay,
	})
	if err != nil {
		return nil, err
	}
	fresh := p.log.LastIndex() == 0
	go p.refreshLoop()
	p.refresh()
	if fresh && len(voters) > 1 && voters[0] == opts.Self {
		// A new group's preferred leader campaigns at once rather than after an election
		// timeout: the partition is writable sooner after CreateTopics.
		_ = opts.Host.Campaign(opts.Group)
	}
	if st, err := opts.Host.Status(opts.Group); err == nil && len(st.Voters) == 1 && st.Voters[0] == opts.Self && len(st.VotersOutgoing) == 0 {
		if err := opts.Host.Campaign(opts.Group); err != nil {
			p.Close()
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Until the new term's first entry commits, the commit index may sit below what
		// was committed before the restart (it is persisted lazily): wait that out too,
		// so everything acknowledged before is readable when Open returns.
		if err := p.waitFor(ctx, func(b *Boundaries) bool { return b.IsLeader && b.Committed >= b.LogEnd }); err != nil {
			p.Close()
			return nil, fmt.Errorf("partition %s-%d: sole replica did not become leader: %w", opts.Topic, opts.Partition, err)
		}
	}
	return p, nil
}

// signal is the group's OnChange hook: it runs under the group's lock, so it only
// wakes refreshLoop.
func (p *Partition) signal() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *Partition) refreshLoop() {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
			p.refresh()
		}
	}
}

// refresh recomputes the boundaries from the Raft group and the log, and wakes everyone
// waiting on a boundary if any moved.
func (p *Partition) refresh() {
	// One at a time: a snapshot of the group read earlier must not overwrite a newer one.
	p.refreshMu.Lock()
	defer p.refreshMu.Unlock()
	st, err := p.host.Status(p.group)
	if err != nil {
		return // removed: Close is under way
	}
	committed := p.endOffset(st.Committed)
	b := Boundaries{
		LogStart:           p.log.LogStartOffset(),
		LogEnd:             p.log.LogEndOffset(),
		Flushed:            p.log.FlushedOffset(),
		Committed:          committed,
		MajorityReplicated: committed,
		LeaderEpoch:        int32(min(st.Term, math.MaxInt32)),
		Leader:             st.Leader,
		IsLeader:           st.State == etcdraft.StateLeader,
	}
	if b.IsLeader {
		b.MajorityReplicated = max(committed, p.endOffset(st.MajorityReplicated))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.onRole != nil && (p.bounds.IsLeader != b.IsLeader || p.bounds.Leader != b.Leader || p.bounds.LeaderEpoch != b.LeaderEpoch) {
		defer p.onRole()
	}
	p.releaseCommittedLocked(st.Committed, b.IsLeader && p.bounds.IsLeader && p.bounds.LeaderEpoch == b.LeaderEpoch)
	// Both halves of a joint configuration, each voter once.
	p.voters = append(p.voters[:0], st.Voters...)
	for _, v := range st.VotersOutgoing {
		if !slices.Contains(p.voters, v) {
			p.voters = append(p.voters, v)
		}
	}
	p.applied = st.Applied
	p.progress = st.Progress
	if !b.IsLeader || p.bounds.LeaderEpoch != b.LeaderEpoch || !p.bounds.IsLeader {
		clear(p.caughtUp) // a new leadership: every voter starts with the full window
	}
	p.leaderEnd = st.LogEnd
	if b.IsLeader {
		now := time.Now()
		writeCaching := p.cfg.Load().WriteCaching
		for _, v := range p.voters {
			pp := st.Progress[v]
			held := pp.Match
			if writeCaching {
				held = pp.Written
			}
			if _, ok := p.caughtUp[v]; !ok || held >= st.LogEnd {
				p.caughtUp[v] = now
			}
		}
	}
	p.advanceLocked(func(cur *Boundaries) {
		// A boundary read from the log a moment earlier may lag what the caller of
		// refresh already saw; offsets of one term never go back.
		if cur.LeaderEpoch == b.LeaderEpoch && cur.IsLeader == b.IsLeader {
			b.Committed = max(b.Committed, cur.Committed)
			b.MajorityReplicated = max(b.MajorityReplicated, cur.MajorityReplicated)
		}
		*cur = b
	})
}

// endOffset maps a Raft index to the Kafka offset just past its entry.
func (p *Partition) endOffset(index uint64) int64 {
	off, err := p.log.EndOffsetAt(index)
	if err != nil {
		return p.log.LogStartOffset()
	}
	return off
}

// flushDelay is the group's FlushDelay: under write caching, appends wait for flush.bytes
// or flush.ms, whichever comes first; strict topics flush at once.
func (p *Partition) flushDelay(unflushed int64, waited time.Duration) time.Duration {
	cfg := p.cfg.Load()
	if !cfg.WriteCaching || unflushed >= cfg.FlushBytes {
		return 0
	}
	return time.Duration(cfg.FlushMs)*time.Millisecond - waited
}

// WaitLeader blocks until this replica leads its group, or ctx ends.
func (p *Partition) WaitLeader(ctx context.Context) error {
	return p.waitFor(ctx, func(b *Boundaries) bool { return b.IsLeader })
}

// waitFor blocks until cond holds for the boundaries, the partition closes, or ctx ends.
func (p *Partition) waitFor(ctx context.Context, cond func(*Boundaries) bool) error {
	for {
		p.mu.Lock()
		if cond(&p.bounds) {
			p.mu.Unlock()
			return nil
		}
		if p.closed {
			p.mu.Unlock()
			return errPartitionClosed
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Topic and ID name the partition.
func (p *Partition) Topic() string { return p.topic }
func (p *Partition) ID() int32     { return p.id }

// Config is the partition's current effective topic configuration.
func (p *Partition) Config() config.TopicConfig { return *p.cfg.Load() }

// SetConfig applies a changed topic configuration at run time.
func (p *Partition) SetConfig(cfg config.TopicConfig) {
	p.cfg.Store(&cfg)
	p.log.SetOptions(cfg.SegmentBytes, cfg.SegmentMs)
	p.mu.Lock()
	p.advanceLocked(func(b *Boundaries) {}) // write caching may change what is visible
	p.mu.Unlock()
	p.signal()
}

// appliedOffset is the Kafka offset past the last entry applied on this replica: the log
// start may not pass it, or raft would find entries it has still to apply gone.
func (p *Partition) appliedOffset() int64 {
	p.mu.Lock()
	applied := p.applied
	p.mu.Unlock()
	return p.endOffset(applied)
}

// Voters is the group's current configuration as this replica knows it (both halves of a
// joint one), in Raft ids.
func (p *Partition) Voters() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]uint64(nil), p.voters...)
}

// replicaLagMax is replica.lag.time.max.ms: a voter that has not held the leader's whole
// log for this long drops out of the ISR.
const replicaLagMax = 30 * time.Second

// ISR returns the in-sync replicas (DESIGN.md §3), in Raft ids, the leader first; on a
// replica that does not lead it is empty.
func (p *Partition) ISR() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isrLocked(time.Now())
}

func (p *Partition) isrLocked(now time.Time) []uint64 {
	if !p.bounds.IsLeader {
		return nil
	}
	isr := []uint64{p.self}
	writeCaching := p.cfg.Load().WriteCaching
	for _, v := range p.voters {
		if v == p.self {
			continue
		}
		pp := p.progress[v]
		held := pp.Match
		if writeCaching {
			held = pp.Written
		}
		// Caught up within the window; or holding the whole log now, which an idle
		// partition's followers do without any event refreshing caughtUp (as long as
		// their broker is heard from).
		if now.Sub(p.caughtUp[v]) <= replicaLagMax || (held >= p.leaderEnd && p.host.PeerLive(v)) {
			isr = append(isr, v)
		}
	}
	return isr
}

// InsyncState summarizes replication health for metrics (DESIGN.md §3): the ISR size,
// the effective min.insync.replicas and the voter count. ok is false on a replica that
// does not lead (only the leader knows the ISR).
func (p *Partition) InsyncState() (isr, minISR, voters int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.bounds.IsLeader {
		return 0, 0, len(p.voters), false
	}
	return len(p.isrLocked(time.Now())), p.minInsyncLocked(), len(p.voters), true
}

// minInsync is the effective min.insync.replicas: the topic's value, capped by the number
// of voters (DESIGN.md §3).
func (p *Partition) minInsyncLocked() int {
	return max(1, min(p.cfg.Load().MinInsyncReplicas, len(p.voters)))
}

// holdersLocked counts the voters that hold the entry at index: flushed, or written under
// write caching.
func (p *Partition) holdersLocked(index uint64) int {
	writeCaching := p.cfg.Load().WriteCaching
	n := 0
	for _, v := range p.voters {
		pp := p.progress[v]
		held := pp.Match
		if writeCaching {
			held = pp.Written
		}
		if held >= index {
			n++
		}
	}
	return n
}

// Flushes counts the fsync rounds this replica has run.
func (p *Partition) Flushes() int64 {
	st, err := p.host.Status(p.group)
	if err != nil {
		return 0
	}
	return int64(st.Flushes)
}

// Boundaries returns a snapshot of the partition's offsets.
func (p *Partition) Boundaries() Boundaries {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bounds
}

// visibleLocked is what Fetch may return: committed, or majority replicated where the topic
// has write caching on.
func (p *Partition) visibleLocked(cfg *config.TopicConfig) int64 {
	if cfg.WriteCaching {
		return p.bounds.MajorityReplicated
	}
	return p.bounds.Committed
}

// advanceLocked applies fn to the boundaries, recomputes last visible and wakes everyone
// waiting on a boundary.
func (p *Partition) advanceLocked(fn func(b *Boundaries)) {
	fn(&p.bounds)
	p.bounds.LastVisible = p.visibleLocked(p.cfg.Load())
	close(p.changed)
	p.changed = make(chan struct{})
	for w := range p.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// Watch registers ch to receive a non-blocking signal whenever a boundary moves; Fetch
// long-polls on it across the partitions it reads.
func (p *Partition) Watch(ch chan struct{}) {
	p.mu.Lock()
	p.watchers[ch] = struct{}{}
	p.mu.Unlock()
}

// Unwatch removes a channel registered with Watch.
func (p *Partition) Unwatch(ch chan struct{}) {
	p.mu.Lock()
	delete(p.watchers, ch)
	p.mu.Unlock()
}

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

// Produce validates the payload and proposes it to the partition's Raft group. For acks 0
// and 1 the returned result is final once the leader appended the batch. For acks -1 the
// caller must call wait, which returns once the batch is committed (strict) or majority
// replicated (write caching), fails with NOT_LEADER_OR_FOLLOWER if a new leader truncated
// it, or REQUEST_TIMED_OUT when ctx ends. Nothing is stored when validation fails.
func (p *Partition) Produce(records []byte, acks int16) (ProduceResult, func(ctx context.Context) ProduceResult) {
	cfg := p.cfg.Load()
	batches, headers, err := SplitBatches(records, cfg.MaxMessageBytes)
	if err != nil {
		var ve *ValidationError
		errors.As(err, &ve)
		return failed(ve.Err, ve.Msg), nil
	}
	if len(batches) != 1 {
		return failed(kerr.InvalidRecord, "a produce request must carry exactly one record batch per partition"), nil
	}
	batch, h := batches[0], headers[0]
	if verr := checkRecords(cfg, batch); verr != nil {
		return failed(verr.Err, verr.Msg), nil
	}

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
	b := p.Boundaries()
	if p.isClosed() {
		p.appendMu.Unlock()
		unreserve()
		return failed(kerr.NotLeaderForPartition, "partition is closing"), nil
	}
	if !b.IsLeader {
		p.appendMu.Unlock()
		unreserve()
		return failed(kerr.NotLeaderForPartition, "this broker does not lead the partition"), nil
	}
	if acks == -1 {
		p.mu.Lock()
		isr, need := len(p.isrLocked(time.Now())), p.minInsyncLocked()
		p.mu.Unlock()
		if isr < need {
			p.appendMu.Unlock()
			unreserve()
			return failed(kerr.NotEnoughReplicas, fmt.Sprintf("the partition has %d in-sync replicas; min.insync.replicas needs %d", isr, need)), nil
		}
	}
	if p.prodTerm != uint64(b.LeaderEpoch) {
		if err := p.rebuildProducersLocked(); err != nil {
			p.appendMu.Unlock()
			unreserve()
			p.lg.Error("rebuilding producer state", "err", err)
			return failed(kerr.KafkaStorageError, err.Error()), nil
		}
		p.prodTerm = uint64(b.LeaderEpoch)
	}
	dupOf, dup, verr := p.checkSequence(h)
	if verr != nil {
		p.appendMu.Unlock()
		unreserve()
		return failed(verr.Err, verr.Msg), nil
	}
	if dup {
		p.appendMu.Unlock()
		unreserve()
		return p.produceDuplicate(h, dupOf, acks, b.LogStart)
	}
	// The batch is proposed where it lies in the request frame: etcd raft clones a proposed
	// entry when it appends it, and the host drops its reference once raft has appended it,
	// so nothing holds the frame for longer than that (frames are never reused). A copy here
	// was a third copy of every produced byte (6% of a broker's CPU under produce load).
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
	p.recordSequence(h, 0, prop)
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

// waitAcked waits until prop (whose records end at end) satisfies acks=-1: committed, or
// majority replicated under write caching, and held by min.insync.replicas voters.
func (p *Partition) waitAcked(ctx context.Context, prop *raft.Proposal, end int64) (ProduceResult, bool) {
	stage := raft.StageCommitted
	if p.cfg.Load().WriteCaching {
		stage = raft.StageReplicated
	}
	if err := prop.Wait(ctx, stage); err != nil {
		return p.proposalFailed(err), false
	}
	if p.Boundaries().LastVisible < end {
		p.refresh() // the boundaries show the batch before the client hears of it
	}
	if !p.waitHolders(ctx, prop.Index()) {
		return failed(kerr.NotEnoughReplicasAfterAppend, "the batch was appended but fewer replicas than min.insync.replicas hold it"), false
	}
	return ProduceResult{}, true
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
			if !p.waitHolders(ctx, upTo) {
				return failed(kerr.NotEnoughReplicasAfterAppend, "the batch is stored but fewer replicas than min.insync.replicas hold it")
			}
		}
		res.LogStartOffset = p.Boundaries().LogStart
		return res
	}
}

// storedIs reports whether the visible batch at base is h's (same producer, epoch and
// sequence range).
func (p *Partition) storedIs(base int64, h recordbatch.Header) bool {
	raw, err := p.log.ReadBatches(base, 1, p.Boundaries().LastVisible)
	if err != nil || len(raw) == 0 {
		return false
	}
	got, ok := recordbatch.ParseHeader(raw)
	return ok && got.BaseOffset == base && got.ProducerID == h.ProducerID && got.ProducerEpoch == h.ProducerEpoch &&
		got.BaseSequence == h.BaseSequence && got.LastSequence() == h.LastSequence()
}

// waitAppended waits (bounded) until the leader appended prop. If it failed, the producer
// table may name a batch the log does not hold: it is rebuilt from the log before the next
// produce.
func (p *Partition) waitAppended(prop *raft.Proposal) error {
	ctx, cancel := context.WithTimeout(context.Background(), appendTimeout)
	defer cancel()
	err := prop.Wait(ctx, raft.StageAppended)
	if err != nil {
		p.appendMu.Lock()
		p.prodTerm = 0
		p.appendMu.Unlock()
	}
	return err
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
	return p.rebuildProducers()
}

// maxInflightBytes is the partition's replicate window: the bytes of batches proposed but
// not yet committed. A producer beyond it waits (backpressure) instead of growing Raft's
// in-memory log without bound.
const maxInflightBytes = 64 << 20

// reserveWindow takes size bytes of the window, waiting (bounded) for commits to free
// room. A batch larger than the whole window gets it alone.
func (p *Partition) reserveWindow(size int64) bool {
	deadline := time.Now().Add(appendTimeout)
	for {
		p.mu.Lock()
		if p.inflightBytes == 0 || p.inflightBytes+size <= maxInflightBytes {
			p.inflightBytes += size
			p.mu.Unlock()
			return true
		}
		if p.closed {
			p.mu.Unlock()
			return false
		}
		ch := p.changed
		p.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

func (p *Partition) releaseWindow(size int64) {
	p.mu.Lock()
	p.inflightBytes -= size
	p.advanceLocked(func(*Boundaries) {}) // wake producers waiting for room
	p.mu.Unlock()
}

// trackInflight remembers an appended entry's size until it commits.
func (p *Partition) trackInflight(index uint64, size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.bounds.IsLeader {
		p.inflightBytes -= size // leadership already ended: nothing will release it
		return
	}
	p.inflight = append(p.inflight, inflightEntry{index, size})
	// Appends finish in index order but are recorded by concurrent producers: keep the
	// list sorted (an insertion from the back).
	for i := len(p.inflight) - 1; i > 0 && p.inflight[i-1].index > p.inflight[i].index; i-- {
		p.inflight[i-1], p.inflight[i] = p.inflight[i], p.inflight[i-1]
	}
}

type inflightEntry struct {
	index uint64
	size  int64
}

// releaseCommittedLocked frees the window of entries at or below committed, or of all of
// them when this replica no longer leads.
func (p *Partition) releaseCommittedLocked(committed uint64, leader bool) {
	n := 0
	for n < len(p.inflight) && (!leader || p.inflight[n].index <= committed) {
		p.inflightBytes -= p.inflight[n].size
		n++
	}
	if n > 0 {
		p.inflight = append(p.inflight[:0], p.inflight[n:]...)
	}
}

// waitHolders waits until at least min.insync.replicas voters hold the entry at index;
// false if ctx ends first (or the replica stops leading).
func (p *Partition) waitHolders(ctx context.Context, index uint64) bool {
	held := false
	err := p.waitFor(ctx, func(b *Boundaries) bool {
		held = p.holdersLocked(index) >= p.minInsyncLocked() // waitFor holds p.mu
		return held || !b.IsLeader
	})
	return err == nil && held
}

// appendTimeout bounds how long a produce waits for the leader's own append (no fsync,
// no network): only a wedged group gets near it.
const appendTimeout = 10 * time.Second

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

var errPartitionClosed = errors.New("partition closed")

func (p *Partition) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// WaitVisible blocks until last visible reaches end, the partition closes, or ctx ends.
func (p *Partition) WaitVisible(ctx context.Context, end int64) error {
	return p.waitFor(ctx, func(b *Boundaries) bool { return b.LastVisible >= end })
}

// stop removes the group from the host (its waiting proposals fail) and stops the
// refresher; it reports whether this call was the one that stopped it.
func (p *Partition) stopGroup() bool {
	// appendMu keeps an append that already passed the closed check from landing after
	// the group is gone.
	p.appendMu.Lock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.appendMu.Unlock()
		return false
	}
	p.closed = true
	p.mu.Unlock()
	p.appendMu.Unlock()
	if err := p.host.RemoveGroup(p.group); err != nil && !errors.Is(err, raft.ErrHostClosed) {
		p.lg.Warn("removing raft group", "err", err)
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	p.advanceLocked(func(b *Boundaries) { b.IsLeader = false })
	p.mu.Unlock()
	return true
}

// Close stops the replica and closes its log (flushing what write caching held back).
func (p *Partition) Close() error {
	if !p.stopGroup() {
		return nil
	}
	return p.ls.Close()
}

// Delete stops the replica and removes its data.
func (p *Partition) Delete() error {
	p.stopGroup()
	return p.log.Delete()
}
