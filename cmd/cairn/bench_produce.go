package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchProduceFlags are the producer flags of `bench produce` and `bench e2e`.
type benchProduceFlags struct {
	benchTopicFlags
	producers   int
	recordSize  byteSize
	acks        string
	idempotent  bool
	compression string
	rate        float64
	warmup      time.Duration
	linger      time.Duration
	bufferBytes byteSize
	// txnRecords > 0 makes each producer transactional, committing every txnRecords
	// records.
	txnRecords int
}

func (f *benchProduceFlags) register(fs *pflag.FlagSet) {
	f.benchTopicFlags.register(fs)
	f.recordSize = 1024
	f.bufferBytes = 32 << 20
	fs.IntVar(&f.producers, "producers", 8, "number of producer clients (one franz-go client each)")
	fs.Var(&f.recordSize, "record-size", "value size of each record (a byte count, or with a unit: 1KiB)")
	fs.StringVar(&f.acks, "acks", "all", "required acks: all, 1 or 0")
	fs.BoolVar(&f.idempotent, "idempotent", true, "idempotent producers (needs --acks all; off by default with --acks 1 or 0)")
	fs.StringVar(&f.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fs.Float64Var(&f.rate, "rate", 0, "target records per second over all producers (0: as fast as possible)")
	fs.DurationVar(&f.warmup, "warmup", 2*time.Second, "run this long before measuring; excluded from the figures")
	fs.DurationVar(&f.linger, "linger", 10*time.Millisecond, "how long a partition's batch waits for more records (franz-go's linger)")
	fs.Var(&f.bufferBytes, "buffer", "bytes of records all producers together may have unacknowledged (bounds memory)")
	fs.IntVar(&f.txnRecords, "txn-records", 0, "transactional producers committing a transaction every this many records (0: not transactional)")
}

// producerOpts validates the flags and translates them into franz-go options.
func (f *benchProduceFlags) producerOpts(cmd *cobra.Command) ([]kgo.Opt, error) {
	if err := f.benchTopicFlags.validate(); err != nil {
		return nil, err
	}
	if f.producers <= 0 {
		return nil, fmt.Errorf("invalid --producers %d: must be positive", f.producers)
	}
	if f.recordSize <= 0 {
		return nil, fmt.Errorf("invalid --record-size %d: must be positive", f.recordSize)
	}
	if f.rate < 0 {
		return nil, fmt.Errorf("invalid --rate %v: must not be negative", f.rate)
	}
	if f.warmup < 0 {
		return nil, fmt.Errorf("invalid --warmup %v: must not be negative", f.warmup)
	}
	if f.linger < 0 {
		return nil, fmt.Errorf("invalid --linger %v: must not be negative", f.linger)
	}
	if f.bufferBytes <= 0 {
		return nil, fmt.Errorf("invalid --buffer %d: must be positive", f.bufferBytes)
	}
	var opts []kgo.Opt
	idemChanged := cmd.Flags().Changed("idempotent")
	switch strings.ToLower(f.acks) {
	case "all", "-1":
		f.acks = "all"
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1", "leader":
		f.acks = "1"
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0", "none":
		f.acks = "0"
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		return nil, fmt.Errorf("invalid --acks %q: want all, 1 or 0", f.acks)
	}
	if f.acks != "all" {
		// As in Kafka's own producer: idempotence needs acks=all, so it is
		// off unless asked for, and asking for it is an error.
		if idemChanged && f.idempotent {
			return nil, fmt.Errorf("--idempotent needs --acks all (Kafka requires it), got --acks %s: pass --idempotent=false", f.acks)
		}
		f.idempotent = false
	}
	if !f.idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if f.txnRecords < 0 || (f.txnRecords > 0 && !f.idempotent) {
		return nil, fmt.Errorf("invalid --txn-records %d: must not be negative, and transactions need --acks all and idempotence", f.txnRecords)
	}
	codec, err := parseCompression(f.compression)
	if err != nil {
		return nil, err
	}
	f.compression = strings.ToLower(f.compression)
	if f.compression == "" {
		f.compression = "none"
	}
	opts = append(opts,
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(f.linger),
		kgo.MaxBufferedRecords(int(f.maxBuffered())),
		kgo.DefaultProduceTopic(f.topic),
	)
	if int64(f.recordSize)+512 > 1_000_012 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(min(int64(f.recordSize)+4096, 1<<30))))
	}
	return opts, nil
}

