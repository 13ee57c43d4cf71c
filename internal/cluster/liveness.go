package cluster

import (
	"context"
	"maps"
	"time"

	"github.com/cairn-io/cairn/internal/controller"
)

// Liveness. Every registered broker sends the controller leader a heartbeat each
// HeartbeatInterval. The leader alone judges: a broker silent for longer than
// LivenessTimeout is proposed not live, and one heard again live. Only changes are
// committed, so the state machine needs no clock. A leader starts with no heartbeats heard
// (it may have been a follower a moment ago) and gives every broker LivenessTimeout from
// the start of its leadership before judging it silent.
//
// A registration is a proof of life too: a broker that restarts registers a new
// incarnation (which the state makes live) before its first heartbeat of that life
// reaches the leader, and the heartbeats heard before are of its previous life, older
// than the timeout when it was down for long. Judged on those, the new life would be
// marked dead for a heartbeat interval, and a topic created then refused for too few
// brokers. So the leader counts an incarnation newer than any it heard as heard when it
// first sees it in the state, as it counts every broker heard when its leadership starts.

func (s *Service) livenessLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.ctx.Done():
			return
		}
		leader := s.Leader()
		if leader == s.opts.NodeID {
			s.judge(time.Now())
			continue
		}
		s.mu.Lock()
		inc := s.incarnation
		s.leadTerm = 0
		s.mu.Unlock()
		if leader > 0 && inc > 0 && !s.muted.Load() {
			_ = s.tr.Send(leader, MsgHeartbeat, heartbeat{Incarnation: inc, RPCAddr: s.opts.RPCAddr}.encode())
		}
	}
}

func (s *Service) handleHeartbeat(from int32, m heartbeat) {
	if b, ok := s.state.Broker(from); ok && m.Incarnation < b.Incarnation {
		return // from a previous life of the broker
	}
	// The broker's own word for its address is newer than its registration after it
	// moved; the rpc handshake vouches for from.
	s.setPeer(from, m.RPCAddr)
	now := time.Now()
	s.mu.Lock()
	s.seen[from] = heard{at: now, incarnation: m.Incarnation}
	s.mu.Unlock()
}

// heard is when the controller leader last heard from a broker, and of which life.
type heard struct {
	at          time.Time
	incarnation uint64
}

// judge runs on the leader: it proposes a liveness change for every broker whose verdict
// differs from the state.
func (s *Service) judge(now time.Time) {
	st, err := s.host.Status(ControllerGroup)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.leadTerm != st.Term {
		s.leadTerm = st.Term
		clear(s.seen)
	}
	brokers := s.state.Brokers()
	for _, b := range brokers {
		// Not heard in this leadership, or only of an earlier life: heard now, which
		// gives a new leader's brokers and a new life each a full timeout to be heard.
		if h, ok := s.seen[b.ID]; !ok || b.Incarnation > h.incarnation {
			s.seen[b.ID] = heard{at: now, incarnation: b.Incarnation}
		}
	}
	seen := maps.Clone(s.seen)
	s.mu.Unlock()
	for _, b := range brokers {
		if live := b.ID == s.opts.NodeID || now.Sub(seen[b.ID].at) <= s.opts.LivenessTimeout; live != b.Live {
			s.verdict(b, live)
		}
	}
}

// verdict proposes a broker's liveness, one proposal per broker at a time.
func (s *Service) verdict(b controller.Broker, live bool) {
	s.mu.Lock()
	if s.verdicts[b.ID] {
		s.mu.Unlock()
		return
	}
	s.verdicts[b.ID] = true
	s.mu.Unlock()
	ok := s.spawn(func() {
		defer func() {
			s.mu.Lock()
			delete(s.verdicts, b.ID)
			s.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.LivenessTimeout)
		defer cancel()
		res, err := s.Propose(ctx, controller.SetBrokerLiveness{ID: b.ID, Incarnation: b.Incarnation, Live: live})
		switch {
		case err != nil:
			s.log.Debug("liveness verdict not applied", "broker", b.ID, "live", live, "err", err)
		case res.Err != nil:
			s.log.Debug("liveness verdict refused", "broker", b.ID, "live", live, "err", res.Err, "msg", res.Msg)
		default:
			s.log.Info("broker liveness changed", "broker", b.ID, "live", live)
		}
	})
	if !ok {
		s.mu.Lock()
		delete(s.verdicts, b.ID)
		s.mu.Unlock()
	}
}
