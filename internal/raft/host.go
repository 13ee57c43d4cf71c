package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"
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
// groups that are idle quiesce (quiesce.go): no replica ticks them, and one coalesced
// HostHeartbeat per pair of hosts per tick (Batch.Heartbeat) stands in for their
// per-group raft heartbeats; a follower that stops being listed ticks again, so raft's
// own election timeout takes over.

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
// and host-level written reports (at most one per group).
type Batch struct {
	From     uint64
	Messages []GroupMessage
	Written  []WrittenReport
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
	// Workers is the size of the worker pool, and of the flusher pool (default GOMAXPROCS).
	Workers int
	// Logger is raft's logger (default: discard everything but panics).
	Logger etcdraft.Logger
	// MaxSizePerMsg, MaxInflightMsgs and MaxInflightBytes bound replication traffic to each
	// follower of a group (default 1 MiB, 256 and 8 MiB). The byte bound keeps one busy
	// group from filling the transport's queue to a peer on its own (refused sends make raft
	// fall back to probing that follower).
	MaxSizePerMsg    uint64
	MaxInflightMsgs  int
	MaxInflightBytes uint64

	// flushGate, if set, is called by a flusher before it flushes a group (tests hold
	// flushes with it).
	flushGate func(group uint64)
}

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

	readyQ workQueue
	flushQ workQueue
	stop   chan struct{}
	wg     sync.WaitGroup

	ticks   atomic.Uint64 // ticks delivered
	tickNo  atomic.Uint64 // the ticker's round, from 1 (the clock of peer liveness)
	peers   peerTable
	flushes atomic.Uint64 // LogStorage.Flush calls
	appends atomic.Uint64 // MsgStorageAppend messages those flushes covered
}

// HostStats are cumulative counters of a host.
type HostStats struct {
	// Ticks is the number of ticker rounds.
	Ticks uint64
	// Flushes counts group flushes (one fsync per dirty segment each); Appends the
	// MsgStorageAppend messages they made durable (Appends/Flushes is the group-commit
	// factor).
	Flushes, Appends uint64
}

// Stats returns the host's counters.
func (h *Host) Stats() HostStats {
	return HostStats{Ticks: h.ticks.Load(), Flushes: h.flushes.Load(), Appends: h.appends.Load()}
}

// NewHost starts a host's workers, flushers and ticker.
func NewHost(opts HostOptions) *Host {
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
	h := &Host{opts: opts, id: opts.NodeID, groups: map[uint64]*group{}, stop: make(chan struct{})}
	h.tickNo.Store(1)
	h.readyQ.init()
	h.flushQ.init()
	for i := 0; i < opts.Workers; i++ {
		h.wg.Add(2)
		go h.worker()
		go h.flusher()
	}
	h.wg.Add(1)
	go h.ticker()
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

// GroupConfig describes a group added to a host.
type GroupConfig struct {
	// Storage is the group's log. The host never closes it.
	Storage *LogStorage
	// Bootstrap is the initial configuration, used only if the storage holds none.
	Bootstrap *pb.ConfState
	// Apply receives committed entries (may be nil).
	Apply ApplyFunc
	// OnChange, if set, is called after every round that may have moved the group's
	// boundaries, role, leader or term (the host holds the group's lock: it must only
	// signal, e.g. a non-blocking channel send, and never call back into the host).
	OnChange func()
	// FlushDelay, if set, lets appends wait before they are made durable (write caching):
	// the host asks it with the bytes not yet flushed and how long the oldest of them has
	// waited, and flushes now if it returns <= 0, else asks again after the returned
	// wait (or sooner, when more is appended). Flushes that carry a new term or vote, or
	// a vote response, are never delayed. nil: flush as soon as possible.
	FlushDelay func(unflushedBytes int64, waited time.Duration) time.Duration
}

// AddGroup starts a replica of group id on this host.
func (h *Host) AddGroup(id uint64, cfg GroupConfig) error {
	if _, err := h.group(id); err == nil {
		return ErrGroupExists
	} else if errors.Is(err, ErrHostClosed) {
		return err
	}
	ls := cfg.Storage
	_, cs, err := ls.InitialState()
	if err != nil {
		return err
	}
	if len(cs.GetVoters()) == 0 && cfg.Bootstrap != nil {
		if err := ls.SetConfState(0, cfg.Bootstrap); err != nil {
			return err
		}
	}
	rn, err := etcdraft.NewRawNode(&etcdraft.Config{
		ID:                        h.id,
		ElectionTick:              h.opts.ElectionTicks,
		HeartbeatTick:             h.opts.HeartbeatTicks,
		Storage:                   ls,
		Applied:                   ls.ConfIndex(),
		MaxSizePerMsg:             h.opts.MaxSizePerMsg,
		MaxInflightMsgs:           h.opts.MaxInflightMsgs,
		MaxInflightBytes:          h.opts.MaxInflightBytes,
		CheckQuorum:               true,
		PreVote:                   true,
		AsyncStorageWrites:        true,
		DisableProposalForwarding: true,
		Logger:                    h.opts.Logger,
	})
	if err != nil {
		return err
	}
	g := &group{id: id, h: h, ls: ls, apply: cfg.Apply, onChange: cfg.OnChange, flushDelay: cfg.FlushDelay, rn: rn,
		written: map[uint64]uint64{}, acked: ackMap{}}
	g.applied = ls.ConfIndex()
	g.refreshStatus()
	g.conf = rn.Status().Config.Voters
	g.notePeers()
	g.publish()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrHostClosed
	}
	if _, ok := h.groups[id]; ok {
		return ErrGroupExists
	}
	g.pos = len(h.list)
	h.groups[id] = g
	h.list = append(h.list, g)
	return nil
}

