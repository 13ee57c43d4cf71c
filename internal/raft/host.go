package raft

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The multi-raft host.
//
// One Host per broker drives every Raft group the broker holds a replica of. Groups have
// no goroutines of their own: a fixed pool of workers takes group ids off a ready queue (a
// group is queued when it has work: an incoming message, a proposal, a tick that produced
// work, a finished flush), and a fixed pool of flushers makes appended entries durable.
// One ticker goroutine ticks every group.
//
// # The write path of one group (AsyncStorageWrites)
//
// A worker steps the group's inputs into its RawNode and handles each Ready:
//
//  1. MsgStorageAppend: the snapshot (if any) and the entries are written to the log at
//     once (LogStorage.Append: the log end moves, nothing is durable yet). A follower then
//     sends its leader a WrittenReport for every MsgAppResp the message carries: "written
//     up to N in your term T", before any fsync. The message's HardState and responses are
//     queued for the group's flusher.
//  2. The flusher takes every queued record of the group (several Readys become one
//     fsync: group commit), calls LogStorage.Flush, then SetHardState with the newest
//     HardState among them, and only then delivers the responses: local ones (the
//     leader's self-acknowledgement MsgAppResp, MsgStorageAppendResp, a self vote) back
//     to the group's inbox, remote ones (MsgAppResp, vote responses) to the transport.
//     Because the HardState is persisted after the flush that covers every entry its
//     commit index can name, a persisted commit index never gets ahead of the flushed
//     log (which Open would reject with ErrStateAhead).
//  3. MsgStorageApply: committed entries are applied inline (configuration changes
//     through RawNode.ApplyConfChange and LogStorage.SetConfState, then the group's
//     ApplyFunc) and the responses stepped back at once.
//  4. Messages to other nodes go to the transport.
//
// # Why raft's commit index is flush-aware here
//
// raft advances a leader's commit index from the Match of each voter's Progress. A
// follower's Match moves only on its MsgAppResp, and the leader's own Match only on the
// MsgAppResp it sends itself; with AsyncStorageWrites both are responses inside a
// MsgStorageAppend, and the host delivers those only after the flush that covers the
// entries (step 2). So the leader's own unflushed entries never count, and a follower's
// count only once it has flushed them: committed = the joint quorum of min(flushed, match).
//
// # The majority-replicated boundary
//
// That boundary lives above the library (DESIGN.md §2): followers report written (not
// flushed) indexes, and the leader takes the joint quorum (quorum.JointConfig.
// CommittedIndex) over {its own written index, each follower's largest report for the
// current term, raft's Match as a floor}. The result counts only if the entry at that
// index has the current term (as raft does for commit); otherwise the boundary stays
// where it was. It is never below the commit index. Reports are reset when the term or
// the role changes.

// # Ticking idle groups
//
// The ticker ticks a group in place (TryLock, Tick, HasReady) and queues it only if the
// tick produced work; a group's sole voter that leads is not ticked at all. Replicated
// groups that are idle quiesce (quiesce.go): no replica ticks them, or even visits them
// (the ticker walks only the active ones, listing.go), and one coalesced HostHeartbeat per
// pair of hosts per tick (Batch.Heartbeat) stands in for their per-group raft heartbeats;
// a follower whose listing stops being confirmed ticks again, so raft's own election
// timeout takes over.

// MessageSender carries a host's traffic to another host. Send must not block for long;
// it may drop (raft recovers from lost messages). Send takes ownership of b.
type MessageSender interface {
	Send(to uint64, b *Batch)
}

// GroupMessage is one raft message of one group.
type GroupMessage struct {
	Group uint64
	Msg   *pb.Message
}

// WrittenReport is a follower's report to the leader of Group that its log holds the
// leader's entries up to Index (written, maybe not yet fsynced), sent in leader term Term.
type WrittenReport struct {
	Group, Term, Index uint64
}

