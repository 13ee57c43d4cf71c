package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/raft"
)

// Propose proposes cmd to the controller from any broker: the leader proposes it here, a
// follower forwards it to the leader. It returns the command's result (a rejected command
// has Result.Err set and a nil error) only once the entry is applied on this broker's
// replica too, so that a read of State right after sees it. It retries across leader changes
// until ctx ends; with no leader known then the error is ErrNoController.
//
// A proposal whose attempt timed out may still have been applied; the retry then proposes
// it again, and the second is usually refused by the state (TOPIC_ALREADY_EXISTS and the
// like), as a retried Kafka admin request is. It never reports success for an entry that
// was not applied.
func (s *Service) Propose(ctx context.Context, cmd controller.Command) (controller.Result, error) {
	data, err := controller.EncodeCommand(cmd)
	if err != nil {
		return controller.Result{}, err
	}
	return s.propose(ctx, data)
}

func (s *Service) propose(ctx context.Context, data []byte) (controller.Result, error) {
	backoff := 10 * time.Millisecond
	var last error
	for {
		if err := s.Err(); err != nil {
			return controller.Result{}, err
		}
		if s.ctx.Err() != nil {
			return controller.Result{}, ErrClosed
		}
		if ctx.Err() != nil {
			if last == nil || errors.Is(last, ErrNoController) {
				return controller.Result{}, fmt.Errorf("%w: %w", ErrNoController, ctx.Err())
			}
			return controller.Result{}, fmt.Errorf("cluster: proposal not applied: %w (last attempt: %v)", ctx.Err(), last)
		}
		var (
			res controller.Result
			err error
		)
		switch leader := s.Leader(); {
		case leader == s.opts.NodeID:
			actx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
			res, err = s.proposeLocal(actx, data)
			cancel()
		case leader > 0:
			res, err = s.forward(ctx, leader, data)
		default:
			err = ErrNoController
		}
		if err == nil {
			return res, nil
		}
		if errors.Is(err, ErrClosed) || errors.Is(err, raft.ErrHostClosed) || errors.Is(err, raft.ErrGroupRemoved) {
			return controller.Result{}, ErrClosed
		}
		last = err
		_ = s.sleep(ctx, backoff)
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// proposeLocal proposes an encoded command on this replica (which must lead group 0) and
// returns its result once it is committed and applied here.
func (s *Service) proposeLocal(ctx context.Context, cmd []byte) (controller.Result, error) {
	p, err := s.host.ProposeAsync(ControllerGroup, encodeEntry(cmd, time.Now().UnixMilli()))
	if err != nil {
		return controller.Result{}, err
	}
	if err := p.Wait(ctx, raft.StageCommitted); err != nil {
		return controller.Result{}, err
	}
	res, ok := s.result(p.Index())
	if !ok {
		if err := s.Err(); err != nil {
			return controller.Result{}, err
		}
		return controller.Result{}, errResultLost
	}
	return res, nil
}

// forward sends one proposal attempt to the leader and waits for its answer.
func (s *Service) forward(ctx context.Context, leader int32, cmd []byte) (controller.Result, error) {
	corr := s.corr.Add(1)
	ch := make(chan proposeResponse, 1)
	s.mu.Lock()
	s.pending[corr] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, corr)
		s.mu.Unlock()
	}()
	req := proposeRequest{Corr: corr, RPCAddr: s.opts.RPCAddr, Command: cmd}.encode()
	if err := s.tr.Send(leader, MsgProposeRequest, req); err != nil {
		return controller.Result{}, fmt.Errorf("cluster: sending to controller leader %d: %w", leader, err)
	}
	tm := time.NewTimer(s.opts.RequestTimeout)
	defer tm.Stop()
	select {
	case r := <-ch:
		switch r.Status {
		case statusOK:
			if err := s.waitApplied(ctx, r.Index); err != nil {
				return controller.Result{}, err
			}
			return resultOf(r), nil
		case statusRejected:
			return resultOf(r), nil
		case statusNotLeader:
			return controller.Result{}, fmt.Errorf("%w (node %d; it names %d)", errNotLeader, leader, r.Leader)
		default:
			return controller.Result{}, errUnknownState
		}
	case <-tm.C:
		return controller.Result{}, fmt.Errorf("%w (leader %d)", errTimedOut, leader)
	case <-ctx.Done():
		return controller.Result{}, ctx.Err()
	case <-s.ctx.Done():
		return controller.Result{}, ErrClosed
	}
}

func resultOf(r proposeResponse) controller.Result {
	res := controller.Result{Index: r.Index, Msg: r.Msg, ProducerIDs: r.PIDs}
	if r.Code != 0 {
		res.Err = kerr.TypedErrorForCode(r.Code)
	}
	return res
}