// RemoveGroup stops the replica of group id; its waiting proposals fail with
// ErrGroupRemoved. When it returns the host no longer uses the group's storage (the
// caller may close it); appends not yet flushed stay unflushed.
func (h *Host) RemoveGroup(id uint64) error {
	h.mu.Lock()
	g, ok := h.groups[id]
	if !ok {
		h.mu.Unlock()
		return ErrUnknownGroup
	}
	delete(h.groups, id)
	last := h.list[len(h.list)-1]
	h.list[g.pos] = last
	last.pos = g.pos
	h.list[len(h.list)-1] = nil
	h.list = h.list[:len(h.list)-1]
	h.mu.Unlock()
	g.removed.Store(true)
	g.mu.Lock()
	g.shutdown(ErrGroupRemoved)
	g.mu.Unlock()
	g.flushing.Lock() // wait out a flush in progress: then nothing uses the storage
	g.flushing.Unlock()
	return nil
}

func (h *Host) group(id uint64) (*group, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, ErrHostClosed
	}
	g, ok := h.groups[id]
	if !ok {
		return nil, ErrUnknownGroup
	}
	return g, nil
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
		h.peers.get(b.From, 0).seen.Store(h.tickNo.Load())
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
}

// control runs f on the group's RawNode in a worker (f(nil) if the group is removed or
// the host closed first).
func (h *Host) control(id uint64, f func(*etcdraft.RawNode)) error {
	g, err := h.group(id)
	if err != nil {
		return err
	}
	g.inMu.Lock()
	g.inCtl = append(g.inCtl, f)
	g.inMu.Unlock()
	h.enqueue(g)
	return nil
}

// Campaign makes this replica of the group campaign to become leader.
func (h *Host) Campaign(id uint64) error {
	return h.control(id, func(rn *etcdraft.RawNode) {
		if rn != nil {
			_ = rn.Campaign()
		}
	})
}

// TransferLeadership asks the group's leader (this replica) to hand leadership to to.
func (h *Host) TransferLeadership(id, to uint64) error {
	return h.control(id, func(rn *etcdraft.RawNode) {
		if rn != nil {
			rn.TransferLeader(to)
		}
	})
}

// ReportUnreachable tells the group's replica that a message to peer was lost (the
// transport adapter calls it when a send fails), so its leader probes the peer again.
func (h *Host) ReportUnreachable(id, peer uint64) error {
	return h.control(id, func(rn *etcdraft.RawNode) {
		if rn != nil {
			rn.ReportUnreachable(peer)
		}
	})
}

// ReportSnapshot tells the group's leader whether the snapshot it sent peer arrived; a
// lost one must be reported, or the leader waits for that follower forever.
func (h *Host) ReportSnapshot(id, peer uint64, ok bool) error {
	status := etcdraft.SnapshotFinish
	if !ok {
		status = etcdraft.SnapshotFailure
	}
	return h.control(id, func(rn *etcdraft.RawNode) {
		if rn != nil {
			rn.ReportSnapshot(peer, status)
		}
	})
}

// ProposeConfChange proposes a configuration change to the group (this replica must lead
// it). It returns once raft has taken the proposal, not when it is applied: watch
// Status.Voters for that.
func (h *Host) ProposeConfChange(id uint64, cc pb.ConfChangeI) error {
	errc := make(chan error, 1)
	if err := h.control(id, func(rn *etcdraft.RawNode) {
		if rn == nil {
			errc <- ErrGroupRemoved
			return
		}
		errc <- rn.ProposeConfChange(cc)
	}); err != nil {
		return err
	}
	select {
	case err := <-errc:
		if errors.Is(err, etcdraft.ErrProposalDropped) {
			err = ErrNotLeader
		}
		return err
	case <-h.stop:
		return ErrHostClosed
	}
}

// Propose proposes data (one Kafka RecordBatch) to the group and waits until it is
// committed and applied on this replica. It returns the entry's index and term. It fails
// with ErrNotLeader if this replica is not the leader, ErrTruncated if a new leader
// replaced the entry, or ctx's error; it never reports success for an entry that is not
// committed.
func (h *Host) Propose(ctx context.Context, id uint64, data []byte) (index, term uint64, err error) {
	p, err := h.ProposeAsync(id, data)
	if err != nil {
		return 0, 0, err
	}
	if err := p.Wait(ctx, StageCommitted); err != nil {
		return 0, 0, err
	}
	return p.Index(), p.Term(), nil
}