// Batch is what one host sends another in one go: raft messages of any number of groups
// and host-level written and visible reports (at most one of each per group).
type Batch struct {
	From     uint64
	Messages []GroupMessage
	Written  []WrittenReport
	// Visible are a leader's reports of its visible index (visible.go), at most one per
	// group. raftrpc sends them as a message of their own type.
	Visible []VisibleReport
	// Heartbeat, if set, is the sender's coalesced liveness heartbeat (see quiesce.go).
	// Any batch shows the receiver that the sender is alive.
	Heartbeat *HostHeartbeat
}

// ApplyFunc is called by a worker with the committed entries of a group, in order (data
// and internal entries alike). It must not block for long. After a restart, entries above
// the last configuration change are delivered again (the log is the state machine).
type ApplyFunc func(group uint64, ents []*pb.Entry)

// HostOptions configures a Host.
type HostOptions struct {
	NodeID    uint64
	Transport MessageSender
	// TickInterval is the length of a raft tick (default 100ms).
	TickInterval time.Duration
	// ElectionTicks and HeartbeatTicks are raft's ElectionTick and HeartbeatTick
	// (default 10 and 1).
	ElectionTicks, HeartbeatTicks int
	// Workers is the size of the worker pool (default GOMAXPROCS).
	Workers int
	// Flushers is the size of the flusher pool (default DefaultFlushers).
	Flushers int
	// ElectionBacklog is how many term, vote and vote-answer writes may wait for the
	// flushers before the replicas without a leader stop their election clocks (default
	// DefaultElectionBacklog; see electionBacklogged).
	ElectionBacklog int
	// Logger is raft's logger (default: discard everything but panics).
	Logger etcdraft.Logger
	// MaxSizePerMsg, MaxInflightMsgs and MaxInflightBytes bound replication traffic to each
	// follower of a group (default 1 MiB, 256 and 8 MiB). The byte bound keeps one busy
	// group from filling the transport's queue to a peer on its own (refused sends make raft
	// fall back to probing that follower).
	MaxSizePerMsg    uint64
	MaxInflightMsgs  int
	MaxInflightBytes uint64
	// LearnerRate, if set, bounds the bytes per second of log entries this host sends to
	// learners (replicas being added to a group), over all its groups: 0 is unbounded.
	// It is asked on every such send, so it may change at run time (see pacer.go).
	LearnerRate func() int64

	// flushGate, if set, is called by a flusher before it flushes a group (tests hold
	// flushes with it).
	flushGate func(group uint64)
}

// Clock is the time a host's write caching waits on: the wall clock for a Host, a
// deterministic test's manual clock for a DrivenHost.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (a manual clock: on the goroutine that moves
	// it) once d has passed.
	AfterFunc(d time.Duration, f func())
}

type wallClock struct{}

func (wallClock) Now() time.Time                      { return time.Now() }
func (wallClock) AfterFunc(d time.Duration, f func()) { time.AfterFunc(d, f) }

// Errors returned by the host.
var (
	ErrHostClosed    = errors.New("raft: host closed")
	ErrGroupExists   = errors.New("raft: group already exists")
	ErrUnknownGroup  = errors.New("raft: unknown group")
	ErrGroupRemoved  = errors.New("raft: group removed")
	ErrNotLeader     = errors.New("raft: not the leader")
	ErrTruncated     = errors.New("raft: entry truncated by a new leader")
	ErrEmptyProposal = errors.New("raft: empty proposal")
)

// Host runs many raft groups on one node. Its methods are safe for concurrent use.
type Host struct {
	opts HostOptions
	id   uint64

	mu     sync.RWMutex
	groups map[uint64]*group
	list   []*group // for the ticker
	closed bool

	clock  Clock
	readyQ workQueue
	flushQ workQueue
	stop   chan struct{}
	wg     sync.WaitGroup

	quiet    quietTable // which groups are quiet, and the listings (listing.go)
	tickList []*group   // ticker-owned: this round's copy of quiet.active

	ticks   atomic.Uint64 // ticks delivered
	tickNo  atomic.Uint64 // the ticker's round, from 1 (the clock of peer liveness)
	peers   peerTable
	pacer   learnerPacer
	flushes atomic.Uint64 // LogStorage.Flush calls
	// electionWrites counts the queued records that an election waits on (urgentRec), from
	// when a group queues one until a flusher takes it.
	electionWrites atomic.Int64
	appends        atomic.Uint64 // MsgStorageAppend messages those flushes covered
	// preCampaigns, campaigns and wins count this host's replicas becoming pre-candidate,
	// candidate and leader (refreshStatus).
	preCampaigns, campaigns, wins atomic.Uint64
	// noCampaign is the campaign switch turned off (campaign.go).
	noCampaign atomic.Bool
}

