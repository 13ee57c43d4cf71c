package broker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cairn-io/cairn/internal/controller"
	"github.com/cairn-io/cairn/internal/group"
	"github.com/cairn-io/cairn/internal/rpc"
	"github.com/cairn-io/cairn/internal/txn"
)

// Leadership is decided by each partition's Raft group, not by the controller, so Metadata
// cannot read it from the controller state. Every broker tells every other which groups it
// leads, with the term and the ISR (msgLeaders, a full list on every change and every
// leadershipResend); a broker answers Metadata from its own replicas first and from those
// lists for the partitions it holds no replica of.

// Message types of this package on the inter-broker transport, from the table of
// internal/rpc/types.go; New registers their handlers.
const (
	msgLeaders         = rpc.MsgLeaders         // broker → every broker: the groups I lead
	msgForwardRequest  = rpc.MsgForwardRequest  // broker → leader: a produce for a partition it leads
	msgForwardResponse = rpc.MsgForwardResponse // leader → broker: its answer
)

const leadersVersion = 1

// maxLeaderEntries bounds what a decoder accepts from one message.
const maxLeaderEntries = 1 << 20

type leaderEntry struct {
	group    uint64
	term     uint64
	logStart int64 // the leader's log start: followers follow DeleteRecords and retention
	isr      []int32
}

type leaderInfo struct {
	leader   int32
	term     uint64
	logStart int64
	isr      []int32
}

// leaderTable is what this broker knows of other brokers' leaderships.
type leaderTable struct {
	mu    sync.Mutex
	byGrp map[uint64]leaderInfo
	ch    chan struct{} // closed and replaced on every change
	// received is the last list each peer sent, as received: a peer sends an unchanged
	// list again now and then, and one of tens of thousands of groups costs a decode and
	// a walk of the table for nothing. forget drops a peer's, as it drops its claims.
	received map[int32][]byte
	recvMu   sync.Mutex // one receive at a time: received stays the list last applied
}

func newLeaderTable() *leaderTable {
	return &leaderTable{byGrp: map[uint64]leaderInfo{}, ch: make(chan struct{}), received: map[int32][]byte{}}
}

func (t *leaderTable) changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ch
}

func (t *leaderTable) get(group uint64) (leaderInfo, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	li, ok := t.byGrp[group]
	return li, ok
}

// update replaces what from leads with list: a group it no longer names is forgotten
// unless another broker claimed it since.
func (t *leaderTable) update(from int32, list []leaderEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	named := make(map[uint64]bool, len(list))
	for _, e := range list {
		named[e.group] = true
		if cur, ok := t.byGrp[e.group]; ok && cur.term > e.term {
			continue
		}
		t.byGrp[e.group] = leaderInfo{leader: from, term: e.term, logStart: e.logStart, isr: e.isr}
	}
	for g, li := range t.byGrp {
		if li.leader == from && !named[g] {
			delete(t.byGrp, g)
		}
	}
	close(t.ch)
	t.ch = make(chan struct{})
}

// forget drops every leadership claimed by a broker that is no longer live.
func (t *leaderTable) forget(live map[int32]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for g, li := range t.byGrp {
		if !live[li.leader] {
			delete(t.byGrp, g)
		}
	}
	for id := range t.received {
		if !live[id] {
			delete(t.received, id)
		}
	}
}

func (t *leaderTable) receive(from int32, payload []byte, lg *slog.Logger) {
	t.recvMu.Lock()
	defer t.recvMu.Unlock()
	t.mu.Lock()
	same := bytes.Equal(t.received[from], payload)
	t.mu.Unlock()
	if same {
		return
	}
	list, err := decodeLeaders(payload)
	if err != nil {
		lg.Warn("dropping a malformed leadership list", "from", from, "err", err)
		return
	}
	t.update(from, list)
	t.mu.Lock()
	t.received[from] = bytes.Clone(payload) // the transport reuses its buffer
	t.mu.Unlock()
}

var errBadLeaders = errors.New("malformed leadership list")

func encodeLeaders(list []leaderEntry) []byte { return appendLeaders(nil, list) }