// ProposeAsync proposes data and returns a handle to wait on its stages. The host keeps
// data only until raft has appended the entry (raft appends a copy), so data may alias a
// caller's buffer that stays unmodified until then: until the proposal reaches
// StageAppended or fails.
func (h *Host) ProposeAsync(id uint64, data []byte) (*Proposal, error) {
	return h.ProposeAsyncInTerm(id, data, 0)
}

// ProposeAsyncInTerm is ProposeAsync for a caller whose checks hold only while this
// replica leads in term: the proposal fails with ErrNotLeader unless it is appended in that
// term (0: any term).
func (h *Host) ProposeAsyncInTerm(id uint64, data []byte, term uint64) (*Proposal, error) {
	if len(data) == 0 {
		return nil, ErrEmptyProposal
	}
	g, err := h.group(id)
	if err != nil {
		return nil, err
	}
	p := newProposal(data)
	p.inTerm = term
	g.inMu.Lock()
	g.inProps = append(g.inProps, p)
	g.inMu.Unlock()
	h.enqueue(g)
	return p, nil
}

// Status describes one replica of a group. Indexes are raft log indexes.
type Status struct {
	Group, ID uint64
	State     etcdraft.StateType
	Leader    uint64
	Term      uint64
	// LogEnd is the last index written locally (maybe unflushed); LogEndOffset its Kafka
	// log end offset.
	LogEnd       uint64
	LogEndOffset int64
	// Flushed is the last index fsynced locally.
	Flushed uint64
	// MajorityReplicated (leader only; 0 elsewhere) is the last index written on a voting
	// majority, counted for current-term entries only; never below Committed.
	MajorityReplicated uint64
	// Committed is raft's commit index (flush-aware, see the host documentation).
	Committed uint64
	// Applied is the last index handed to the ApplyFunc.
	Applied uint64
	// Voters and VotersOutgoing are the configuration this replica knows (outgoing: the
	// old half of a joint configuration).
	Voters, VotersOutgoing []uint64
	// Flushes counts this replica's log flushes (each one fsync round: group commit).
	Flushes uint64
	// Progress (leader only) is each voter's replication state, by Raft id.
	Progress map[uint64]PeerProgress
}

// PeerProgress is how far one voter holds the leader's log.
type PeerProgress struct {
	// Match is the last index the voter acknowledged durably (for the leader itself: its
	// flushed index); Written the last it reported written, maybe not yet fsynced.
	Match, Written uint64
}

// Status returns the current state of the group's replica.
func (h *Host) Status(id uint64) (Status, error) {
	g, err := h.group(id)
	if err != nil {
		return Status{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	bs := g.rn.BasicStatus()
	st := Status{
		Group: id, ID: h.id, State: bs.RaftState, Leader: bs.Lead, Term: bs.GetTerm(),
		LogEnd: g.ls.WrittenIndex(), LogEndOffset: g.ls.Log().LogEndOffset(),
		Flushed: g.ls.FlushedIndex(), Committed: bs.GetCommit(), Applied: g.applied,
		Flushes: g.flushes.Load(),
	}
	if bs.RaftState == etcdraft.StateLeader {
		st.MajorityReplicated = max(g.majority, st.Committed)
		st.Progress = make(map[uint64]PeerProgress, len(g.peerIDs)+1)
		g.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) {
			pp := PeerProgress{Match: pr.Match, Written: max(pr.Match, g.written[id])}
			if id == h.id {
				pp = PeerProgress{Match: st.Flushed, Written: st.LogEnd}
			}
			st.Progress[id] = pp
		})
	}
	st.Voters, st.VotersOutgoing = g.conf[0].Slice(), g.conf[1].Slice()
	return st, nil
}

// ---- proposals ----

// Stage is how far a proposal has come.
type Stage int

const (
	// StageAppended: in the leader's log (not necessarily flushed).
	StageAppended Stage = iota + 1
	// StageReplicated: written on a voting majority (the majority-replicated boundary).
	StageReplicated
	// StageCommitted: committed (flush-aware) and applied on this replica.
	StageCommitted
)

// Proposal tracks one proposed entry.
type Proposal struct {
	data        []byte
	index, term atomic.Uint64
	baseOffset  atomic.Int64 // Kafka offset of the entry's first record, once appended
	inTerm      uint64       // the term it must be appended in (0: any)
	stages      [3]chan struct{}
	reached     Stage // guarded by the group's mu
	failed      chan struct{}
	err         error // set before failed is closed
	done        bool  // guarded by the group's mu
}

func newProposal(data []byte) *Proposal {
	p := &Proposal{data: data, failed: make(chan struct{})}
	for i := range p.stages {
		p.stages[i] = make(chan struct{})
	}
	return p
}

// Index and Term identify the entry once it is appended (0 before).
func (p *Proposal) Index() uint64 { return p.index.Load() }
func (p *Proposal) Term() uint64  { return p.term.Load() }

// Appended reports whether the proposal reached StageAppended (then Index, Term and
// BaseOffset are set).
func (p *Proposal) Appended() bool {
	select {
	case <-p.stages[StageAppended-1]:
		return true
	default:
		return false
	}
}

