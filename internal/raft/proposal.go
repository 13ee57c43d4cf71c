package raft

import (
	"context"
	"sync/atomic"
)

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

// ProposeAsync proposes data and returns a handle to wait on its stages. Raft appends data
// itself, not a copy (third_party/etcd-raft), and its log cache and messages to followers
// keep it after StageAppended, so data may alias a caller's buffer only if that buffer is
// never modified again.
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

// signalReplicated moves the appended proposals at or below the majority-replicated
// boundary maj to StageReplicated, if the log still holds their entry.
func (g *group) signalReplicated(maj uint64) {
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