// appendLeaders appends list's encoding to buf.
func appendLeaders(buf []byte, list []leaderEntry) []byte {
	buf = append(buf, leadersVersion)
	buf = binary.AppendUvarint(buf, uint64(len(list)))
	for _, e := range list {
		buf = binary.AppendUvarint(buf, e.group)
		buf = binary.AppendUvarint(buf, e.term)
		buf = binary.AppendUvarint(buf, uint64(max(e.logStart, 0)))
		buf = binary.AppendUvarint(buf, uint64(len(e.isr)))
		for _, id := range e.isr {
			buf = binary.AppendUvarint(buf, uint64(id))
		}
	}
	return buf
}

func decodeLeaders(b []byte) ([]leaderEntry, error) {
	if len(b) < 1 || b[0] != leadersVersion {
		return nil, errBadLeaders
	}
	b = b[1:]
	next := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		var canon [binary.MaxVarintLen64]byte
		if n <= 0 || n != binary.PutUvarint(canon[:], v) { // one encoding per value
			return 0, errBadLeaders
		}
		b = b[n:]
		return v, nil
	}
	n, err := next()
	if err != nil || n > maxLeaderEntries || n > uint64(len(b)) {
		return nil, errBadLeaders
	}
	list := make([]leaderEntry, 0, n)
	for i := uint64(0); i < n; i++ {
		var e leaderEntry
		if e.group, err = next(); err != nil {
			return nil, err
		}
		if e.term, err = next(); err != nil {
			return nil, err
		}
		ls, err := next()
		if err != nil || ls > 1<<62 {
			return nil, errBadLeaders
		}
		e.logStart = int64(ls)
		k, err := next()
		if err != nil || k > uint64(len(b)) || k > 1<<16 {
			return nil, errBadLeaders
		}
		for j := uint64(0); j < k; j++ {
			id, err := next()
			if err != nil || id == 0 || id > 1<<31-1 {
				return nil, errBadLeaders
			}
			e.isr = append(e.isr, int32(id))
		}
		list = append(list, e)
	}
	if len(b) != 0 {
		return nil, errBadLeaders
	}
	return list, nil
}

// PartitionView is what Metadata says of one partition.
type PartitionView struct {
	Leader      int32 // -1: none known (LEADER_NOT_AVAILABLE)
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
}

func nodeIDs(ids []uint64) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// PartitionView describes partition p of t from this broker's knowledge: its own replica
// when it leads, else the leader's list, else what its own follower replica knows.
func (b *Broker) PartitionView(t controller.Topic, p int32) PartitionView {
	v := PartitionView{Leader: -1, LeaderEpoch: -1}
	if p < 0 || int(p) >= len(t.Assignment) {
		return v
	}
	v.Replicas = t.Replicas(p) // while it moves: the target first, then the replicas leaving
	b.mu.RLock()
	r := b.replicas[replicaKey{t.ID, p}]
	b.mu.RUnlock()
	if r != nil {
		if bd := r.p.Boundaries(); bd.IsLeader {
			v.Leader, v.LeaderEpoch, v.ISR = b.cfg.NodeID, bd.LeaderEpoch, nodeIDs(r.p.ISR())
			return v
		}
	}
	// The leader's own list, unless this broker's follower replica knows a newer term.
	if r != nil {
		if bd := r.p.Boundaries(); bd.Leader != 0 {
			v.Leader, v.LeaderEpoch, v.ISR = int32(bd.Leader), bd.LeaderEpoch, []int32{int32(bd.Leader)}
		}
	}
	if int(p) < len(t.Groups) {
		if li, ok := b.leaders.get(t.Groups[p]); ok && int64(li.term) >= int64(v.LeaderEpoch) {
			v.Leader, v.LeaderEpoch, v.ISR = li.leader, int32(min(li.term, 1<<31-1)), li.isr
		}
	}
	return v
}