// Settled reports whether the proposal was appended or has failed.
func (p *Proposal) Settled() bool {
	select {
	case <-p.failed:
		return true
	default:
		return p.Appended()
	}
}

// BaseOffset is the Kafka offset the log gave the entry's first record (valid once the
// proposal reached StageAppended).
func (p *Proposal) BaseOffset() int64 { return p.baseOffset.Load() }

// Wait blocks until the proposal reaches stage s, fails, or ctx is done.
func (p *Proposal) Wait(ctx context.Context, s Stage) error {
	select {
	case <-p.stages[s-1]:
		return nil
	default:
	}
	select {
	case <-p.stages[s-1]:
		return nil
	case <-p.failed:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Proposal) reach(s Stage) {
	for ; p.reached < s; p.reached++ {
		close(p.stages[p.reached])
	}
	if s == StageCommitted {
		p.done = true
	}
}

func (p *Proposal) fail(err error) {
	if p.done {
		return
	}
	p.done = true
	p.err = err
	close(p.failed)
}

// ---- groups ----

type group struct {
	id         uint64
	h          *Host
	ls         *LogStorage
	apply      ApplyFunc
	onChange   func()
	flushDelay func(int64, time.Duration) time.Duration
	pos        int // in h.list, guarded by h.mu

	sched  atomic.Int32 // 0 idle, 1 queued or running, 2 running and queued again
	fsched atomic.Int32 // the same for the flush queue
	ticks  atomic.Int32 // ticks not yet applied
	solo   atomic.Bool  // the only voter, and leader: ticks do nothing, so none are given

	// Quiescence (quiesce.go). quiet: led here and quiesced (the ticker skips it and lists
	// it in its heartbeats). quietSeen: the local tick at which this follower was last
	// listed by its leader's host (0: not quiet). pub*: the follower's leader, term and
	// commit for Step's lock-free check of listings.
	quiet                       atomic.Bool
	quietSeen                   atomic.Uint64
	pubLead, pubTerm, pubCommit atomic.Uint64
	qTerm, qCommit              uint64   // ticker-owned: what quiet lists
	qPeers                      []uint64 // ticker-owned

	inMu      sync.Mutex
	inMsgs    []*pb.Message
	inLocal   []*pb.Message
	inWritten []fromWritten
	inProps   []*Proposal
	inCtl     []func(*etcdraft.RawNode)

	flushes atomic.Uint64

	fMu    sync.Mutex
	fRecs  []appendRec
	fSince time.Time   // when the oldest record in fRecs was queued
	fTimer *time.Timer // a delayed flush (FlushDelay), armed at most once

	flushing sync.Mutex  // held by the flusher while it uses the storage
	removed  atomic.Bool // set by RemoveGroup and Close: the storage is no longer used

	mu       sync.Mutex // held while a worker (or the ticker) uses the RawNode
	rn       *etcdraft.RawNode
	gone     error // set when removed or closed
	state    etcdraft.StateType
	lead     uint64
	term     uint64
	conf     quorum.JointConfig
	written  map[uint64]uint64 // follower → largest written report this term
	acked    ackMap
	majority uint64
	applied  uint64
	// replicated is, on a leader, the smallest Match of the live followers (MaxUint64
	// when there are none): the entry cache keeps what they still lack.
	replicated uint64
	waiting    []*Proposal // proposed, not yet appended
	props      []*Proposal // appended, ascending index
	needMaj    bool
	idle       int      // ticks the leader has been idle (quiesce.go)
	peerIDs    []uint64 // the other members
}

type appendRec struct {
	hs        *pb.HardState
	responses []*pb.Message
}

type ackMap map[uint64]quorum.Index

func (m ackMap) AckedIndex(id uint64) (quorum.Index, bool) {
	v, ok := m[id]
	return v, ok
}

func (g *group) shutdown(err error) {
	if g.gone != nil {
		return
	}
	g.gone = err
	for _, p := range g.waiting {
		p.fail(err)
	}
	g.waiting = nil
	for _, p := range g.props {
		p.fail(err)
	}
	g.props = nil
	g.inMu.Lock()
	props, ctl := g.inProps, g.inCtl
	g.inProps, g.inMsgs, g.inLocal, g.inWritten, g.inCtl = nil, nil, nil, nil, nil
	g.inMu.Unlock()
	for _, p := range props {
		p.fail(err)
	}
	for _, f := range ctl {
		f(nil)
	}
}

// refreshStatus caches the term, role and leader; a change resets the written reports.
func (g *group) refreshStatus() {
	bs := g.rn.BasicStatus()
	term, state := bs.GetTerm(), bs.RaftState
	if term != g.term || state != g.state {
		clear(g.written)
		g.majority = 0
		g.needMaj = true
		if state == etcdraft.StateLeader && g.state != etcdraft.StateLeader {
			g.conf = g.rn.Status().Config.Voters
			g.notePeers()
		}
	}
	g.term, g.state, g.lead = term, state, bs.Lead
	g.updateSolo()
}

// updateSolo records whether the replica is the group's only voter and its leader. Such a
// leader has nobody to heartbeat and no election to watch, so the ticker skips it.
func (g *group) updateSolo() {
	solo := g.state == etcdraft.StateLeader && len(g.conf[1]) == 0 && len(g.conf[0]) == 1
	if solo {
		_, solo = g.conf[0][g.h.id]
	}
	g.solo.Store(solo)
}

// ---- scheduling ----

// workQueue is a FIFO of groups with a closed flag.
type workQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []*group
	closed bool
}