// maxBuffered is how many records each producer may have unacknowledged: its
// share of --buffer, at least 16.
func (f *benchProduceFlags) maxBuffered() int64 {
	perProducer := int64(f.bufferBytes) / int64(f.producers)
	return max(16, min(perProducer/int64(f.recordSize), 1_000_000))
}

func (f *benchProduceFlags) params(p map[string]any, partitions int32) {
	p["topic"] = f.topic
	p["partitions"] = partitions
	p["producers"] = f.producers
	p["record_size"] = int64(f.recordSize)
	p["acks"] = f.acks
	p["idempotent"] = f.idempotent
	p["compression"] = f.compression
	p["rate"] = f.rate
	p["warmup_s"] = f.warmup.Seconds()
	p["linger_ms"] = float64(f.linger) / 1e6
	p["txn_records"] = f.txnRecords
}

// e2eHeader is the size of the prefix bench e2e writes into every value: a
// run id (so a consumer skips other runs' records) and the send time in
// nanoseconds since the run's monotonic origin.
const e2eHeader = 16

// benchProducers is a set of producer clients writing fixed-size records.
type benchProducers struct {
	flags   *benchProduceFlags
	clients []*kgo.Client
	lat     latencySet
	errs    errTracker

	base      time.Time     // the run's clock origin
	countFrom time.Duration // records sent this long after base count toward the latency
	runID     uint64
	e2e       bool
	payload   []byte // random letters that record values are cut from

	pool sync.Pool

	ackedAll, bytesAll atomic.Int64 // every acknowledged record
	ackedWin, bytesWin atomic.Int64 // those acknowledged while measuring
	measuring          atomic.Bool

	cancel context.CancelFunc // ends production
	wg     sync.WaitGroup
}

func newBenchProducers(cmd *cobra.Command, cf *clientFlags, f *benchProduceFlags, opts []kgo.Opt, e2e bool) (*benchProducers, error) {
	p := &benchProducers{flags: f, e2e: e2e, runID: rand.Uint64()}
	size := int(f.recordSize)
	// Values are random capital letters (as kafka-producer-perf-test's), cut
	// at random offsets from a buffer larger than a batch, so compression
	// sees realistic, not identical, records.
	p.payload = make([]byte, size+8<<20)
	for i := 0; i < len(p.payload); i += 8 {
		r := rand.Uint64()
		for j := i; j < min(i+8, len(p.payload)); j++ {
			p.payload[j] = 'A' + byte(r%26)
			r /= 26
		}
	}
	p.pool.New = func() any {
		if e2e {
			return &kgo.Record{Value: make([]byte, size)}
		}
		return &kgo.Record{}
	}
	for i := range f.producers {
		copts := opts
		if f.txnRecords > 0 {
			copts = append(append([]kgo.Opt{}, opts...), kgo.TransactionalID(fmt.Sprintf("cairn-bench-%x-%d", p.runID, i)))
		}
		cl, err := cf.newClient(cmd, copts...)
		if err != nil {
			p.close()
			return nil, err
		}
		p.clients = append(p.clients, cl)
	}
	return p, nil
}

func (p *benchProducers) close() {
	var wg sync.WaitGroup
	for _, cl := range p.clients {
		wg.Go(cl.Close)
	}
	wg.Wait()
}

// start launches one goroutine per producer; they produce until ctx is done or
// stop is called.
//
// Each producer waits for room in its buffer itself and hands records to
// franz-go with a context that is never cancelled: franz-go fails a buffered
// batch once the context its first record was produced with is done, so
// producing with ctx would fail, rather than flush, what is buffered when a run
// ends (and an interrupted run would report those records as errors).
func (p *benchProducers) start(ctx context.Context, base time.Time) {
	ctx, p.cancel = context.WithCancel(ctx)
	p.base = base
	perRate := p.flags.rate / float64(len(p.clients))
	limit := p.flags.maxBuffered()
	for i, cl := range p.clients {
		rec := p.lat.add()
		var unacked atomic.Int64
		room := make(chan struct{}, 1)
		promise := func(r *kgo.Record, err error) {
			p.acked(rec, r, err)
			unacked.Add(-1)
			select {
			case room <- struct{}{}:
			default:
			}
		}
		p.wg.Go(func() {
			inTxn := 0
			p.produce(ctx, perRate, uint64(i), func(r *kgo.Record) bool {
				if p.flags.txnRecords > 0 && !p.nextTxnRecord(ctx, cl, &inTxn) {
					return false
				}
				for unacked.Load() >= limit {
					select {
					case <-ctx.Done():
						return false
					case <-room:
					}
				}
				unacked.Add(1)
				cl.Produce(context.Background(), r, promise)
				return true
			})
		})
	}
}

