// Package group is Cairn's consumer group coordinator. It owns the classic group protocol's
// membership state machines (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead:
// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, session and rebalance timeouts, static
// membership) and the groups' committed offsets, persisted as Kafka's own record schemas in
// the compacted internal topic __consumer_offsets. A group lives in the partition its id
// hashes to; the coordinator serves the groups of the partitions this node leads, rebuilding
// them by replaying the partition when it starts leading one.
//
// It must not parse Kafka wire frames (internal/kafka translates requests into calls here)
// nor touch storage directly: it writes with partition.Produce at acks=-1 and reads with
// partition.Fetch. It sits beside internal/partition and never imports internal/broker or
// internal/kafka; the broker hands it a Host to find partitions and topics. internal/kafka
// imports it, for the request and result types of the group APIs it translates and for
// OffsetsTopic, and calls the Coordinator that Broker.Groups returns: those types are the
// contract between the two, and a change to them is a change to kafka's group APIs.
package group

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// MaxProtocolMetadataBytes bounds what one member may hand the coordinator to keep in
// memory and persist: the metadata of each protocol it offers in JoinGroup, and the
// assignment a leader gives it in SyncGroup. A larger one is refused with INVALID_REQUEST
// and nothing of the request is kept. Kafka sets no such bound (an oversized group record
// then fails to store and the request gets UNKNOWN_SERVER_ERROR); INVALID_REQUEST is the
// code Kafka uses for a request it will not serve as sent, and it is not retriable.
const MaxProtocolMetadataBytes = 1 << 20

// Host is what the coordinator needs from the node it runs on.
type Host interface {
	// OffsetsPartition returns this node's replica of __consumer_offsets partition i when
	// this node leads it, else nil.
	OffsetsPartition(i int32) *partition.Partition
	// PartitionCount reports a topic's partition count; false when the topic does not exist.
	PartitionCount(topic string) (int32, bool)
}

// Options configures a Coordinator.
type Options struct {
	Host Host
	// Partitions is the partition count of __consumer_offsets; 0 means the topic is not
	// available and every group request gets COORDINATOR_NOT_AVAILABLE.
	Partitions int32
	// Config returns the current cluster configuration; it is read on every request, so
	// run-time changes apply at once.
	Config func() config.ClusterConfig
	Logger *slog.Logger
	// Now is the clock; time.Now when nil. Tests inject their own.
	Now func() time.Time
	// TickInterval is how often session, rebalance and sync deadlines are checked
	// (default 100ms). Negative: no background loop, the caller drives Tick (tests).
	TickInterval time.Duration
}

type shardState int

const (
	shardNone    shardState = iota // not led here
	shardLoading                   // replaying
	shardActive                    // serving
)

// Coordinator serves the consumer groups of the __consumer_offsets partitions this node
// leads.
type Coordinator struct {
	host Host
	n    int32
	cfg  func() config.ClusterConfig
	lg   *slog.Logger
	now  func() time.Time

	mu      sync.Mutex
	shards  []shardState
	loadGen []int // bumped on every leadership change, so a stale load is discarded
	groups  map[string]*group
	// lateMarkers are the transaction markers that landed on a shard while it loaded.
	lateMarkers map[int32][]lateMarker
	closed      bool
	nextExpiry  time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New makes a coordinator; it serves nothing until BecomeLeader is called for partitions.
func New(opts Options) *Coordinator {
	c := &Coordinator{host: opts.Host, n: opts.Partitions, cfg: opts.Config, lg: opts.Logger, now: opts.Now,
		groups: map[string]*group{}, lateMarkers: map[int32][]lateMarker{}, shards: make([]shardState, max(opts.Partitions, 0)), loadGen: make([]int, max(opts.Partitions, 0))}
	if c.lg == nil {
		c.lg = slog.Default()
	}
	c.lg = c.lg.With("component", "group")
	if c.now == nil {
		c.now = time.Now
	}
	if c.cfg == nil {
		c.cfg = func() config.ClusterConfig { return config.ResolveCluster(nil) }
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.nextExpiry = c.now().Add(time.Duration(c.cfg().OffsetsRetentionCheckMs) * time.Millisecond)
	interval := opts.TickInterval
	if interval == 0 {
		interval = 100 * time.Millisecond
	}
	if interval > 0 {
		c.wg.Add(1)
		go c.loop(interval)
	}
	return c
}

// Partitions is the partition count of __consumer_offsets the coordinator hashes over.
func (c *Coordinator) Partitions() int32 { return c.n }

// Close stops the coordinator: waiting JoinGroup and SyncGroup requests get NOT_COORDINATOR,
// timers stop, and in-flight writes are abandoned (their records may still become durable and
// are replayed on the next start). It waits for the coordinator's goroutines.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	for _, g := range c.groups {
		c.failWaitersLocked(g, kerr.NotCoordinator)
	}
	c.groups = map[string]*group{}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

func (c *Coordinator) failWaitersLocked(g *group, err *kerr.Error) {
	for _, m := range g.members {
		m.failWaits(err)
	}
}

// Ready reports whether the coordinator serves the group's partition: nil, or
// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR.
func (c *Coordinator) Ready(groupID string) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.shardLocked(groupID)
	return err
}