func (q *workQueue) init() { q.cond = sync.NewCond(&q.mu) }

func (q *workQueue) push(g *group) {
	q.mu.Lock()
	q.items = append(q.items, g)
	q.mu.Unlock()
	q.cond.Signal()
}

// pop takes up to n groups, blocking while the queue is empty; nil once closed.
func (q *workQueue) pop(dst []*group, n int) []*group {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil
	}
	n = min(n, len(q.items))
	dst = append(dst, q.items[:n]...)
	rest := copy(q.items, q.items[n:])
	clear(q.items[rest:])
	q.items = q.items[:rest]
	return dst
}

func (q *workQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// schedule marks a group as having work in the queue guarded by state; it is pushed
// unless it already is queued or running (then it runs once more).
func schedule(state *atomic.Int32, q *workQueue, g *group) {
	for {
		switch s := state.Load(); s {
		case 0:
			if state.CompareAndSwap(0, 1) {
				q.push(g)
				return
			}
		case 1:
			if state.CompareAndSwap(1, 2) {
				return
			}
		default:
			return
		}
	}
}

// finish ends a run; it reports whether the group must run again (and is then still
// marked queued).
func finish(state *atomic.Int32) bool {
	if state.CompareAndSwap(1, 0) {
		return false
	}
	state.Store(1)
	return true
}

func (h *Host) enqueue(g *group) { schedule(&g.sched, &h.readyQ, g) }

func (h *Host) worker() {
	defer h.wg.Done()
	ob := newOutbox(h)
	var batch []*group
	for {
		batch = h.readyQ.pop(batch[:0], 16)
		if batch == nil {
			return
		}
		for _, g := range batch {
			if h.process(g, ob) {
				g.sched.Store(1) // still ours: run it again later
				h.readyQ.push(g)
			} else if finish(&g.sched) {
				h.readyQ.push(g)
			}
		}
		ob.flush()
	}
}

// ticker ticks every group once per TickInterval. A group the worker is not using is
// ticked in place and queued only if the tick produced work (a heartbeat, a campaign),
// so an idle follower costs a lock, an increment and HasReady per tick.
func (h *Host) ticker() {
	defer h.wg.Done()
	t := time.NewTicker(h.opts.TickInterval)
	defer t.Stop()
	lastLens := map[uint64]int{}
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		now := h.tickNo.Load()
		silent := h.silentPeers(now)
		var lists map[uint64][]QuiescedGroup
		listNow := now%listEvery == 0
		list := func(g *group) {
			if !listNow {
				return // listed every listEvery ticks; the heartbeat itself goes every tick
			}
			if lists == nil {
				lists = map[uint64][]QuiescedGroup{}
			}
			for _, p := range g.qPeers {
				l, ok := lists[p]
				if !ok {
					// The listing goes to the transport, which owns it; size it as the last
					// one so it is built without regrowing.
					l = make([]QuiescedGroup, 0, lastLens[p])
				}
				lists[p] = append(l, QuiescedGroup{Group: g.id, Term: g.qTerm, Commit: g.qCommit})
			}
		}
		h.mu.RLock()
		for _, g := range h.list {
			if g.solo.Load() {
				continue
			}
			if g.quiet.Load() {
				live := true
				for _, p := range g.qPeers {
					if silent[p] {
						live = false
					}
				}
				if live {
					list(g)
					continue
				}
				g.quiet.Store(false) // a member's host went silent: tick again (CheckQuorum)
			}
			if s := g.quietSeen.Load(); s != 0 && now-s <= quietSlack {
				continue // a quiet follower whose leader's host keeps listing the group
			}
			if g.mu.TryLock() {
				work, quiesced := false, false
				if g.gone == nil {
					if g.state == etcdraft.StateLeader && !g.quiet.Load() {
						quiesced = g.tryQuiesce()
					}
					if !quiesced {
						g.rn.Tick()
						work = g.rn.HasReady()
					}
				}
				g.mu.Unlock()
				if quiesced {
					list(g)
				}
				if work {
					h.enqueue(g)
				}
			} else {
				g.ticks.Add(1)
				h.enqueue(g)
			}
		}
		h.mu.RUnlock()
		clear(lastLens)
		for p, l := range lists {
			lastLens[p] = len(l)
		}
		h.sendHeartbeats(lists)
		h.tickNo.Add(1)
		h.ticks.Add(1)
	}
}

const maxReadyPerRun = 8

