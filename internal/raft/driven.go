package raft

import (
	"errors"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// DrivenHost is a Host that starts no goroutines, for deterministic tests only (package
// rafttest drives a set of them; a broker never builds one). Its caller runs, from one
// goroutine of its own, the rounds the workers, flushers and ticker of a started Host would
// run, and moves its clock: every message, fsync and tick happens when the test says so.
//
// The rounds are the started host's own code (processAll, flushAll, tickOnce), so a driven
// host differs from a started one only in who calls them and in its clock; nothing on the
// started host's path tests whether it is driven. A call that waits for a worker waits
// until the caller runs the round that serves it: the caller must not make it from the
// goroutine that runs the rounds (rafttest.Driver.ProcessWhile runs it beside them), except
// ProposeConfChange, which DrivenHost serves itself.
type DrivenHost struct {
	*Host
	// out is the rounds' outbox: a started host has one per worker and per flusher; the
	// rounds of a driven host run one at a time.
	out *outbox
}

// NewDrivenHost builds a host that runs only when its caller runs RunReady, RunFlushes and
// Tick, on clock (write caching's flush delay waits on it). For deterministic tests only.
func NewDrivenHost(opts HostOptions, clock Clock) *DrivenHost {
	h := newHost(opts, clock)
	return &DrivenHost{Host: h, out: newOutbox(h)}
}

// RunReady runs ready handling, as the workers would, until no group of the host has any
// left, then sends its traffic; it reports whether there was any. For deterministic tests.
func (d *DrivenHost) RunReady() bool { return d.drain(&d.readyQ, 16, d.processAll) }

// RunFlushes runs the flushers' rounds until the flush queue is empty (a flush that write
// caching holds back leaves the queue until its timer, on the host's clock, queues it
// again); it reports whether there was any. For deterministic tests.
func (d *DrivenHost) RunFlushes() bool { return d.drain(&d.flushQ, 64, d.flushAll) }

// Tick is one round of the ticker. For deterministic tests.
func (d *DrivenHost) Tick() { d.tickOnce() }

// ProposeConfChange is Host.ProposeConfChange, which waits for a worker that a driven host
// does not have: it queues the proposal and runs ready handling (RunReady) itself.
func (d *DrivenHost) ProposeConfChange(id uint64, cc pb.ConfChangeI) error {
	var err error
	if e := d.control(id, func(rn *etcdraft.RawNode) {
		if rn == nil {
			err = ErrGroupRemoved
			return
		}
		err = rn.ProposeConfChange(cc)
	}); e != nil {
		return e
	}
	d.RunReady()
	if errors.Is(err, etcdraft.ErrProposalDropped) {
		err = ErrNotLeader
	}
	return err
}

// drain runs rounds of at most n of q's groups until q is empty.
func (d *DrivenHost) drain(q *workQueue, n int, round func([]*group, *outbox)) bool {
	ran := false
	var batch []*group
	for {
		if batch = q.take(batch[:0], n); len(batch) == 0 {
			return ran
		}
		ran = true
		round(batch, d.out)
	}
}