func (c *Coordinator) shardLocked(groupID string) (int32, *kerr.Error) {
	if c.closed || c.n <= 0 {
		return -1, kerr.CoordinatorNotAvailable
	}
	s := PartitionFor(groupID, c.n)
	switch c.shards[s] {
	case shardLoading:
		return s, kerr.CoordinatorLoadInProgress
	case shardNone:
		return s, kerr.NotCoordinator
	}
	return s, nil
}

// BecomeLeader starts serving __consumer_offsets partition i: the coordinator replays it in
// the background and answers COORDINATOR_LOAD_IN_PROGRESS for its groups until done.
func (c *Coordinator) BecomeLeader(i int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || i < 0 || i >= c.n || c.shards[i] != shardNone {
		return
	}
	c.shards[i] = shardLoading
	delete(c.lateMarkers, i)
	c.loadGen[i]++
	gen := c.loadGen[i]
	c.wg.Add(1)
	go c.load(i, gen)
}

// Resign stops serving partition i (another node leads it now): its groups are dropped
// from memory and their waiting requests get NOT_COORDINATOR.
func (c *Coordinator) Resign(i int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= c.n {
		return
	}
	c.shards[i] = shardNone
	c.loadGen[i]++
	for id, g := range c.groups {
		if g.shard == i {
			c.failWaitersLocked(g, kerr.NotCoordinator)
			g.transition(Dead, c.now())
			delete(c.groups, id)
		}
	}
}

// Loaded reports whether partition i is replayed and served.
func (c *Coordinator) Loaded(i int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return i >= 0 && i < c.n && c.shards[i] == shardActive
}

func (c *Coordinator) load(i int32, gen int) {
	defer c.wg.Done()
	for attempt := 0; ; attempt++ {
		groups, err := c.replay(i)
		if err == nil {
			c.mu.Lock()
			if c.closed || c.loadGen[i] != gen {
				c.mu.Unlock()
				return
			}
			for id, g := range groups {
				c.groups[id] = g
			}
			c.shards[i] = shardActive
			c.applyLateMarkersLocked(i)
			c.mu.Unlock()
			level := slog.LevelDebug
			if len(groups) > 0 {
				level = slog.LevelInfo
			}
			c.lg.Log(context.Background(), level, "loaded groups", "partition", i, "groups", len(groups))
			return
		}
		if c.ctx.Err() != nil {
			return
		}
		c.lg.Error("replaying __consumer_offsets failed; retrying", "partition", i, "err", err)
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(min(time.Duration(attempt+1)*200*time.Millisecond, 5*time.Second)):
		}
	}
}

// loadBatchBytes is how much one replay read asks for.
const loadBatchBytes = 4 << 20