// HostStats are a host's counters (cumulative) and queue lengths (now).
type HostStats struct {
	// Ticks is the number of ticker rounds.
	Ticks uint64
	// Flushes counts group flushes (one fsync per dirty segment each); Appends the
	// MsgStorageAppend messages they made durable (Appends/Flushes is the group-commit
	// factor).
	Flushes, Appends uint64
	// PreCampaigns, Campaigns and Wins count replicas of this host that became
	// pre-candidate, candidate (a new term) and leader. Campaigns far above Wins is an
	// election storm: terms move and nobody keeps a leadership.
	PreCampaigns, Campaigns, Wins uint64
	// ReadyQueued is how many groups wait for a worker now, FlushQueued how many for a
	// flusher, and ElectionWrites how many queued records an election waits on
	// (electionBacklogged).
	ReadyQueued, FlushQueued, ElectionWrites int
	// Replicas is how many groups the host runs, Leaderless how many of them know no
	// leader now.
	Replicas, Leaderless int
}

// Stats returns the host's counters and queue lengths.
func (h *Host) Stats() HostStats {
	h.mu.RLock()
	replicas, leaderless := len(h.list), 0
	for _, g := range h.list {
		if g.pubLead.Load() == 0 && !g.pubLeading.Load() {
			leaderless++
		}
	}
	h.mu.RUnlock()
	return HostStats{Replicas: replicas, Leaderless: leaderless, Ticks: h.ticks.Load(), Flushes: h.flushes.Load(), Appends: h.appends.Load(),
		PreCampaigns: h.preCampaigns.Load(), Campaigns: h.campaigns.Load(), Wins: h.wins.Load(),
		ReadyQueued: h.readyQ.len(), FlushQueued: h.flushQ.len(), ElectionWrites: int(h.electionWrites.Load())}
}

// DefaultFlushers is how many groups a host flushes at once. Flushing waits on the disk,
// not the CPU, so it does not follow GOMAXPROCS: a flush that writes a group's hard
// state costs two fsyncs and a rename, and an election writes one on every voter. With
// a flusher per core, a broker restarting among thousands of groups queued their vote
// answers behind thousands of such writes, for longer than an election timeout, and its
// elections never completed (10,000 partitions, 3 brokers: a third of the partitions
// leaderless for minutes); concurrent fsyncs of different files also share the disk's
// cache flushes. Each flusher is a goroutine and an outbox.
const DefaultFlushers = 16

// DefaultElectionBacklog is HostOptions.ElectionBacklog's default: about a tenth of a
// second of vote-file writes on a modest disk, well inside an election timeout.
const DefaultElectionBacklog = 1024

// NewHost starts a host's workers, flushers and ticker.
func NewHost(opts HostOptions) *Host {
	h := newHost(opts, wallClock{})
	for i := 0; i < h.opts.Workers; i++ {
		h.wg.Add(1)
		go h.worker()
	}
	for i := 0; i < h.opts.Flushers; i++ {
		h.wg.Add(1)
		go h.flusher()
	}
	h.wg.Add(1)
	go h.ticker()
	return h
}

