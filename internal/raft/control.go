package raft

import (
	"errors"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// control runs f on the group's RawNode in a worker (f(nil) if the group is removed or
// the host closed first).
func (h *Host) control(id uint64, f func(*etcdraft.RawNode)) error {
	g, err := h.group(id)
	if err != nil {
		return err
	}
	g.queueControl(f)
	return nil
}

// queueControl queues f for the group's next ready round.
func (g *group) queueControl(f func(*etcdraft.RawNode)) {
	g.inMu.Lock()
	g.inCtl = append(g.inCtl, f)
	g.inMu.Unlock()
	g.h.enqueue(g)
}

// Campaign makes this replica of the group campaign to become leader; a joiner that is
// still join-gated (Status.JoinGated) does not.
func (h *Host) Campaign(id uint64) error {
	g, err := h.group(id)
	if err != nil {
		return err
	}
	return h.control(id, func(rn *etcdraft.RawNode) {
		if rn != nil && !g.gated.Load() {
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