// replay reads partition i from its log start to its log end (once that is visible) and
// rebuilds the groups stored there.
func (c *Coordinator) replay(i int32) (map[string]*group, error) {
	p := c.host.OffsetsPartition(i)
	if p == nil {
		return nil, errors.New("partition is not available on this node")
	}
	end := p.Boundaries().LogEnd
	// Everything in the log when leadership began is replayed, so wait until it is visible.
	if err := p.WaitVisible(c.ctx, end); err != nil {
		return nil, err
	}
	r := newReplayer(i, c.now())
	off := p.Boundaries().LogStart
	for off < end {
		res := p.Fetch(off, loadBatchBytes, -1)
		if res.Err == kerr.OffsetOutOfRange && off < res.LogStart {
			off = res.LogStart // retention raced the read
			continue
		}
		if res.Err != nil {
			return nil, res.Err
		}
		if len(res.Records) == 0 {
			break
		}
		next, skipped, err := recordbatch.WalkBatchRecords(res.Records, r.apply, r.marker)
		if skipped > 0 {
			c.lg.Warn("skipped compressed batches in __consumer_offsets (the coordinator writes none)", "partition", i, "batches", skipped)
		}
		if err != nil {
			return nil, err
		}
		if next <= off {
			break
		}
		off = next
	}
	for _, e := range r.bad {
		c.lg.Warn("skipped an unreadable record in __consumer_offsets", "partition", i, "err", e)
	}
	return r.groups, nil
}

// replayer rebuilds groups from records in log order.
type replayer struct {
	shard  int32
	now    time.Time
	groups map[string]*group
	bad    []error
}

func newReplayer(shard int32, now time.Time) *replayer {
	return &replayer{shard: shard, now: now, groups: map[string]*group{}}
}

func (r *replayer) get(id string) *group {
	g := r.groups[id]
	if g == nil {
		g = newGroup(id, r.shard, r.now)
		r.groups[id] = g
	}
	return g
}

// marker settles the pending transactional offsets of a producer, as a marker does when
// it lands.
func (r *replayer) marker(h *recordbatch.Header, typ recordbatch.ControlType, ok bool) {
	if !ok || h.ProducerID < 0 {
		return
	}
	for _, g := range r.groups {
		g.completeTxn(h.ProducerID, typ == recordbatch.ControlCommit)
	}
}

func (r *replayer) apply(h *recordbatch.Header, offset int64, key, value []byte) error {
	rec, err := decodeRecord(key, value)
	if err != nil {
		if len(r.bad) < 10 {
			r.bad = append(r.bad, err)
		}
		return nil
	}
	if h.Attributes&recordbatch.AttrTransactional != 0 && h.ProducerID >= 0 {
		if rec.isOffset && rec.offset != nil {
			v := rec.offset
			g := r.get(rec.group)
			pend := g.txnPending[h.ProducerID]
			if pend == nil {
				pend = map[tp]*committed{}
				g.txnPending[h.ProducerID] = pend
			}
			pend[rec.tp] = &committed{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata,
				commitMs: v.CommitTimestamp, expireMs: -1, logOffset: offset}
		}
		return nil
	}
	switch {
	case rec.isOffset && rec.offset == nil:
		if g := r.groups[rec.group]; g != nil {
			delete(g.offsets, rec.tp)
			r.dropIfEmpty(g)
		}
	case rec.isOffset:
		g := r.get(rec.group)
		v := rec.offset
		expire := int64(-1)
		if v.Version == 1 {
			expire = v.ExpireTimestamp
		}
		g.offsets[rec.tp] = &committed{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata,
			commitMs: v.CommitTimestamp, expireMs: expire, logOffset: offset}
	case rec.isGroup && rec.meta == nil:
		if g := r.groups[rec.group]; g != nil {
			g.members, g.static = map[string]*member{}, map[string]string{}
			g.protocolType, g.protocol, g.leader, g.generation = "", "", "", 0
			g.transition(Empty, r.now)
			r.dropIfEmpty(g)
		}
	case rec.isGroup:
		g := r.get(rec.group)
		v := rec.meta
		g.protocolType, g.generation = v.ProtocolType, v.Generation
		g.protocol, g.leader = "", ""
		if v.Protocol != nil {
			g.protocol = *v.Protocol
		}
		if v.Leader != nil {
			g.leader = *v.Leader
		}
		g.members, g.static = map[string]*member{}, map[string]string{}
		for _, vm := range v.Members {
			m := &member{id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
				rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
				sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
				protocolType:     v.ProtocolType, protocols: []Protocol{{Name: g.protocol, Metadata: vm.Subscription}},
				assignment: vm.Assignment, heartbeat: r.now}
			if v.Version == 0 {
				m.rebalanceTimeout = m.sessionTimeout
			}
			g.members[m.id] = m
			if m.instanceID != nil {
				g.static[*m.instanceID] = m.id
			}
		}
		since := r.now
		if v.Version >= 2 && v.CurrentStateTimestamp > 0 {
			since = time.UnixMilli(v.CurrentStateTimestamp)
		}
		if len(g.members) > 0 {
			g.transition(Stable, since)
		} else {
			g.leader = ""
			g.transition(Empty, since)
		}
	}
	return nil
}