// process runs one round of a group: inputs in, Readys out. It reports whether the group
// still has work.
func (h *Host) process(g *group, ob *outbox) bool {
	g.inMu.Lock()
	msgs, local, written, props, ctl := g.inMsgs, g.inLocal, g.inWritten, g.inProps, g.inCtl
	g.inMsgs, g.inLocal, g.inWritten, g.inProps, g.inCtl = nil, nil, nil, nil, nil
	g.inMu.Unlock()

	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone != nil {
		for _, p := range props {
			p.fail(g.gone)
		}
		for _, f := range ctl {
			f(nil)
		}
		return false
	}
	defer g.publish()
	rn := g.rn
	wake := len(local) > 0 || len(props) > 0 || len(ctl) > 0
	for _, m := range msgs {
		if !wake && g.wakes(m) {
			wake = true
		}
	}
	if wake {
		g.wake()
	}
	for n := g.ticks.Swap(0); n > 0; n-- {
		rn.Tick()
	}
	for _, m := range local {
		_ = rn.Step(m)
	}
	for _, m := range msgs {
		_ = rn.Step(m) // errors: a message of a peer not (or no longer) in the group
	}
	for _, f := range ctl {
		f(rn)
	}
	g.refreshStatus()
	for _, r := range written {
		g.onWritten(r)
	}
	for _, p := range props {
		if g.state != etcdraft.StateLeader || (p.inTerm != 0 && p.inTerm != g.term) {
			p.fail(ErrNotLeader)
			continue
		}
		if err := rn.Propose(p.data); err != nil {
			if errors.Is(err, etcdraft.ErrProposalDropped) {
				err = ErrNotLeader
			}
			p.fail(err)
			continue
		}
		g.waiting = append(g.waiting, p)
	}
	for i := 0; rn.HasReady(); i++ {
		if i == maxReadyPerRun {
			return true
		}
		if err := h.handleReady(g, ob); err != nil {
			h.opts.Logger.Errorf("raft host %d: group %d: %v", h.id, g.id, err)
			g.shutdown(fmt.Errorf("raft: group %d failed: %w", g.id, err))
			return false
		}
	}
	if g.needMaj {
		g.updateMajority()
	}
	return false
}

// onWritten records a follower's written report if it is for this leader's term.
func (g *group) onWritten(r fromWritten) {
	if g.state != etcdraft.StateLeader || r.Term != g.term || r.from == g.h.id {
		return
	}
	if r.Index > g.written[r.from] {
		g.written[r.from] = r.Index
		g.needMaj = true
	}
}

type fromWritten struct {
	from uint64
	WrittenReport
}

func (h *Host) handleReady(g *group, ob *outbox) error {
	rn := g.rn
	rd := rn.Ready()
	g.refreshStatus()
	var steps []*pb.Message
	for _, m := range rd.Messages {
		switch m.GetTo() {
		case etcdraft.LocalAppendThread:
			if err := h.handleAppend(g, m, ob); err != nil {
				return err
			}
		case etcdraft.LocalApplyThread:
			if err := g.handleApply(m); err != nil {
				return err
			}
			steps = append(steps, m.GetResponses()...)
		default:
			ob.addMsg(m.GetTo(), g.id, m)
		}
	}
	for _, m := range steps {
		if m.GetTo() == h.id {
			_ = rn.Step(m)
		} else {
			ob.addMsg(m.GetTo(), g.id, m)
		}
	}
	return nil
}

func (h *Host) handleAppend(g *group, m *pb.Message, ob *outbox) error {
	if snap := m.GetSnapshot(); snap != nil && !etcdraft.IsEmptySnap(snap) {
		if err := g.ls.ApplySnapshot(snap); err != nil {
			return err
		}
		// The entries at or below the snapshot are committed, but this replica cannot
		// tell whether they are the proposed ones: fail them (never a false success).
		g.truncateProps(snap.GetMetadata().GetIndex()+1, nil)
		g.conf = g.rn.Status().Config.Voters // raft restored the snapshot's configuration
		g.notePeers()
		g.updateSolo()
	}
	if ents := m.GetEntries(); len(ents) > 0 {
		g.truncateProps(ents[0].GetIndex(), ents)
		conv, err := g.ls.appendEntries(ents, true)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if len(e.GetData()) == 0 {
				continue
			}
			// raft clones proposed entries: the leader's new data entries are the
			// waiting proposals, in order.
			if len(g.waiting) == 0 || e.GetTerm() != g.term || !bytes.Equal(e.GetData(), g.waiting[0].data) {
				continue
			}
			p := g.waiting[0]
			g.waiting[0] = nil
			g.waiting = g.waiting[1:]
			if len(conv) > 0 && e.GetIndex() >= conv[0].Index && e.GetIndex()-conv[0].Index < uint64(len(conv)) {
				p.baseOffset.Store(conv[e.GetIndex()-conv[0].Index].BaseOffset)
			}
			p.index.Store(e.GetIndex())
			p.term.Store(e.GetTerm())
			p.data = nil // raft and the log have it now; waiters keep the handle for long
			p.reach(StageAppended)
			g.props = append(g.props, p)
		}
		g.needMaj = true
	}
	for _, r := range m.GetResponses() {
		if r.GetType() == pb.MsgAppResp && !r.GetReject() && r.GetTo() != h.id {
			ob.addWritten(r.GetTo(), WrittenReport{Group: g.id, Term: r.GetTerm(), Index: r.GetIndex()})
		}
	}
	rec := appendRec{responses: m.GetResponses()}
	if m.Term != nil {
		rec.hs = &pb.HardState{Term: new(m.GetTerm()), Vote: new(m.GetVote()), Commit: new(m.GetCommit())}
	}
	g.fMu.Lock()
	if len(g.fRecs) == 0 {
		g.fSince = time.Now()
	}
	g.fRecs = append(g.fRecs, rec)
	g.fMu.Unlock()
	schedule(&g.fsched, &h.flushQ, g)
	return nil
}