// PartitionViews describes every partition of a topic (nil if it does not exist).
func (b *Broker) PartitionViews(topic string) []PartitionView {
	t, ok := b.topic(topic)
	if !ok {
		return nil
	}
	out := make([]PartitionView, t.Partitions())
	for p := range out {
		out[p] = b.PartitionView(*t, int32(p))
	}
	return out
}

// kickRoles wakes the leadership loop (a replica's role may have changed).
func (b *Broker) kickRoles() {
	b.kickMoves() // a new leader takes over the moves of the groups it now leads
	select {
	case b.roleKick <- struct{}{}:
	default:
	}
}

// leadershipLoop publishes this broker's leaderships to its peers and moves the group
// coordinator's shards with the leadership of __consumer_offsets' partitions.
func (b *Broker) leadershipLoop() {
	tick := time.NewTicker(leadershipTick)
	defer tick.Stop()
	var last, lastSent time.Time
	var cost time.Duration // the last round's length
	var lastPayload []byte
	// Kept from round to round, since a round walks every local replica and, at tens of
	// thousands of them, its garbage was most of an idle broker's allocations: the
	// buffers, and the ISR last published for each group led, reused while unchanged.
	var (
		list    []leaderEntry
		follow  []followed
		isrBuf  []uint64
		buf     []byte
		round   uint64
		lastISR = publishedISRs{}
	)
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-tick.C:
		case <-b.roleKick:
			// A round walks every local replica: coalesce the kicks of a burst (a topic's
			// replicas opening, a node's elections) into one round per interval.
			// At least leadershipMinInterval apart, and at least leadershipDuty times
			// the last round's own length: a round walks every replica, and a broker
			// with tens of thousands of them, among elections, must not spend its CPU
			// walking them 20 times a second.
			if wait := max(leadershipMinInterval, leadershipDuty*cost) - time.Since(last); wait > 0 {
				select {
				case <-b.ctx.Done():
					return
				case <-time.After(wait):
				}
			}
		}
		last = time.Now()
		round++
		list, follow = list[:0], follow[:0]
		nowLed := map[int32]bool{}
		txnLed := map[int32]int32{}
		b.mu.RLock()
		for _, r := range b.replicas {
			leads, epoch, logStart, isr := r.p.LeadershipView(isrBuf[:0])
			isrBuf = isr
			if !leads {
				follow = append(follow, followed{r, logStart})
				continue
			}
			list = append(list, leaderEntry{group: r.group, term: uint64(epoch), logStart: logStart, isr: lastISR.keep(r.group, isr, round)})
			switch r.name {
			case group.OffsetsTopic:
				nowLed[r.p.ID()] = true
			case txn.StateTopic:
				txnLed[r.p.ID()] = epoch
			}
		}
		b.mu.RUnlock()
		for g, pi := range lastISR {
			if pi.round != round {
				delete(lastISR, g)
			}
		}
		for _, f := range follow {
			r := f.r
			// Only a leader's log start past ours can move it (FollowLogStart goes no
			// further): most rounds, for most followers, there is nothing to do, and
			// finding that out costs a walk of the replica's log.
			if li, ok := b.leaders.get(r.group); ok && li.leader != b.cfg.NodeID && li.logStart > f.logStart {
				if err := r.p.FollowLogStart(li.logStart); err != nil {
					b.lg.Warn("following the leader's log start", "topic", r.name, "partition", r.p.ID(), "err", err)
				}
			}
		}
		clear(follow) // holds replicas: let a removed one go
		b.moveGroupShards(nowLed)
		b.moveTxnShards(txnLed)
		// In group order, so that an unchanged list encodes to the same bytes (the
		// replicas are walked in map order): it is then neither stored again here nor
		// sent before leadershipResend, and a peer receiving it again skips it.
		slices.SortFunc(list, func(a, b leaderEntry) int { return cmp.Compare(a.group, b.group) })
		buf = appendLeaders(buf[:0], list)
		changed := !bytes.Equal(buf, lastPayload)
		send := changed || time.Since(lastSent) >= leadershipResend
		if send {
			// A resend stores it again too: forget may have dropped this broker's own
			// claims while the controller did not count it live.
			b.leaders.update(b.cfg.NodeID, list)
		}
		live := map[int32]bool{}
		var payload []byte
		if send {
			payload = bytes.Clone(buf) // the transport may hold it past this round
		}
		for _, br := range b.state().LiveBrokers() {
			live[br.ID] = true
			if send && br.ID != b.cfg.NodeID {
				_ = b.transport.Send(br.ID, msgLeaders, payload) // lost: a later round repeats it
			}
		}
		if send {
			lastPayload, lastSent = payload, time.Now()
		}
		b.leaders.forget(live)
		cost = time.Since(last)
	}
}