// newHost builds a host on clock without starting any goroutine.
func newHost(opts HostOptions, clock Clock) *Host {
	if opts.TickInterval <= 0 {
		opts.TickInterval = 100 * time.Millisecond
	}
	if opts.ElectionTicks <= 0 {
		opts.ElectionTicks = 10
	}
	if opts.HeartbeatTicks <= 0 {
		opts.HeartbeatTicks = 1
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Flushers <= 0 {
		opts.Flushers = DefaultFlushers
	}
	if opts.ElectionBacklog <= 0 {
		opts.ElectionBacklog = DefaultElectionBacklog
	}
	if opts.Logger == nil {
		opts.Logger = discardLogger{}
	}
	if opts.MaxSizePerMsg == 0 {
		opts.MaxSizePerMsg = 1 << 20
	}
	if opts.MaxInflightMsgs <= 0 {
		opts.MaxInflightMsgs = 256
	}
	if opts.MaxInflightBytes == 0 {
		opts.MaxInflightBytes = 8 << 20
	}
	h := &Host{opts: opts, id: opts.NodeID, groups: map[uint64]*group{}, stop: make(chan struct{}),
		clock: clock}
	h.quiet.init(clock.Now())
	h.peers.clock = clock
	h.tickNo.Store(1)
	h.readyQ.init()
	h.flushQ.init()
	return h
}

// Close stops the host: its goroutines exit and every waiting proposal fails with
// ErrHostClosed. Storages are not closed (the caller owns them); entries written but not
// flushed stay so.
func (h *Host) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	gs := h.list
	h.mu.Unlock()
	close(h.stop)
	h.readyQ.close()
	h.flushQ.close()
	h.wg.Wait()
	for _, g := range gs {
		g.mu.Lock()
		g.shutdown(ErrHostClosed)
		g.mu.Unlock()
	}
}

// Step hands the host a batch received from another host. The host keeps b.Messages but
// not b.Heartbeat: its listing is handled before Step returns, and the caller may reuse it.
func (h *Host) Step(b *Batch) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return
	}
	if b.From != 0 && b.From != h.id {
		p := h.peers.get(b.From, 0)
		p.seen.Store(h.tickNo.Load())
		p.heard.Store(h.clock.Now().UnixNano())
	}
	if b.Heartbeat != nil {
		h.onHeartbeat(b.From, b.Heartbeat)
	}
	for _, m := range b.Messages {
		if g := h.groups[m.Group]; g != nil {
			g.inMu.Lock()
			g.inMsgs = append(g.inMsgs, m.Msg)
			g.inMu.Unlock()
			h.enqueue(g)
		}
	}
	for _, r := range b.Written {
		if g := h.groups[r.Group]; g != nil {
			g.inMu.Lock()
			g.inWritten = append(g.inWritten, fromWritten{b.From, r})
			g.inMu.Unlock()
			h.enqueue(g)
		}
	}
	for _, r := range b.Visible {
		if g := h.groups[r.Group]; g != nil {
			g.inMu.Lock()
			g.inVisible = append(g.inVisible, fromVisible{b.From, r})
			g.inMu.Unlock()
			h.enqueue(g)
		}
	}
}

// discardLogger drops everything but panics and fatal errors.
type discardLogger struct{}

func (discardLogger) Debug(...any)            {}
func (discardLogger) Debugf(string, ...any)   {}
func (discardLogger) Error(...any)            {}
func (discardLogger) Errorf(string, ...any)   {}
func (discardLogger) Info(...any)             {}
func (discardLogger) Infof(string, ...any)    {}
func (discardLogger) Warning(...any)          {}
func (discardLogger) Warningf(string, ...any) {}
func (discardLogger) Fatal(v ...any)          { panic(fmt.Sprint(v...)) }
func (discardLogger) Fatalf(f string, v ...any) {
	panic(fmt.Sprintf(f, v...))
}
func (discardLogger) Panic(v ...any)            { panic(fmt.Sprint(v...)) }
func (discardLogger) Panicf(f string, v ...any) { panic(fmt.Sprintf(f, v...)) }

// ErrorLogger is a raft logger that passes errors on to lg, among them a group stopped by
// a storage failure (group.fail), and drops the rest, which etcd raft writes at every
// election and configuration change of every group.
func ErrorLogger(lg *slog.Logger) etcdraft.Logger { return errorLogger{lg: lg} }

type errorLogger struct {
	discardLogger
	lg *slog.Logger
}

func (l errorLogger) Error(v ...any) { l.lg.Error("raft: " + fmt.Sprint(v...)) }
func (l errorLogger) Errorf(f string, v ...any) {
	l.lg.Error("raft: " + fmt.Sprintf(f, v...))
}