// nextTxnRecord keeps a transactional producer in a transaction: it begins one before
// the first record and commits it after every --txn-records records, once they are
// flushed (franz-go's EndTransaction does not flush), so the commit's wait is part of the
// throughput. false: stop.
func (p *benchProducers) nextTxnRecord(ctx context.Context, cl *kgo.Client, inTxn *int) bool {
	if *inTxn == p.flags.txnRecords {
		if err := cl.Flush(ctx); err != nil {
			return false
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			if ctx.Err() == nil {
				p.errs.add(err)
			}
			return false
		}
		*inTxn = 0
	}
	if *inTxn == 0 {
		if err := cl.BeginTransaction(); err != nil {
			p.errs.add(err)
			return false
		}
	}
	*inTxn++
	return true
}

// produce makes records at rate (0: as fast as send takes them) until ctx is
// done or send refuses one.
func (p *benchProducers) produce(ctx context.Context, rate float64, seed uint64, send func(*kgo.Record) bool) {
	rng := rand.New(rand.NewPCG(p.runID, seed))
	size := int(p.flags.recordSize)
	span := len(p.payload) - size
	t0 := time.Now()
	for n := 0; ; n++ {
		if rate > 0 {
			due := t0.Add(time.Duration(float64(n) / rate * 1e9))
			if !sleepCtx(ctx, time.Until(due)) {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		r := p.pool.Get().(*kgo.Record)
		off := rng.IntN(span)
		if p.e2e {
			copy(r.Value[e2eHeader:], p.payload[off:off+size-e2eHeader])
		} else {
			r.Value = p.payload[off : off+size]
		}
		r.Timestamp = time.Now() // keeps the monotonic clock reading for the latency
		if p.e2e {
			binary.BigEndian.PutUint64(r.Value[0:8], p.runID)
			binary.BigEndian.PutUint64(r.Value[8:16], uint64(r.Timestamp.Sub(p.base)))
		}
		if !send(r) {
			return
		}
	}
}

// acked is every record's promise (called serially per client).
func (p *benchProducers) acked(lr *latencyRecorder, r *kgo.Record, err error) {
	now := time.Now()
	switch {
	case err == nil:
		counted := r.Timestamp.Sub(p.base) >= p.countFrom
		lr.record(now.Sub(r.Timestamp), counted)
		n := int64(len(r.Key) + len(r.Value))
		p.ackedAll.Add(1)
		p.bytesAll.Add(n)
		if p.measuring.Load() {
			p.ackedWin.Add(1)
			p.bytesWin.Add(n)
		}
	default:
		p.errs.add(err)
	}
	v := r.Value
	*r = kgo.Record{}
	if p.e2e {
		r.Value = v[:cap(v)]
	}
	p.pool.Put(r)
}

// stop ends production, then waits up to flushTimeout for buffered records to
// be acknowledged and returns how many were not.
func (p *benchProducers) stop(flushTimeout time.Duration) int64 {
	p.cancel()
	p.wg.Wait()
	ctx, done := context.WithTimeout(context.Background(), flushTimeout)
	defer done()
	var wg sync.WaitGroup
	for _, cl := range p.clients {
		wg.Go(func() {
			_ = cl.Flush(ctx)
			if p.flags.txnRecords > 0 {
				_ = cl.EndTransaction(ctx, kgo.TryCommit) // commits what is open
			}
		})
	}
	wg.Wait()
	var left int64
	for _, cl := range p.clients {
		left += cl.BufferedProduceRecords()
	}
	return left
}

const benchFlushTimeout = 30 * time.Second

func newBenchProduceCmd() *cobra.Command {
	var (
		cf clientFlags
		bc benchCommon
		pf benchProduceFlags
	)
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Measure produce throughput and send→ack latency",
		Long: `Produce runs --producers franz-go clients, each writing records of --record-size
bytes (random capital letters, no key) to --topic, which is created with --partitions
and --replication-factor if it does not exist (an existing topic is used as it is).

The run lasts --warmup plus --duration. Throughput counts the records acknowledged
during --duration; latency is from the Produce call to the acknowledgement, for every
record sent after the warmup (those still in flight at the end included). Each producer
buffers at most its share of --buffer, so memory stays bounded and an unthrottled run
measures the broker rather than a growing queue. With --rate, the producers pace
themselves to that many records per second in total.`,
		Example: `  cairn bench produce -b localhost:9092 --producers 8 --record-size 1KiB --duration 30s
  cairn bench produce --acks 1 --compression zstd --rate 50000 --json
  CAIRN_SASL_PASSWORD=... cairn bench produce -b localhost:9094 --tls-ca ca.pem --sasl-mechanism SCRAM-SHA-512 --sasl-user alice`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchProduce(cmd, &cf, &bc, &pf)
		},
	}
	cf.register(cmd, false)
	bc.register(cmd.Flags(), 10*time.Second)
	pf.register(cmd.Flags())
	return cmd
}

