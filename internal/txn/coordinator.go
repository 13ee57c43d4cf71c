package txn

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/group"
	"github.com/cairn-io/cairn/internal/partition"
	"github.com/cairn-io/cairn/internal/recordbatch"
)

// The coordinator's I/O shell: it runs one Machine per __transaction_state partition this
// node leads, persists every transition the Machine decides to that partition at acks=-1
// before it takes effect, writes the markers of transactions in PrepareCommit or
// PrepareAbort through each participant's own Raft group (Host.WriteMarker), and replays
// the partition when it starts leading it, resuming the markers of every transaction it
// finds prepared. A leader change in the middle of a commit therefore resumes it: the
// Prepare record is durable before any marker is written, and the Complete record is
// written only once every marker is acknowledged.

// StateTopic is the internal topic the coordinator keeps transactions in.
const StateTopic = "__transaction_state"

// Marker is one transaction marker for a participant partition.
type Marker struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
}

// Host is what the coordinator needs from the node it runs on.
type Host interface {
	// StatePartition returns this node's replica of __transaction_state partition i when
	// this node leads it, else nil.
	StatePartition(i int32) *partition.Partition
	// PartitionCount reports a topic's partition count; false when the topic does not
	// exist.
	PartitionCount(topic string) (int32, bool)
	// AllocateProducerID hands out a producer id no other producer has.
	AllocateProducerID() (int64, *kerr.Error)
	// WriteMarker writes one marker on its partition's leader and returns once it is
	// acknowledged as an acks=all produce would be (nil), or why not.
	WriteMarker(ctx context.Context, m Marker) (*kerr.Error, string)
}

// Options configures a Coordinator.
type Options struct {
	Host Host
	// Partitions is the partition count of __transaction_state; 0 means the topic is not
	// available and every request gets COORDINATOR_NOT_AVAILABLE.
	Partitions int32
	// Config returns the current cluster configuration, read on every use.
	Config func() config.ClusterConfig
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// TickInterval is how often timeouts and expiry are checked (default 100ms). Negative:
	// no background loop, the caller drives Tick (tests).
	TickInterval time.Duration
}

// shard is one __transaction_state partition this node leads.
type shard struct {
	i      int32
	gen    int // bumped on every change of leadership, so stale work is discarded
	loaded bool
	// epoch is the coordinator epoch: the partition's leader epoch when this node began to
	// lead it. Markers carry it.
	epoch int32
	m     *Machine
	// writing holds the transactional ids whose markers a goroutine is writing.
	writing map[string]bool
}

// Coordinator serves the transactional ids of the __transaction_state partitions this node
// leads.
type Coordinator struct {
	host Host
	n    int32
	cfg  func() config.ClusterConfig
	lg   *slog.Logger
	now  func() time.Time

	mu          sync.Mutex
	shards      []*shard // nil where this node does not lead
	gens        []int
	closed      bool
	nextAbort   time.Time
	nextExpired time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	abortsByTimeout atomic.Int64
	markersWritten  atomic.Int64
}

// Stats are the coordinator's counters since it started, for metrics.
type Stats struct {
	// Ongoing is the number of transactions open or being completed on the shards this node
	// leads.
	Ongoing         int
	AbortsByTimeout int64
	MarkersWritten  int64
}

// Stats reports the counters.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	ongoing := 0
	for _, sh := range c.shards {
		if sh != nil && sh.loaded {
			ongoing += sh.m.Open()
		}
	}
	c.mu.Unlock()
	return Stats{Ongoing: ongoing, AbortsByTimeout: c.abortsByTimeout.Load(), MarkersWritten: c.markersWritten.Load()}
}

