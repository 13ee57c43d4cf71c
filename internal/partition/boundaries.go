package partition

import (
	"math"
	"slices"
	"time"

	etcdraft "go.etcd.io/raft/v3"

	"github.com/cairn-io/cairn/internal/config"
)

// The boundaries of DESIGN.md §1, as this replica sees them: refresh recomputes them from
// the Raft group and the log, and every change wakes whoever waits on one (waiters.go)
// or watches them (Fetch's long poll).

// Boundaries are the partition's offsets, each exclusive (the next offset past the
// boundary), with the replica's view of its group.
type Boundaries struct {
	LogStart int64
	LogEnd   int64
	Flushed  int64
	// MajorityReplicated is, on a follower under write caching, the leader's
	// majority-replicated offset as the leader last told it (in the current term, capped at
	// this follower's log end; leaders of strict topics tell none), never the follower's own
	// count; elsewhere on a follower, its commit.
	MajorityReplicated int64
	Committed          int64
	// LastVisible is what Fetch may return; on a follower, what follower fetching may
	// serve (follower.go), from its commit and the leader's report only.
	LastVisible int64
	// LastStable is what a read_committed Fetch may return (DESIGN.md §10): last visible,
	// lowered to what this replica has applied and to the first offset of the oldest
	// transaction open in what it applied (txnindex.go), never below the log start. It is
	// a boundary like the others, recomputed with them, so a marker that moves it wakes
	// the long polls watching the partition.
	LastStable int64
	// LeaderEpoch is the Raft term.
	LeaderEpoch int32
	// Leader is the Raft id of the leader this replica knows (0: none); IsLeader whether
	// it is this replica.
	Leader   uint64
	IsLeader bool
	// Serving: this replica leads and has made an entry of its own term visible. Before
	// that its commit is what it learnt from its predecessor, which may trail what the
	// predecessor served; reads wait for it (leaderCheck), so that no consumer sees the
	// high watermark or the last stable offset move back across a leader change.
	Serving bool
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
	// Read before mu (txnMu is never held with it). The index may already hold entries
	// applied after st was read; that only closes transactions early, never opens one
	// below appliedEnd, so the bound below stays safe.
	appliedEnd, openFrom := p.endOffset(st.Applied), p.firstOpenTxn()
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
	} else if st.LeaderVisible > st.Committed {
		// What the leader told this follower it has majority replicated (only under write
		// caching), capped at what this follower holds: its last visible, the bound of
		// follower reads.
		b.MajorityReplicated = max(committed, p.endOffset(st.LeaderVisible))
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
	p.appliedEnd, p.openFrom = appliedEnd, openFrom
	// TermStart is 0 but on a leader, and a leader's MajorityReplicated is never below Committed.
	p.termCommitted = st.TermStart > 0 && st.Committed >= st.TermStart
	p.termReplicated = st.TermStart > 0 && st.MajorityReplicated >= st.TermStart
	p.progress = st.Progress
	// Only a leader keeps the lag window, so a follower's refresh does not read the clock.
	var now time.Time
	if b.IsLeader {
		now = p.now()
	}
	p.noteCaughtUpLocked(b, st.LogEnd, now)
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

// Boundaries returns a snapshot of the partition's offsets.
func (p *Partition) Boundaries() Boundaries {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bounds
}

// visibleLocked is what Fetch may return: committed, or majority replicated where the topic
// has write caching on; and whether a leader serves it yet (Boundaries.Serving).
func (p *Partition) visibleLocked(cfg *config.TopicConfig) (int64, bool) {
	if cfg.WriteCaching {
		return p.bounds.MajorityReplicated, p.termReplicated
	}
	return p.bounds.Committed, p.termCommitted
}

// advanceLocked applies fn to the boundaries, recomputes last visible and wakes everyone
// waiting on a boundary.
func (p *Partition) advanceLocked(fn func(b *Boundaries)) {
	fn(&p.bounds)
	p.bounds.LastVisible, p.bounds.Serving = p.visibleLocked(p.cfg.Load())
	p.bounds.LastStable = max(p.bounds.LogStart, min(p.bounds.LastVisible, p.appliedEnd, p.openFrom))
	close(p.changed)
	p.changed = make(chan struct{})
	p.version.Add(1)
	for w := range p.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// Version changes whenever a boundary moves (and whenever Watch's channels are signalled);
// equal versions mean nothing a fetch answers has changed. It takes no lock.
func (p *Partition) Version() uint64 { return p.version.Load() }

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