func runBenchProduce(cmd *cobra.Command, cf *clientFlags, bc *benchCommon, pf *benchProduceFlags) error {
	if err := bc.validate(); err != nil {
		return err
	}
	opts, err := pf.producerOpts(cmd)
	if err != nil {
		return err
	}
	ctx, stopSignals := signalContext(cmdContext(cmd))
	defer stopSignals()
	stderr := &syncWriter{w: cmd.ErrOrStderr()}

	admCl, err := cf.newClient(cmd)
	if err != nil {
		return err
	}
	defer admCl.Close()
	partitions, err := pf.ensureTopic(ctx, cmd, kadm.NewClient(admCl), stderr)
	if err != nil {
		return requestError(cmd, cf, "preparing the topic", err)
	}

	prods, err := newBenchProducers(cmd, cf, pf, opts, false)
	if err != nil {
		return err
	}
	defer prods.close()

	start := time.Now()
	var lastAcked, lastBytes int64
	stopProgress := startProgress(stderr, start, func(el, iv time.Duration) string {
		acked, bytes := prods.ackedAll.Load(), prods.bytesAll.Load()
		p99, n := prods.lat.intervalQuantile(0.99)
		line := fmt.Sprintf("%v: %.1f MB/s, %.0f rec/s", el, mbPerS(bytes-lastBytes, iv), perS(acked-lastAcked, iv))
		if n > 0 {
			line += ", p99 " + fmtMs(p99)
		}
		if el <= pf.warmup {
			line += " (warmup)"
		}
		if e := prods.errs.count(); e > 0 {
			line += fmt.Sprintf(", %d errors", e)
		}
		lastAcked, lastBytes = acked, bytes
		return line
	})
	defer stopProgress()

	prods.countFrom = pf.warmup
	prods.start(ctx, start)
	winStart, winEnd := measure(ctx, &prods.measuring, pf.warmup, bc.duration)
	left := prods.stop(benchFlushTimeout)
	stopProgress()

	win := winEnd.Sub(winStart)
	rep := &benchReport{
		Mode:        "produce",
		Parameters:  map[string]any{"duration_s": bc.duration.Seconds()},
		DurationS:   round3(win.Seconds()),
		Interrupted: ctx.Err() != nil,
		Records:     ptr(prods.ackedWin.Load()),
		Bytes:       prods.bytesWin.Load(),
		LatencyKind: "send→ack",
	}
	pf.params(rep.Parameters, partitions)
	rep.MBPerS = mbPerS(rep.Bytes, win)
	rep.RecordsPerS = ptr(perS(*rep.Records, win))
	rep.latencySummary = prods.lat.total().summary()
	rep.Unacknowledged = ptr(left)
	prods.errs.fill(rep)
	if err := rep.write(cmd.OutOrStdout(), bc.json); err != nil {
		return err
	}
	if err := prods.errs.err("records"); err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("%d records were still unacknowledged %v after the run ended", left, benchFlushTimeout)
	}
	return nil
}

// measure waits out the warmup, then sets measuring for duration (or until
// ctx is done) and returns when the measured window started and ended.
func measure(ctx context.Context, measuring *atomic.Bool, warmup, duration time.Duration) (time.Time, time.Time) {
	sleepCtx(ctx, warmup)
	start := time.Now()
	if ctx.Err() != nil {
		return start, start
	}
	measuring.Store(true)
	sleepCtx(ctx, duration)
	measuring.Store(false)
	return start, time.Now()
}