// New makes a coordinator; it serves nothing until BecomeLeader is called for partitions.
func New(opts Options) *Coordinator {
	n := max(opts.Partitions, 0)
	c := &Coordinator{host: opts.Host, n: opts.Partitions, cfg: opts.Config, lg: opts.Logger, now: opts.Now,
		shards: make([]*shard, n), gens: make([]int, n)}
	if c.lg == nil {
		c.lg = slog.Default()
	}
	c.lg = c.lg.With("component", "txn")
	if c.now == nil {
		c.now = time.Now
	}
	if c.cfg == nil {
		c.cfg = func() config.ClusterConfig { return config.ResolveCluster(nil) }
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
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

// Partitions is the partition count of __transaction_state the coordinator hashes over.
func (c *Coordinator) Partitions() int32 { return c.n }

// PartitionFor is the __transaction_state partition of a transactional id: Kafka's hash,
// the same as a group's.
func PartitionFor(transactionalID string, partitions int32) int32 {
	return group.PartitionFor(transactionalID, partitions)
}

// Close stops the coordinator and waits for its goroutines. Writes in flight are
// abandoned; what became durable is replayed by the next leader.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	for i := range c.shards {
		c.shards[i] = nil
	}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// BecomeLeader starts serving __transaction_state partition i: the coordinator replays it
// in the background and answers COORDINATOR_LOAD_IN_PROGRESS for its ids until done.
func (c *Coordinator) BecomeLeader(i int32, leaderEpoch int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || i < 0 || i >= c.n || c.shards[i] != nil {
		return
	}
	c.gens[i]++
	sh := &shard{i: i, gen: c.gens[i], epoch: leaderEpoch, m: NewMachine(), writing: map[string]bool{}}
	c.shards[i] = sh
	c.wg.Add(1)
	go c.load(sh)
}

// Resign stops serving partition i (another node leads it now). Marker writers of its
// transactions stop at their next step; the new leader resumes them.
func (c *Coordinator) Resign(i int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= c.n {
		return
	}
	c.gens[i]++
	c.shards[i] = nil
}

// Loaded reports whether partition i is replayed and served.
func (c *Coordinator) Loaded(i int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return i >= 0 && i < c.n && c.shards[i] != nil && c.shards[i].loaded
}

// shardLocked is the loaded shard of a transactional id, or why there is none.
func (c *Coordinator) shardLocked(id string) (*shard, *kerr.Error) {
	if c.closed || c.n <= 0 {
		return nil, kerr.CoordinatorNotAvailable
	}
	sh := c.shards[PartitionFor(id, c.n)]
	switch {
	case sh == nil:
		return nil, kerr.NotCoordinator
	case !sh.loaded:
		return nil, kerr.CoordinatorLoadInProgress
	}
	return sh, nil
}

// current reports whether sh still is the shard this node serves, under c.mu.
func (c *Coordinator) currentLocked(sh *shard) bool {
	return !c.closed && c.shards[sh.i] == sh
}

func (c *Coordinator) load(sh *shard) {
	defer c.wg.Done()
	for attempt := 0; ; attempt++ {
		m, err := c.replay(sh.i)
		if err == nil {
			c.mu.Lock()
			if !c.currentLocked(sh) {
				c.mu.Unlock()
				return
			}
			sh.m, sh.loaded = m, true
			pending := m.PendingMarkers()
			for _, id := range pending {
				c.startMarkersLocked(sh, id)
			}
			ids := m.Len() // under c.mu: requests change m as soon as loaded is set
			c.mu.Unlock()
			c.lg.Info("loaded transactions", "partition", sh.i, "ids", ids, "resumed", len(pending))
			return
		}
		if c.ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		stale := !c.currentLocked(sh)
		c.mu.Unlock()
		if stale {
			return
		}
		c.lg.Error("replaying "+StateTopic+" failed; retrying", "partition", sh.i, "err", err)
		if !c.sleep(backoff(attempt)) {
			return
		}
	}
}

// loadBatchBytes is how much one replay read asks for.
const loadBatchBytes = 4 << 20

// replay reads partition i from its log start to the log end it had when leadership began
// (once that is visible) into a fresh Machine.
func (c *Coordinator) replay(i int32) (*Machine, error) {
	p := c.host.StatePartition(i)
	if p == nil {
		return nil, errors.New("partition is not led by this node")
	}
	end := p.Boundaries().LogEnd
	if err := p.WaitVisible(c.ctx, end); err != nil {
		return nil, err
	}
	m := NewMachine()
	bad := 0
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
		next, _, err := recordbatch.WalkRecords(res.Records, func(_ int64, key, value []byte) error {
			if err := m.Replay(key, value); err != nil {
				if bad++; bad <= 10 {
					c.lg.Warn("skipped an unreadable record in "+StateTopic, "partition", i, "err", err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if next <= off {
			break
		}
		off = next
	}
	return m, nil
}

// persist writes a transition's record to the shard's partition at acks=-1 and waits until
// it is as durable as acks=-1 makes it, then applies it (Complete) or drops it (Fail). It
// runs without c.mu: the Machine keeps the id pending meanwhile, so nothing else changes
// it. It returns the error a client is told.
func (c *Coordinator) persist(sh *shard, t *Transition) *kerr.Error {
	err := c.write(sh, t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.currentLocked(sh) {
		return kerr.NotCoordinator
	}
	if err != nil {
		sh.m.Fail(t)
		return err
	}
	sh.m.Complete(t)
	return nil
}

func (c *Coordinator) write(sh *shard, t *Transition) *kerr.Error {
	p := c.host.StatePartition(sh.i)
	if p == nil {
		return kerr.NotCoordinator
	}
	key, value := t.Record()
	now := c.now().UnixMilli()
	batch := recordbatch.Encode(recordbatch.PlainHeader(now, now), []recordbatch.NewRecord{{Key: key, Value: value}})
	res, wait := p.Produce(batch, -1)
	if res.Err == nil && wait != nil {
		ctx, cancel := context.WithTimeout(c.ctx, writeTimeout)
		res = wait(ctx)
		cancel()
	}
	if res.Err != nil {
		c.lg.Warn("writing to "+StateTopic+" failed", "partition", sh.i, "err", res.Err.Message, "msg", res.Msg)
	}
	return writeError(res.Err)
}

// writeTimeout bounds how long a transition waits for its record to become durable.
const writeTimeout = 10 * time.Second

// writeError maps a produce failure on __transaction_state to what a client is told, as
// Kafka does: retriable availability problems become COORDINATOR_NOT_AVAILABLE, a lost
// leadership NOT_COORDINATOR.
func writeError(err *kerr.Error) *kerr.Error {
	switch err {
	case nil:
		return nil
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	default:
		return kerr.UnknownServerError
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

// Tick aborts the transactions open longer than their timeout and forgets expired
// transactional ids, each on its own schedule. The background loop calls it; tests with
// their own clock call it directly.
func (c *Coordinator) Tick() {
	cfg := c.cfg()
	now := c.now()
	var work []func()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if !now.Before(c.nextAbort) {
		c.nextAbort = now.Add(time.Duration(cfg.TxnAbortTimedOutCheckMs) * time.Millisecond)
		for _, sh := range c.shards {
			if sh == nil || !sh.loaded {
				continue
			}
			for _, id := range sh.m.Expired(now) {
				if t := sh.m.AbortTimedOut(id, now); t != nil {
					work = append(work, c.abortTimedOut(sh, id, t))
				}
			}
		}
	}
	if !now.Before(c.nextExpired) {
		c.nextExpired = now.Add(time.Duration(cfg.TxnRemoveExpiredCheckMs) * time.Millisecond)
		for _, sh := range c.shards {
			if sh == nil || !sh.loaded {
				continue
			}
			for _, t := range sh.m.ExpireIDs(now, cfg.TransactionalIDExpirationMs) {
				work = append(work, func() { _ = c.persist(sh, t) })
			}
		}
	}
	c.mu.Unlock()
	for _, w := range work {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			w()
		}()
	}
}

// abortTimedOut persists a timed-out transaction's abort and then writes its markers.
func (c *Coordinator) abortTimedOut(sh *shard, id string, t *Transition) func() {
	return func() {
		if err := c.persist(sh, t); err != nil {
			return // the next check tries again
		}
		c.lg.Info("aborted a transaction past its timeout", "transactional_id", id)
		c.mu.Lock()
		if c.currentLocked(sh) {
			c.startMarkersLocked(sh, id)
		}
		c.mu.Unlock()
		c.abortsByTimeout.Add(1)
	}
}

// sleep waits d unless the coordinator closes first (false).
func (c *Coordinator) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func backoff(attempt int) time.Duration {
	return min(time.Duration(attempt+1)*50*time.Millisecond, time.Second)
}
