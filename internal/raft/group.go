package raft

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	pb "go.etcd.io/raft/v3/raftpb"
)

// GroupConfig describes a group added to a host.
type GroupConfig struct {
	// Storage is the group's log. The host never closes it.
	Storage *LogStorage
	// Bootstrap is the initial configuration, used only if the storage holds none. A
	// replica with none and an empty storage joins: it starts with an empty configuration
	// and learns every one from its leader.
	Bootstrap *pb.ConfState
	// BootstrapInLog writes Bootstrap into the log as its first entries (one ConfChange
	// per member, term 1), as etcd raft's own bootstrap does, instead of as the
	// configuration in force at index 0: a replica added later rebuilds the initial
	// configuration from the leader's log. Partition groups set it; the controller group
	// keeps its own scheme.
	BootstrapInLog bool
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
	// ShareVisible, if set, says whether the leader tells its followers its visible index
	// (visible.go): where that may be above the commit, as under write caching. It is
	// asked once per leader round. nil: never, and followers' Status.LeaderVisible is
	// their commit.
	ShareVisible func() bool
	// Priority puts the group ahead of the others: its replicas' election clocks run while
	// the host's election writes are backlogged (electionBacklogged), and it goes to the
	// front of the host's work and flush queues. The controller group sets it: while it
	// has no leader no broker can register and nothing can be created or moved, and tens
	// of thousands of partition elections must not queue in front of its own.
	Priority bool
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
	if len(cs.GetVoters()) == 0 && len(cs.GetLearners()) == 0 && cfg.Bootstrap != nil {
		if cfg.BootstrapInLog {
			if err := ls.bootstrapInLog(cfg.Bootstrap); err != nil {
				return err
			}
		} else if err := ls.SetConfState(0, cfg.Bootstrap); err != nil {
			return err
		}
	}
	rn, err := etcdraft.NewRawNode(&etcdraft.Config{
		ID:                        h.id,
		ElectionTick:              h.opts.ElectionTicks,
		HeartbeatTick:             h.opts.HeartbeatTicks,
		Storage:                   ls,
		Applied:                   ls.ApplyFloor(),
		MaxSizePerMsg:             h.opts.MaxSizePerMsg,
		MaxInflightMsgs:           h.opts.MaxInflightMsgs,
		MaxInflightBytes:          h.opts.MaxInflightBytes,
		CheckQuorum:               true,
		PreVote:                   true,
		AsyncStorageWrites:        true,
		DisableProposalForwarding: true,
		// A leader that applies its own removal (or demotion to learner) steps down
		// rather than lead a group it no longer votes in.
		StepDownOnRemoval: true,
		Logger:            h.opts.Logger,
	})
	if err != nil {
		return err
	}
	g := &group{id: id, h: h, activePos: -1, ls: ls, apply: cfg.Apply, onChange: cfg.OnChange, flushDelay: cfg.FlushDelay,
		shareVisible: cfg.ShareVisible, priority: cfg.Priority, rn: rn,
		written: map[uint64]uint64{}, acked: ackMap{}}
	g.applied = ls.ApplyFloor()
	joiner := cfg.Bootstrap == nil && len(cs.GetVoters()) == 0 && len(cs.GetLearners()) == 0 && ls.WrittenIndex() == 0
	if err := g.loadJoinGate(joiner); err != nil {
		return err
	}
	g.refreshStatus()
	g.noteConf()
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
	h.quiet.mu.Lock()
	h.quiet.activate(g)
	// The peers' listings were taken without this replica: have them sent again.
	h.quiet.staleAllLocked()
	h.quiet.mu.Unlock()
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
	g.removed.Store(true)
	h.quiet.mu.Lock()
	h.quiet.removeLocked(g)
	h.quiet.mu.Unlock()
	h.mu.Unlock()
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

type group struct {
	id           uint64
	h            *Host
	ls           *LogStorage
	apply        ApplyFunc
	onChange     func()
	flushDelay   func(int64, time.Duration) time.Duration
	shareVisible func() bool
	priority     bool // GroupConfig.Priority
	pos          int  // in h.list, guarded by h.mu

	sched  atomic.Int32 // 0 idle, 1 queued or running, 2 running and queued again
	again  bool         // set by the worker running the group: its round left work (processAll)
	fsched atomic.Int32 // the same for the flush queue
	ticks  atomic.Int32 // ticks not yet applied
	solo   atomic.Bool  // the only voter, and leader: ticks do nothing, so none are given
	// gated: the join gate is closed (campaign.go); floor is its floor (0: not yet
	// learned), guarded by mu.
	gated atomic.Bool
	floor uint64

	// Quiescence (quiesce.go, listing.go). quiet: led here and quiesced (listed in the
	// heartbeats). quietFrom: the peer host on whose listing this follower is quiet (0:
	// none). Both change under quietTable.mu, which also guards activePos (the index in
	// quietTable.active, -1 while quiet) and listMark. pub*: the follower's leader, term
	// and commit for Step's lock-free check of listings.
	quiet                       atomic.Bool
	quietFrom                   atomic.Uint64
	activePos                   int
	listMark                    uint64
	pubLead, pubTerm, pubCommit atomic.Uint64
	pubLeading                  atomic.Bool // for Stats: a leader's pubLead is 0
	// adoptAsked: the listed commit this follower last asked to adopt (adoptListing),
	// so that a listing it cannot take is not tried again every listing round.
	adoptAsked     atomic.Uint64
	qTerm, qCommit uint64             // ticker-owned: what quiet lists
	qPeers         []uint64           // ticker-owned
	qConf          quorum.JointConfig // ticker-owned: the voters when it quiesced

	inMu      sync.Mutex
	inMsgs    []*pb.Message
	inLocal   []*pb.Message
	inWritten []fromWritten
	inVisible []fromVisible
	inProps   []*Proposal
	inCtl     []func(*etcdraft.RawNode)

	flushes atomic.Uint64

	fMu    sync.Mutex
	fRecs  []appendRec
	fSince time.Time // when the oldest record in fRecs was queued
	fTimer bool      // a delayed flush (FlushDelay) is armed; at most one is

	flushing sync.Mutex  // held by the flusher while it uses the storage
	removed  atomic.Bool // set by RemoveGroup and Close: the storage is no longer used

	mu    sync.Mutex // held while a worker (or the ticker) uses the RawNode
	rn    *etcdraft.RawNode
	gone  error // set when removed or closed
	state etcdraft.StateType
	lead  uint64
	term  uint64
	conf  quorum.JointConfig
	// learners and learnersNext complete conf (learnersNext: voters of the outgoing half
	// that become learners when the joint configuration is left).
	learners, learnersNext []uint64
	// confProposed (leader) is the index of the last configuration change this leader
	// appended, ownFirst the index of its term's first entry (0: none appended yet): raft
	// drops a conf change proposed while one is unapplied, or before the leader has
	// applied everything before its term (see Status.PendingConf).
	confProposed, ownFirst uint64
	written                map[uint64]uint64 // follower → largest written report this term
	acked                  ackMap
	majority               uint64
	applied                uint64
	// replicated is, on a leader, the smallest Match of the live followers (MaxUint64
	// when there are none): the entry cache keeps what they still lack.
	replicated uint64
	waiting    []*Proposal // proposed, not yet appended
	props      []*Proposal // appended, ascending index
	needMaj    bool
	// visSent (leader) is the visible index last reported to each peer; visReport
	// (follower) the largest report of this term from its leader (visible.go). Both are
	// reset when the term or the role changes.
	visSent   map[uint64]uint64
	visReport uint64
	// confSeq counts noteConf calls; published is what OnChange last reflected (publish).
	confSeq   uint64
	published publishedStatus
	idle      int           // ticks the leader has been idle (quiesce.go)
	fast      *fastElection // a follower's campaigns after its leader's host went (fastelect.go)
	peerIDs   []uint64      // the other members
}

type appendRec struct {
	hs        *pb.HardState
	responses []*pb.Message
	election  bool // counted in Host.electionWrites while queued
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
	g.inProps, g.inMsgs, g.inLocal, g.inWritten, g.inVisible, g.inCtl = nil, nil, nil, nil, nil, nil
	g.inMu.Unlock()
	for _, p := range props {
		p.fail(err)
	}
	for _, f := range ctl {
		f(nil)
	}
}

// refreshStatus caches the term, role and leader; a change resets the written and visible
// reports.
func (g *group) refreshStatus() {
	bs := g.rn.BasicStatus()
	term, state := bs.GetTerm(), bs.RaftState
	if term != g.term || state != g.state {
		clear(g.written)
		g.majority = 0
		clear(g.visSent)
		g.visReport = 0
		g.needMaj = true
		if state != g.state {
			switch state {
			case etcdraft.StatePreCandidate:
				g.h.preCampaigns.Add(1)
			case etcdraft.StateCandidate:
				g.h.campaigns.Add(1)
			case etcdraft.StateLeader:
				g.h.wins.Add(1)
				if g.state != etcdraft.StateCandidate {
					g.h.campaigns.Add(1) // won within one round (a sole voter): never seen as candidate
				}
			}
		}
		if state == etcdraft.StateLeader && g.state != etcdraft.StateLeader {
			g.noteConf()
			// raft refuses conf changes until this term's first entry applies; a change of an
			// earlier term of this replica's may have been truncated since.
			g.ownFirst, g.confProposed = 0, 0
		}
	}
	g.term, g.state, g.lead = term, state, bs.Lead
	g.updateSolo()
}

// updateSolo records whether the replica is the group's only member and its leader. Such a
// leader has nobody to heartbeat and no election to watch, so the ticker skips it. One
// with learners is ticked: its heartbeats are what retries an append a learner lost.
func (g *group) updateSolo() {
	solo := g.state == etcdraft.StateLeader && len(g.conf[1]) == 0 && len(g.conf[0]) == 1 && len(g.learners) == 0
	if solo {
		_, solo = g.conf[0][g.h.id]
	}
	g.solo.Store(solo)
}

// noteConf caches raft's configuration (after a change, a snapshot or an election) and
// what depends on it.
func (g *group) noteConf() {
	g.confSeq++
	c := g.rn.Status().Config
	g.conf = c.Voters
	g.learners, g.learnersNext = sortedIDs(c.Learners), sortedIDs(c.LearnersNext)
	g.notePeers()
	g.updateSolo()
}

// pendingConf is Status.PendingConf.
func (g *group) pendingConf() bool {
	if g.state != etcdraft.StateLeader {
		return false
	}
	return g.ownFirst == 0 || g.ownFirst-1 > g.applied || g.confProposed > g.applied
}

func sortedIDs(m map[uint64]struct{}) []uint64 {
	if len(m) == 0 {
		return nil
	}
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
