// Package partition owns Kafka semantics over one partition's log: validating produce
// payloads, idempotent-producer dedupe, the acknowledgement boundaries of DESIGN.md §1
// (log end, flushed, majority replicated, committed, last visible), the flush policy
// (strict fsync or write caching with flush.ms / flush.bytes), waiters for each acks stage,
// and what Fetch and ListOffsets may see. It must not parse Kafka requests or touch the
// network, and it reaches disk only through internal/storage.
package partition

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
	"github.com/cairn-io/cairn/internal/storage"
)

// Options configures a partition. Log must already be open; the partition owns it from then on.
type Options struct {
	Topic     string
	Partition int32
	Log       *storage.Log
	Config    config.TopicConfig
	Logger    *slog.Logger
}

// Boundaries are the partition's offsets, each exclusive (the next offset past the boundary).
type Boundaries struct {
	LogStart           int64
	LogEnd             int64
	Flushed            int64
	MajorityReplicated int64
	Committed          int64
	LastVisible        int64
	LeaderEpoch        int32
}

// Partition is one partition replica. On a single node it is always the leader; the Raft
// layer will later drive MajorityReplicated and Committed from its quorum.
type Partition struct {
	topic string
	id    int32
	log   *storage.Log
	cfg   atomic.Pointer[config.TopicConfig]
	lg    *slog.Logger
	epoch int32

	// appendMu serializes appends with the producer-state checks that precede them, so a
	// sequence check and the append it admits are one step.
	appendMu  sync.Mutex
	producers map[int64]*producerState

	mu         sync.Mutex
	bounds     Boundaries
	changed    chan struct{} // closed and replaced whenever a boundary moves
	watchers   map[chan struct{}]struct{}
	storageErr error
	closed     bool

	flushes  atomic.Int64 // fsyncs issued, to show group commit at work
	flushReq chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

// Open builds the partition over an open log, rebuilding idempotent-producer state from it.
func Open(opts Options) (*Partition, error) {
	lg := opts.Logger
	if lg == nil {
		lg = slog.Default()
	}
	p := &Partition{
		topic:     opts.Topic,
		id:        opts.Partition,
		log:       opts.Log,
		lg:        lg.With("topic", opts.Topic, "partition", opts.Partition),
		producers: make(map[int64]*producerState),
		changed:   make(chan struct{}),
		watchers:  make(map[chan struct{}]struct{}),
		flushReq:  make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	cfg := opts.Config
	p.cfg.Store(&cfg)
	if err := p.rebuildProducers(); err != nil {
		return nil, err
	}
	if err := p.beginEpoch(); err != nil {
		return nil, err
	}
	end := p.log.LogEndOffset()
	p.bounds = Boundaries{
		LogStart:           p.log.LogStartOffset(),
		LogEnd:             end,
		Flushed:            p.log.FlushedOffset(),
		MajorityReplicated: end,
		Committed:          p.log.FlushedOffset(),
		LeaderEpoch:        p.epoch,
	}
	p.bounds.LastVisible = p.visibleLocked(&cfg)
	go p.flushLoop()
	return p, nil
}

// beginEpoch starts a new leader epoch, as a Raft leader does on election: it appends an
// internal entry at term last+1 (it takes no Kafka offset) and makes it durable. Each start
// therefore raises the epoch, so a client holding the old one is fenced (KIP-320) and
// refreshes its view of the partition.
func (p *Partition) beginEpoch() error {
	term := p.log.LastTerm() + 1
	if term > math.MaxInt32 {
		return errors.New("partition: leader epoch overflow")
	}
	if err := p.log.Append([]storage.Entry{{Index: p.log.LastIndex() + 1, Term: term, Type: storage.EntryInternal}}); err != nil {
		return err
	}
	if err := p.log.Flush(); err != nil {
		return err
	}
	p.epoch = int32(term)
	return nil
}

// Topic and ID name the partition.
func (p *Partition) Topic() string { return p.topic }
func (p *Partition) ID() int32     { return p.id }

// Config is the partition's current effective topic configuration.
func (p *Partition) Config() config.TopicConfig { return *p.cfg.Load() }

// SetConfig applies a changed topic configuration at run time.
func (p *Partition) SetConfig(cfg config.TopicConfig) {
	p.cfg.Store(&cfg)
	p.log.SetOptions(cfg.SegmentBytes, cfg.SegmentMs)
	p.mu.Lock()
	p.advanceLocked(func(b *Boundaries) {}) // write caching may change what is visible
	p.mu.Unlock()
	p.kickFlusher()
}

// Flushes counts the fsync rounds this partition has run.
func (p *Partition) Flushes() int64 { return p.flushes.Load() }

// Boundaries returns a snapshot of the partition's offsets.
func (p *Partition) Boundaries() Boundaries {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bounds
}

// visibleLocked is what Fetch may return: committed, or majority replicated where the topic
// has write caching on.
func (p *Partition) visibleLocked(cfg *config.TopicConfig) int64 {
	if cfg.WriteCaching {
		return p.bounds.MajorityReplicated
	}
	return p.bounds.Committed
}

// advanceLocked applies fn to the boundaries, recomputes last visible and wakes everyone
// waiting on a boundary.
func (p *Partition) advanceLocked(fn func(b *Boundaries)) {
	fn(&p.bounds)
	p.bounds.LastVisible = p.visibleLocked(p.cfg.Load())
	close(p.changed)
	p.changed = make(chan struct{})
	for w := range p.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

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

// ProduceResult is what a Produce response reports for one partition.
type ProduceResult struct {
	BaseOffset     int64
	LogStartOffset int64
	Err            *kerr.Error
	Msg            string
}

func failed(err *kerr.Error, msg string) ProduceResult {
	return ProduceResult{BaseOffset: -1, LogStartOffset: -1, Err: err, Msg: msg}
}

// Produce validates the payload and appends it. For acks 0 and 1 the returned result is
// final. For acks -1 the caller must call wait, which returns once the batch is visible to
// the acks=-1 contract (committed; majority replicated under write caching) or ctx ends.
// Nothing is stored when validation fails.
func (p *Partition) Produce(records []byte, acks int16) (ProduceResult, func(ctx context.Context) ProduceResult) {
	cfg := p.cfg.Load()
	batches, headers, err := SplitBatches(records, cfg.MaxMessageBytes)
	if err != nil {
		var ve *ValidationError
		errors.As(err, &ve)
		return failed(ve.Err, ve.Msg), nil
	}
	if len(batches) != 1 {
		return failed(kerr.InvalidRecord, "a produce request must carry exactly one record batch per partition"), nil
	}
	batch, h := batches[0], headers[0]
	if verr := checkRecords(cfg, batch); verr != nil {
		return failed(verr.Err, verr.Msg), nil
	}

	p.appendMu.Lock()
	if res, ok := p.storageFailure(); ok {
		p.appendMu.Unlock()
		return res, nil
	}
	base, records32, dup, verr := p.checkSequence(h)
	if verr != nil {
		p.appendMu.Unlock()
		return failed(verr.Err, verr.Msg), nil
	}
	if !dup {
		// The log patches the batch's base offset and epoch in place; the request buffer is
		// ours for the duration of the request, and the log keeps its own copy on disk.
		entries := []storage.Entry{{Index: p.log.LastIndex() + 1, Term: uint64(p.epoch), Type: storage.EntryData, Data: batch}}
		if err := p.log.Append(entries); err != nil {
			p.appendMu.Unlock()
			p.lg.Error("append failed", "err", err)
			return failed(kerr.KafkaStorageError, err.Error()), nil
		}
		base, records32 = entries[0].BaseOffset, entries[0].Records
		p.recordSequence(h, base)
		end := base + int64(records32)
		p.mu.Lock()
		p.advanceLocked(func(b *Boundaries) {
			b.LogEnd = end
			// One voter: appended locally is written on a majority.
			b.MajorityReplicated = end
		})
		p.mu.Unlock()
	}
	p.appendMu.Unlock()
	p.kickFlusher()

	res := ProduceResult{BaseOffset: base, LogStartOffset: p.Boundaries().LogStart}
	if acks != -1 {
		return res, nil
	}
	end := base + int64(records32)
	return res, func(ctx context.Context) ProduceResult {
		if err := p.WaitVisible(ctx, end); err != nil {
			if r, ok := p.storageFailure(); ok {
				return r
			}
			return failed(kerr.RequestTimedOut, "the batch was appended but not acknowledged within the timeout")
		}
		res.LogStartOffset = p.Boundaries().LogStart
		return res
	}
}

func (p *Partition) storageFailure() (ProduceResult, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.storageErr != nil {
		return failed(kerr.KafkaStorageError, p.storageErr.Error()), true
	}
	if p.closed {
		return failed(kerr.NotLeaderForPartition, "partition is closing"), true
	}
	return ProduceResult{}, false
}

// WaitVisible blocks until last visible reaches end, the partition fails, or ctx ends.
func (p *Partition) WaitVisible(ctx context.Context, end int64) error {
	for {
		p.mu.Lock()
		if p.bounds.LastVisible >= end {
			p.mu.Unlock()
			return nil
		}
		if p.storageErr != nil || p.closed {
			p.mu.Unlock()
			return errors.New("partition unavailable")
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *Partition) kickFlusher() {
	select {
	case p.flushReq <- struct{}{}:
	default:
	}
}

// flushLoop is the partition's group commit. Strict topics flush as soon as anything is
// unflushed; every append that arrives during an fsync rides the next one. Under write
// caching it flushes when flush.bytes accumulate or flush.ms passes since the oldest
// unflushed append, whichever comes first.
func (p *Partition) flushLoop() {
	defer close(p.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var dirtySince time.Time
	for {
		select {
		case <-p.stop:
			p.flush()
			return
		case <-p.flushReq:
		case <-timer.C:
		}
		unflushed := p.log.UnflushedBytes()
		if unflushed == 0 && p.log.FlushedOffset() >= p.log.LogEndOffset() {
			dirtySince = time.Time{}
			continue
		}
		if dirtySince.IsZero() {
			dirtySince = time.Now()
		}
		cfg := p.cfg.Load()
		if cfg.WriteCaching && unflushed < cfg.FlushBytes {
			wait := time.Duration(cfg.FlushMs)*time.Millisecond - time.Since(dirtySince)
			if wait > 0 {
				timer.Reset(wait)
				continue
			}
		}
		timer.Stop()
		dirtySince = time.Time{}
		p.flush()
	}
}

func (p *Partition) flush() {
	p.flushes.Add(1)
	err := p.log.Flush()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.storageErr == nil {
			p.lg.Error("flush failed; partition stops accepting writes", "err", err)
			p.storageErr = err
		}
		p.advanceLocked(func(b *Boundaries) {})
		return
	}
	flushed := p.log.FlushedOffset()
	p.advanceLocked(func(b *Boundaries) {
		b.Flushed = flushed
		// One voter: the flush-aware commit is the local flushed offset.
		b.Committed = flushed
	})
}

// stopLoop flushes, stops the flusher and fails every waiter; it reports whether this call
// was the one that stopped it.
func (p *Partition) stopLoop() bool {
	// appendMu keeps an append that already passed the closed check from landing after
	// the final flush.
	p.appendMu.Lock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.appendMu.Unlock()
		return false
	}
	p.closed = true
	p.mu.Unlock()
	p.appendMu.Unlock()
	close(p.stop)
	<-p.done
	p.mu.Lock()
	p.advanceLocked(func(b *Boundaries) {})
	p.mu.Unlock()
	return true
}

// Close flushes, stops the partition and closes its log.
func (p *Partition) Close() error {
	if !p.stopLoop() {
		return nil
	}
	return p.log.Close()
}

// Delete stops the partition and removes its data.
func (p *Partition) Delete() error {
	p.stopLoop()
	return p.log.Delete()
}