// urgent reports whether a queued record must be flushed without delay: it persists a new
// term or vote, or carries a vote answer an election is waiting for.
func (g *group) urgent(recs []appendRec) bool {
	term, vote, _ := g.ls.HardState()
	for _, r := range recs {
		if r.hs != nil && (r.hs.GetTerm() != term || r.hs.GetVote() != vote) {
			return true
		}
		for _, m := range r.responses {
			switch m.GetType() {
			case pb.MsgVoteResp, pb.MsgPreVoteResp:
				return true
			}
		}
	}
	return false
}

// delayFlush reports whether the group's write-caching policy holds its queued records
// back for now; it then arms a timer that queues the group again. Caller holds g.flushing.
func (h *Host) delayFlush(g *group) bool {
	if g.flushDelay == nil {
		return false
	}
	g.fMu.Lock()
	defer g.fMu.Unlock()
	if len(g.fRecs) == 0 || g.urgent(g.fRecs) {
		return false
	}
	wait := g.flushDelay(g.ls.Log().UnflushedBytes(), time.Since(g.fSince))
	if wait <= 0 {
		return false
	}
	if g.fTimer == nil {
		g.fTimer = time.AfterFunc(wait, func() {
			g.fMu.Lock()
			g.fTimer = nil
			g.fMu.Unlock()
			if !g.removed.Load() {
				schedule(&g.fsched, &h.flushQ, g)
			}
		})
	}
	return true
}

// truncateProps fails the appended proposals the log is about to replace: those at or
// above from whose entry in ents (the entries replacing the log from from on) has another
// term or is missing.
func (g *group) truncateProps(from uint64, ents []*pb.Entry) {
	keep := g.props[:0]
	for _, p := range g.props {
		idx := p.Index()
		if idx >= from {
			off := idx - from
			if off >= uint64(len(ents)) || ents[off].GetTerm() != p.Term() {
				p.fail(ErrTruncated)
				continue
			}
		}
		keep = append(keep, p)
	}
	clear(g.props[len(keep):])
	g.props = keep
}

func (g *group) handleApply(m *pb.Message) error {
	ents := m.GetEntries()
	if len(ents) == 0 {
		return nil
	}
	for _, e := range ents {
		var cc pb.ConfChangeI
		switch e.GetType() {
		case pb.EntryConfChange:
			c := &pb.ConfChange{}
			if err := proto.Unmarshal(e.GetData(), c); err != nil {
				return err
			}
			cc = c
		case pb.EntryConfChangeV2:
			c := &pb.ConfChangeV2{}
			if err := proto.Unmarshal(e.GetData(), c); err != nil {
				return err
			}
			cc = c
		default:
			continue
		}
		cs := g.rn.ApplyConfChange(cc)
		if err := g.ls.SetConfState(e.GetIndex(), cs); err != nil {
			return err
		}
		g.conf = g.rn.Status().Config.Voters
		g.notePeers()
		g.updateSolo()
		g.needMaj = true
	}
	if g.apply != nil {
		g.apply(g.id, ents)
	}
	first, last := ents[0].GetIndex(), ents[len(ents)-1].GetIndex()
	g.applied = last
	g.trimCache()
	n := 0
	for _, p := range g.props {
		idx := p.Index()
		if idx > last {
			break
		}
		if idx >= first && ents[idx-first].GetTerm() == p.Term() {
			p.reach(StageCommitted)
		} else {
			p.fail(ErrTruncated)
		}
		n++
	}
	g.props = append(g.props[:0], g.props[n:]...)
	return nil
}

// trimCache drops the cached entries nothing will read again. raft reads an entry after
// appending it twice at most: to apply it here once it commits, and, on a leader, to send it
// to a live follower that lacks it. Both readers are served from memory that way; a
// single-replica group, which has no followers, used to read every entry back from its
// segment files to apply it.
func (g *group) trimCache() {
	keep := g.applied
	if g.state == etcdraft.StateLeader {
		keep = min(keep, g.replicated)
	}
	g.ls.cache.trimBelow(keep + 1)
}

