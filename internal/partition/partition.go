// Package partition owns Kafka semantics over one partition's log: validating produce
// payloads, idempotent-producer dedupe, the write side of transactions (transactional
// batches admitted once the partition is in the producer's transaction, and the markers
// that end them, txnwrite.go) and the transaction index read_committed reads
// (txnindex.go), the acknowledgement boundaries of DESIGN.md §1
// (log end, flushed, majority replicated, committed, last visible), the flush policy
// (strict fsync or write caching with flush.ms / flush.bytes), waiters for each acks stage,
// and what Fetch and ListOffsets may see. It must not parse Kafka requests or touch the
// network, and it reaches disk only through internal/storage.
//
// Transactions (DESIGN.md §10), read side: the transaction index (txnindex.go, fed by
// txnapply.go) gives the last stable offset, a boundary like the others
// (Boundaries.LastStable), and the aborted transactions. A read_committed Fetch
// (FetchRequest.ReadCommitted) and ListOffsets read up to the last stable offset and a
// Fetch lists the aborted transactions among its records (txnread.go); read_uncommitted
// reads up to last visible, as before.
//
// Scripts in testdata/ (datadriven format, run by script_test.go) step replicas of one
// partition deterministically on internal/raft/rafttest's driver: produce admission and
// completion, acks stages and boundaries, follower fetching at both isolation levels, with
// the network, fsyncs and clock in the script's hands.
package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/raft"
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
	// configuration); empty means Self alone. They are written as the log's first entries
	// (raft.GroupConfig.BootstrapInLog), so a replica added later learns them.
	Replicas []uint64
	// Join: the replica was added by a reassignment (or is rebuilt after its data was
	// lost). It bootstraps nothing (Replicas is ignored) and never campaigns on open: it
	// learns every configuration from the group's leader, as a learner first. A replica
	// that bootstrapped itself with the initial voters could elect itself with other
	// fresh ones: two leaders of one partition.
	Join   bool
	Config config.TopicConfig
	// Racks are the brokers' declared racks, for min.insync.racks (SetRacks changes them).
	Racks  Racks
	Logger *slog.Logger
	// ReplicaLagMax is the ISR's lag window (replica.lag.time.max.ms): a voter that has not
	// held the leader's whole log for this long leaves the ISR. 0 is DefaultReplicaLagMax.
	ReplicaLagMax time.Duration
	// Clock, if set, is the time the ISR's lag window is measured on, instead of the wall
	// clock: a deterministic test's manual clock.
	Clock func() time.Time
	// OnRoleChange, if set, is called (from the replica's own goroutine; it must not block)
	// when the replica's role, leader or term changes.
	OnRoleChange func()

	// steppedRefresh leaves the refresher to the test (scripts): no goroutine refreshes on
	// the group's OnChange; refreshIfSignalled does, when the test says.
	steppedRefresh bool
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
	racks atomic.Pointer[Racks]
	lg    *slog.Logger
	now   func() time.Time // the ISR's clock (Options.Clock)
	// lagMax is the ISR's lag window (Options.ReplicaLagMax), fixed for the replica's life.
	lagMax time.Duration

	// appendMu serializes appends with the producer-state checks that precede them, so a
	// sequence check and the append it admits are one step.
	appendMu  sync.Mutex
	producers map[int64]*producerState
	// guards are the KIP-890 verification guards handed out by BeginTxnVerification, by
	// producer id (txnwrite.go); guardSeq the last one given (they are never reused).
	guards   map[int64]txnGuard
	guardSeq uint64
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
	// heldSeen is each voter's held index (heldBy) at the last refresh that moved it: a
	// voter whose index moves again was heard from. Reset with caughtUp.
	heldSeen map[uint64]uint64
	// The replicate window: bytes reserved by producers (proposed or about to be) and the
	// appended entries holding them until they commit.
	inflightBytes int64
	inflight      []inflightEntry
	// leaderEnd is the leader's last Raft index as of the last refresh (what progress is
	// compared with); applied the last index applied on this replica.
	leaderEnd, applied uint64
	// appliedEnd is the offset past the entry at applied, and openFrom the first offset of
	// the oldest open transaction (math.MaxInt64: none), as of the last refresh: with last
	// visible they make the last stable offset (Boundaries.LastStable).
	appliedEnd, openFrom int64
	// termCommitted and termReplicated: this replica leads and an entry of its own term is
	// committed, or (what write caching shows) majority replicated, as of the last refresh
	// (Boundaries.Serving).
	termCommitted, termReplicated bool
	changed                       chan struct{} // closed and replaced whenever a boundary moves
	watchers                      map[chan struct{}]struct{}
	// version counts the boundary moves (advanceLocked), so that a fetch session can tell
	// a partition that moved from one that did not without taking its lock.
	version atomic.Uint64
	closed  bool

	onRole func()
	kick   chan struct{} // the Raft group moved: refresh the boundaries

	// txnMu guards txns, which the raft worker feeds (txnapply.go) and readers query; it is
	// taken alone, never with mu or the group's lock.
	txnMu sync.Mutex
	txns  *txnIndex
	// txnFed is the index of the last entry the Apply hook was given: a later first entry
	// means a snapshot skipped some.
	txnFed uint64

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
	now := opts.Clock
	if now == nil {
		now = time.Now
	}
	lagMax := opts.ReplicaLagMax
	if lagMax <= 0 {
		lagMax = DefaultReplicaLagMax
	}
	p := &Partition{
		now:       now,
		lagMax:    lagMax,
		topic:     opts.Topic,
		id:        opts.Partition,
		ls:        opts.Storage,
		log:       opts.Storage.Log(),
		host:      opts.Host,
		group:     opts.Group,
		self:      opts.Self,
		lg:        lg.With("topic", opts.Topic, "partition", opts.Partition),
		producers: make(map[int64]*producerState),
		guards:    make(map[int64]txnGuard),
		caughtUp:  make(map[uint64]time.Time),
		heldSeen:  make(map[uint64]uint64),
		changed:   make(chan struct{}),
		watchers:  make(map[chan struct{}]struct{}),
		kick:      make(chan struct{}, 1),
		openFrom:  math.MaxInt64,
		onRole:    opts.OnRoleChange,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	cfg := opts.Config
	p.cfg.Store(&cfg)
	p.racks.Store(&opts.Racks)
	voters := opts.Replicas
	if len(voters) == 0 {
		voters = []uint64{opts.Self}
	}
	p.bounds = Boundaries{LogStart: p.log.LogStartOffset(), LogEnd: p.log.LogEndOffset(), Flushed: p.log.FlushedOffset()}
	// Before AddGroup, which writes the bootstrap configuration into an empty log.
	fresh := p.log.LastIndex() == 0 && p.log.FirstIndex() == 1
	if err := p.buildTxnIndex(); err != nil {
		return nil, fmt.Errorf("partition %s-%d: reading transactions from the log: %w", opts.Topic, opts.Partition, err)
	}
	gc := raft.GroupConfig{
		Apply:          p.applyCommitted,
		Storage:        opts.Storage,
		BootstrapInLog: true,
		OnChange:       p.signal,
		FlushDelay:     p.flushDelay,
		ShareVisible:   func() bool { return p.cfg.Load().WriteCaching },
	}
	if !opts.Join {
		gc.Bootstrap = &raftpb.ConfState{Voters: voters}
	}
	if err := opts.Host.AddGroup(opts.Group, gc); err != nil {
		return nil, err
	}
	if opts.steppedRefresh {
		close(p.done)
	} else {
		go p.refreshLoop()
	}
	p.refresh()
	if fresh && !opts.Join && len(voters) > 1 && voters[0] == opts.Self {
		// A new group's preferred leader campaigns at once rather than after an election
		// timeout: the partition is writable sooner after CreateTopics.
		_ = opts.Host.Campaign(opts.Group)
	}
	// A joiner that has not yet replayed the log to where it was added (raft's join gate)
	// may hold an old configuration in which it was the only voter: it must not lead.
	if st, err := opts.Host.Status(opts.Group); err == nil && !st.JoinGated && len(st.Voters) == 1 && st.Voters[0] == opts.Self && len(st.VotersOutgoing) == 0 {
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

// refreshIfSignalled is one step of refreshLoop, for a test that steps it: a refresh if
// the group moved since the last one.
func (p *Partition) refreshIfSignalled() {
	select {
	case <-p.kick:
		p.refresh()
	default:
	}
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

// Flushes counts the fsync rounds this replica has run.
func (p *Partition) Flushes() int64 {
	st, err := p.host.Status(p.group)
	if err != nil {
		return 0
	}
	return int64(st.Flushes)
}

var errPartitionClosed = errors.New("partition closed")

func (p *Partition) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
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

// LogPosition is the index and term of the last entry this replica holds (written, maybe
// not yet flushed): how far its log goes, by raft's measure.
func (p *Partition) LogPosition() (index, term uint64) {
	index = p.ls.WrittenIndex()
	term, _ = p.ls.Term(index)
	return index, term
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