// publishedISR is the ISR a leadership round last published for a group, and the round.
type publishedISR struct {
	isr   []int32
	round uint64
}

type publishedISRs map[uint64]publishedISR

// keep returns the ISR to publish for group: the one published before if it has the same
// members as isr (so that an idle broker allocates none), else a new one, which it
// records. Published slices are shared (the leader table holds them) and never changed.
func (m publishedISRs) keep(group uint64, isr []uint64, round uint64) []int32 {
	pi := m[group]
	if !sameIDs(pi.isr, isr) {
		pi.isr = nodeIDs(isr)
	}
	pi.round = round
	m[group] = pi
	return pi.isr
}

func sameIDs(a []int32, b []uint64) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for i := range a {
		if uint64(a[i]) != b[i] {
			return false
		}
	}
	return true
}

// followed is a replica that follows, and its log start when the round saw it.
type followed struct {
	r        *replica
	logStart int64
}

// moveGroupShards makes the group coordinator serve exactly the __consumer_offsets
// partitions in led (those this broker leads).
func (b *Broker) moveGroupShards(led map[int32]bool) {
	if b.groups == nil {
		return
	}
	b.shardMu.Lock()
	defer b.shardMu.Unlock()
	for i := range led {
		if !b.shards[i] {
			b.groups.BecomeLeader(i)
			b.shards[i] = true
		}
	}
	for i := range b.shards {
		if !led[i] {
			b.groups.Resign(i)
			delete(b.shards, i)
		}
	}
}

// ledOffsetsPartitions lists the __consumer_offsets partitions this broker leads.
func (b *Broker) ledOffsetsPartitions() map[int32]bool {
	led := map[int32]bool{}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, r := range b.replicas {
		if r.name == group.OffsetsTopic && r.p.IsLeader() {
			led[r.p.ID()] = true
		}
	}
	return led
}

// The leadership loop: a round on every role change (spaced by leadershipMinInterval in a
// burst) and every leadershipTick (ISR changes are not signalled); an unchanged list is
// sent again every leadershipResend.
const (
	leadershipMinInterval = 50 * time.Millisecond
	leadershipDuty        = 10 // rounds at most 1/leadershipDuty of the time
	leadershipTick        = 5 * time.Second
	leadershipResend      = 10 * time.Second
)

// handOffLeadership moves the leadership of every group this broker leads to another
// in-sync voter before it stops, so clients move on at once instead of after an election
// timeout. It waits a bounded time.
func (b *Broker) handOffLeadership() {
	if b.svc.Load() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.mu.RLock()
	var moving []*replica
	for _, r := range b.replicas {
		if !r.p.IsLeader() {
			continue
		}
		// Never to a broker in maintenance (maintenance.go), nor one known to be down.
		if to := b.transferTarget(nodeIDs(r.p.ISR()), r.replicas, b.cfg.NodeID); to >= 0 {
			if b.host.TransferLeadership(r.group, uint64(to)) == nil {
				moving = append(moving, r)
			}
		}
	}
	b.mu.RUnlock()
	if st, err := b.host.Status(0); err == nil && st.Leader == uint64(b.cfg.NodeID) {
		if to := b.controllerTarget(b.cfg.NodeID); to >= 0 {
			_ = b.host.TransferLeadership(0, uint64(to))
		}
	}
	for _, r := range moving {
		for r.p.IsLeader() && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	if len(moving) > 0 {
		b.lg.Info("handed leadership off before stopping", "partitions", len(moving))
	}
}