// updateMajority recomputes the majority-replicated index (leader only) and moves the
// proposals it covers to StageReplicated.
func (g *group) updateMajority() {
	g.needMaj = false
	if g.state != etcdraft.StateLeader {
		return
	}
	own := g.ls.WrittenIndex()
	clear(g.acked)
	g.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) {
		v := pr.Match
		if id == g.h.id {
			v = own
		} else if w := g.written[id]; w > v {
			v = w
		}
		g.acked[id] = quorum.Index(v)
	})
	// Entries every voter acknowledged durably are no longer read for replication.
	// A follower whose host is not heard from does not hold entries in memory: when it
	// comes back it is fed from the files.
	minMatch := uint64(math.MaxUint64)
	g.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) {
		if id != g.h.id && g.h.PeerLive(id) {
			minMatch = min(minMatch, pr.Match)
		}
	})
	g.replicated = minMatch
	g.trimCache()
	idx := uint64(g.conf.CommittedIndex(g.acked))
	if idx > g.majority && idx <= own {
		if t, err := g.ls.Term(idx); err == nil && t == g.term {
			g.majority = idx
		}
	}
	maj := max(g.majority, g.rn.BasicStatus().GetCommit())
	for _, p := range g.props {
		if p.Index() > maj {
			break
		}
		if p.reached < StageReplicated {
			if t, err := g.ls.Term(p.Index()); err == nil && t == p.Term() {
				p.reach(StageReplicated)
			}
		}
	}
}

// ---- flushing ----

func (h *Host) flusher() {
	defer h.wg.Done()
	ob := newOutbox(h)
	var batch []*group
	for {
		batch = h.flushQ.pop(batch[:0], 64)
		if batch == nil {
			return
		}
		for _, g := range batch {
			h.flushGroup(g, ob)
			if finish(&g.fsched) {
				h.flushQ.push(g)
			}
		}
		ob.flush()
	}
}

// flushGroup makes every queued append of g durable with one Flush, persists the newest
// HardState, then delivers the responses. One flusher at a time handles a group (fsched),
// so HardStates are persisted in order.
func (h *Host) flushGroup(g *group, ob *outbox) {
	g.flushing.Lock()
	defer g.flushing.Unlock()
	if h.delayFlush(g) {
		return
	}
	g.fMu.Lock()
	recs := g.fRecs
	g.fRecs = nil
	g.fMu.Unlock()
	if len(recs) == 0 || g.removed.Load() {
		return
	}
	if h.opts.flushGate != nil {
		h.opts.flushGate(g.id)
	}
	var hs *pb.HardState
	for _, r := range recs {
		if r.hs != nil {
			hs = r.hs
		}
	}
	err := g.ls.Flush()
	h.flushes.Add(1)
	g.flushes.Add(1)
	h.appends.Add(uint64(len(recs)))
	if err == nil && hs != nil {
		err = g.ls.SetHardState(hs)
	}
	if err != nil {
		h.opts.Logger.Errorf("raft host %d: group %d: flush: %v", h.id, g.id, err)
		g.mu.Lock()
		g.shutdown(fmt.Errorf("raft: group %d failed: %w", g.id, err))
		g.mu.Unlock()
		return
	}
	var local []*pb.Message
	for _, r := range recs {
		for _, m := range r.responses {
			if m.GetTo() == h.id {
				local = append(local, m)
			} else {
				ob.addMsg(m.GetTo(), g.id, m)
			}
		}
	}
	if len(local) > 0 {
		g.inMu.Lock()
		g.inLocal = append(g.inLocal, local...)
		g.inMu.Unlock()
		h.enqueue(g)
	}
}

// ---- outbound batching ----

// outbox gathers one round's traffic per peer; written reports are coalesced to the
// largest per group.
type outbox struct {
	h     *Host
	peers map[uint64]*pendingBatch
}

type pendingBatch struct {
	b       *Batch
	written map[uint64]int // group → position in b.Written
}

func newOutbox(h *Host) *outbox { return &outbox{h: h, peers: map[uint64]*pendingBatch{}} }

func (o *outbox) peer(to uint64) *pendingBatch {
	pb := o.peers[to]
	if pb == nil {
		pb = &pendingBatch{written: map[uint64]int{}}
		o.peers[to] = pb
	}
	if pb.b == nil {
		pb.b = &Batch{From: o.h.id}
	}
	return pb
}

func (o *outbox) addMsg(to, group uint64, m *pb.Message) {
	p := o.peer(to)
	p.b.Messages = append(p.b.Messages, GroupMessage{Group: group, Msg: m})
}

func (o *outbox) addWritten(to uint64, r WrittenReport) {
	p := o.peer(to)
	if i, ok := p.written[r.Group]; ok {
		w := &p.b.Written[i]
		if r.Term > w.Term || (r.Term == w.Term && r.Index > w.Index) {
			*w = r
		}
		return
	}
	p.written[r.Group] = len(p.b.Written)
	p.b.Written = append(p.b.Written, r)
}

func (o *outbox) flush() {
	for to, p := range o.peers {
		if p.b == nil {
			continue
		}
		b := p.b
		p.b = nil
		clear(p.written)
		if o.h.opts.Transport != nil {
			o.h.opts.Transport.Send(to, b)
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