// dropIfEmpty forgets a replayed group that has neither offsets nor metadata left.
func (r *replayer) dropIfEmpty(g *group) {
	if len(g.offsets) == 0 && len(g.txnPending) == 0 && len(g.members) == 0 && g.protocolType == "" && g.generation == 0 {
		delete(r.groups, g.id)
	}
}

func (c *Coordinator) loop(interval time.Duration) {
	defer c.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			c.Tick()
		}
	}
}

// Tick checks every deadline once: pending member ids, sessions, the join phase of a
// rebalance (with the initial delay), pending SyncGroups, and on its own schedule offset
// expiry. The background loop calls it; tests with their own clock call it directly.
func (c *Coordinator) Tick() {
	cfg := c.cfg()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	now := c.now()
	for _, g := range c.groups {
		c.checkDeadlinesLocked(g, now, cfg)
	}
	if !now.Before(c.nextExpiry) {
		c.nextExpiry = now.Add(time.Duration(cfg.OffsetsRetentionCheckMs) * time.Millisecond)
		c.expireLocked(now, cfg)
	}
}

// ExpireOffsets runs the offset expiry check at once, whatever its schedule.
func (c *Coordinator) ExpireOffsets() {
	cfg := c.cfg()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.expireLocked(c.now(), cfg)
	}
}

// newMemberID makes a member id the way Kafka does: the client id (or the instance id of a
// static member), a dash, and a random UUID.
func newMemberID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return prefix + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// write appends records to a group's partition at acks=-1 under c.mu, so the log holds
// writes in the order the coordinator decided them. done runs with c.mu held once the
// write is as durable as acks=-1 requires, or failed (err set), or never when the
// coordinator closes first. It returns the log offset of the first record, or -1.
func (c *Coordinator) writeLocked(shard int32, recs []kv, cfg config.ClusterConfig, done func(err *kerr.Error)) int64 {
	batch := encodeBatch(recs, c.now().UnixMilli())
	return c.writeBatchLocked(shard, cfg, func(p *partition.Partition) (partition.ProduceResult, func(context.Context) partition.ProduceResult) {
		return p.Produce(batch, -1)
	}, done)
}

// writeBatchLocked is writeLocked for a batch that produce appends to the partition.
func (c *Coordinator) writeBatchLocked(shard int32, cfg config.ClusterConfig,
	produce func(p *partition.Partition) (partition.ProduceResult, func(context.Context) partition.ProduceResult), done func(err *kerr.Error)) int64 {
	p := c.host.OffsetsPartition(shard)
	if p == nil {
		done(kerr.NotCoordinator)
		return -1
	}
	res, wait := produce(p)
	if res.Err != nil || wait == nil {
		if res.Err != nil {
			c.lg.Warn("writing to __consumer_offsets failed", "partition", shard, "err", res.Err.Message, "msg", res.Msg)
		}
		done(writeError(res.Err))
		return -1
	}
	timeout := time.Duration(cfg.OffsetsCommitTimeoutMs) * time.Millisecond
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, timeout)
		r := wait(ctx)
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		if r.Err != nil {
			c.lg.Warn("write to __consumer_offsets not acknowledged", "partition", shard, "err", r.Err.Message, "msg", r.Msg)
		}
		done(writeError(r.Err))
	}()
	return res.BaseOffset
}

// writeError maps a produce failure on __consumer_offsets to what a group client is told,
// as Kafka does: retriable availability problems become COORDINATOR_NOT_AVAILABLE, a lost
// leadership or broken log NOT_COORDINATOR, a record too large INVALID_COMMIT_OFFSET_SIZE.
func writeError(err *kerr.Error) *kerr.Error {
	switch err {
	case nil:
		return nil
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.InvalidCommitOffsetSize
	default:
		return kerr.UnknownServerError
	}
}