// handle is the rpc handler New registers for this package's block of message types: a
// message is handled or, if malformed (a number of the block this release has no type for
// included), dropped, counted and logged. It never blocks for long.
func (s *Service) handle(from int32, msgType uint8, payload []byte) {
	m, err := decodeMessage(msgType, payload)
	if err == nil && from <= 0 {
		err = fmt.Errorf("%w: sender id %d", errBadMessage, from)
	}
	if err != nil {
		s.dropped.Add(1)
		s.log.Warn("dropping a malformed cluster message", "from", from, "type", msgType, "err", err)
		return
	}
	switch m := m.(type) {
	case joinRequest:
		s.spawnBounded(func() { s.handleJoin(from, m) })
	case joinResponse:
		select {
		case s.joinCh <- m:
		default:
		}
	case proposeRequest:
		if !s.spawnBounded(func() { s.handlePropose(from, m) }) {
			s.reply(from, proposeResponse{Corr: m.Corr, Status: statusRetry, Leader: s.Leader()})
		}
	case proposeResponse:
		s.mu.Lock()
		ch := s.pending[m.Corr]
		s.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default:
			}
		}
	case heartbeat:
		s.handleHeartbeat(from, m)
	}
}

// spawnBounded is spawn with at most maxInflight requests at once.
func (s *Service) spawnBounded(f func()) bool {
	if s.inflight.Add(1) > maxInflight {
		s.inflight.Add(-1)
		return false
	}
	ok := s.spawn(func() {
		defer s.inflight.Add(-1)
		f()
	})
	if !ok {
		s.inflight.Add(-1)
	}
	return ok
}

func (s *Service) reply(to int32, r proposeResponse) {
	if err := s.tr.Send(to, MsgProposeResponse, r.encode()); err != nil {
		s.log.Debug("could not answer a proposal", "to", to, "err", err)
	}
}

// handlePropose proposes a forwarded command if this replica leads.
func (s *Service) handlePropose(from int32, m proposeRequest) {
	s.setPeer(from, m.RPCAddr)
	resp := proposeResponse{Corr: m.Corr, Leader: s.Leader()}
	if _, err := controller.DecodeCommand(m.Command); err != nil {
		resp.Status, resp.Code, resp.Msg = statusRejected, kerr.InvalidRequest.Code, err.Error()
		s.reply(from, resp)
		return
	}
	if resp.Leader != s.opts.NodeID {
		resp.Status = statusNotLeader
		s.reply(from, resp)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	res, err := s.proposeLocal(ctx, m.Command)
	switch {
	case err == nil:
		resp.Status, resp.Index, resp.Msg, resp.PIDs = statusOK, res.Index, res.Msg, res.ProducerIDs
		if res.Err != nil {
			resp.Code = res.Err.Code
		}
	case errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrTruncated):
		resp.Status, resp.Leader = statusNotLeader, s.Leader()
	default:
		resp.Status = statusRetry
	}
	s.reply(from, resp)
}

// handleJoin adds a broker to group 0 as a learner if this replica leads, and answers once
// the change is applied here.
func (s *Service) handleJoin(from int32, m joinRequest) {
	s.setPeer(from, m.RPCAddr)
	send := func(r joinResponse) {
		if err := s.tr.Send(from, MsgJoinResponse, r.encode()); err != nil {
			s.log.Debug("could not answer a join", "to", from, "err", err)
		}
	}
	leader := s.Leader()
	if leader != s.opts.NodeID {
		send(joinResponse{Status: statusNotLeader, Leader: leader, LeaderAddr: s.peerAddr(leader)})
		return
	}
	// The configuration the joiner bootstraps with: re-applying the log's older
	// add-learner changes on top of it changes nothing.
	ok := func() {
		_, cs, err := s.ls.InitialState()
		if err != nil || len(cs.GetVotersOutgoing()) > 0 || len(cs.GetLearnersNext()) > 0 {
			return // in a joint configuration: the joiner asks again
		}
		send(joinResponse{Status: statusOK, Leader: s.opts.NodeID, LeaderAddr: s.opts.RPCAddr,
			Voters: cs.GetVoters(), Learners: cs.GetLearners()})
	}
	if s.isMember(uint64(from)) {
		ok()
		return
	}
	s.mu.Lock()
	busy := s.joining[from]
	s.joining[from] = true
	s.mu.Unlock()
	if busy {
		return // the first request answers
	}
	defer func() {
		s.mu.Lock()
		delete(s.joining, from)
		s.mu.Unlock()
	}()
	cc := &pb.ConfChange{Type: pb.ConfChangeAddLearnerNode.Enum(), NodeId: new(uint64(from))}
	if err := s.host.ProposeConfChange(ControllerGroup, cc); err != nil {
		send(joinResponse{Status: statusNotLeader, Leader: s.Leader(), Msg: err.Error()})
		return
	}
	s.log.Info("adding a broker to the controller group as a learner", "broker", from, "addr", m.RPCAddr)
	deadline := time.Now().Add(s.opts.RequestTimeout)
	for !s.isMember(uint64(from)) {
		if time.Now().After(deadline) || s.sleep(s.ctx, 10*time.Millisecond) != nil {
			return // the joiner asks again
		}
	}
	ok()
}
