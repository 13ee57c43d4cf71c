package main

// --mode txn: the transactional workload. Each of --producers producers owns the
// transactional ID chaos-txn-<i> and runs transactions one after another: BeginTransaction,
// one to four records over consecutive partitions of the topic (the key names the
// transaction, the value is unique: transaction and record index), Flush, then
// EndTransaction with commit, or abort for one transaction in four (drawn from the seed)
// and for any transaction a record of which failed. Every step is recorded
// (history.BeginTxn, InvokeTxnProduce, InvokeTxnEnd): the checker judges a transaction by
// what its producer saw of the commit, and the reads against that (history/txn.go). A
// commit that fails is followed by an abort, and an abort that fails by a new client,
// whose InitProducerId fences and ends whatever the old one left open.
//
// Two read_committed consumers (rc0, rc1) and a read_uncommitted one (c0) read every
// partition from the start, each fetch recorded with its last stable offset
// (history.RecordTxnFetches). They keep control records so their positions pass the
// markers. After the faults heal the producers stop, the session waits for every
// partition's LSO to reach its high watermark (every transaction ended, by its producer
// or by the coordinator's timeout), and the consumers read on until each has reached that
// end of every partition, recorded as history.KindCaughtUp: from there what is committed
// must have been read whole. A consumer that does not get there fails the session.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/test/chaos/history"
)

const (
	txnIDPrefix = "chaos-txn-"
	// txnTimeout is each producer's transaction.timeout.ms: short, so that the coordinator
	// aborts what a producer lost in a fault soon enough for the LSO to move on.
	txnTimeout = 10 * time.Second
	// txnEndTimeout bounds a Flush and an EndTransaction. franz-go advises against
	// cancelling EndTransaction, so it is long: only a hung request meets it.
	txnEndTimeout = 30 * time.Second
	// txnSettleTimeout bounds the wait, once the producers stopped, for every LSO to
	// reach its high watermark: an open transaction ends by the coordinator's timeout.
	txnSettleTimeout = 3*txnTimeout + time.Minute
	// txnCatchUpTimeout bounds the consumers' reading up to that end.
	txnCatchUpTimeout = 2 * time.Minute
)

// txnConsumer is one consumer of the workload; committed says read_committed.
type txnConsumer struct {
	name      string
	committed bool
}

var txnConsumers = []txnConsumer{{"rc0", true}, {"rc1", true}, {"c0", false}}

// txnReadCommitted is history.Options.ReadCommitted of a txn session.
func txnReadCommitted() map[string]bool {
	m := map[string]bool{}
	for _, c := range txnConsumers {
		if c.committed {
			m[c.name] = true
		}
	}
	return m
}

// txnWorkload runs the producers and consumers of a txn session.
type txnWorkload struct {
	client     func(user string, opts ...kgo.Opt) (*kgo.Client, error)
	sec        *security // nil: no auth errors to watch
	rec        *history.Recorder
	partitions int
	rate       int
	seed       uint64

	stopProd, stopCons context.CancelFunc
	prodWG, consWG     sync.WaitGroup

	targetSet chan struct{} // closed once target is set
	target    map[int32]int64

	mu      sync.Mutex
	reached map[string]map[int32]int64 // each consumer's positions when it stopped
}

// startTxn starts the workload under ctx; client makes a client for a user of the session.
func startTxn(ctx context.Context, cfg config, rec *history.Recorder, sec *security, client func(user string, opts ...kgo.Opt) (*kgo.Client, error)) *txnWorkload {
	w := &txnWorkload{client: client, sec: sec, rec: rec, partitions: cfg.partitions, rate: cfg.rate, seed: cfg.seed,
		targetSet: make(chan struct{}), reached: map[string]map[int32]int64{}}
	prodCtx, stopProd := context.WithCancel(ctx)
	consCtx, stopCons := context.WithCancel(ctx)
	w.stopProd, w.stopCons = stopProd, stopCons
	for i := range cfg.producers {
		w.prodWG.Add(1)
		go func() {
			defer w.prodWG.Done()
			w.produce(prodCtx, i)
		}()
	}
	for _, c := range txnConsumers {
		w.consWG.Add(1)
		go func() {
			defer w.consWG.Done()
			w.consume(consCtx, c)
		}()
	}
	return w
}

// wait waits for every goroutine of the workload (nil: nothing to wait for).
func (w *txnWorkload) wait() {
	if w == nil {
		return
	}
	w.prodWG.Wait()
	w.consWG.Wait()
}

// finish stops the producers, waits for every transaction to end and for the consumers to
// catch up with the end of every partition, then stops them.
func (w *txnWorkload) finish(ctx context.Context) error {
	w.stopProd()
	w.prodWG.Wait()
	defer w.stopCons()
	target, err := w.settledEnds(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("chaos: txn: producers stopped; consumers reading up to %v\n", target)
	w.target = target
	close(w.targetSet)
	done := make(chan struct{})
	go func() { w.consWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(txnCatchUpTimeout):
	case <-ctx.Done():
	}
	w.stopCons()
	w.consWG.Wait()
	var behind []string
	for _, c := range txnConsumers {
		for p := range int32(w.partitions) {
			if pos := w.reached[c.name][p]; pos < target[p] {
				behind = append(behind, fmt.Sprintf("%s at %d of %d in partition %d", c.name, pos, target[p], p))
			}
		}
	}
	if len(behind) > 0 {
		return fmt.Errorf("consumers did not catch up with the end of the transactions within %v: %s", txnCatchUpTimeout, strings.Join(behind, ", "))
	}
	return nil
}

// settledEnds waits until every partition's last stable offset equals its high watermark
// (no transaction open) and returns the high watermarks.
func (w *txnWorkload) settledEnds(ctx context.Context) (map[int32]int64, error) {
	c, err := w.client(readerUser)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	adm := kadm.NewClient(c)
	deadline := time.Now().Add(txnSettleTimeout)
	var last string
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		err = errors.Join(err, ends.Error())
		var lsos kadm.ListedOffsets
		if err == nil {
			lsos, err = adm.ListCommittedOffsets(ctx, topic)
			err = errors.Join(err, lsos.Error())
		}
		w.sec.check(readerUser, "txn: list offsets", err)
		if err == nil {
			target := map[int32]int64{}
			var open []string
			for p := range int32(w.partitions) {
				e, _ := ends.Lookup(topic, p)
				l, _ := lsos.Lookup(topic, p)
				target[p] = e.Offset
				if l.Offset != e.Offset {
					open = append(open, fmt.Sprintf("partition %d: LSO %d, high watermark %d", p, l.Offset, e.Offset))
				}
			}
			if len(open) == 0 {
				return target, nil
			}
			last = strings.Join(open, "; ")
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("transactions still open %v after the producers stopped (transaction timeout %v): %s", txnSettleTimeout, txnTimeout, last)
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

// produce runs producer i's transactions until ctx ends; the transaction under way ends
// first.
func (w *txnWorkload) produce(ctx context.Context, i int) {
	process, txnID := fmt.Sprintf("t%d", i), fmt.Sprintf("%s%d", txnIDPrefix, i)
	rng := rand.New(rand.NewPCG(w.seed, uint64(i)+0x7478))
	var c *kgo.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	start, sent := time.Now(), 0
	reported := false
	// setUpFailed notes a client or BeginTransaction error (the first one is printed: a
	// cluster that refuses transactions shows here) and backs off.
	setUpFailed := func(what string, err error) {
		if !reported {
			fmt.Printf("chaos: txn: %s: %s: %v (first such error; retrying every second)\n", process, what, err)
			reported = true
		}
		sleepCtx(ctx, time.Second)
	}
	for seq := 0; ctx.Err() == nil; seq++ {
		if w.rate > 0 {
			sleepCtx(ctx, time.Until(start.Add(time.Duration(sent)*time.Second/time.Duration(w.rate))))
			if ctx.Err() != nil {
				return
			}
		}
		if c == nil {
			var err error
			if c, err = w.client(writerUser, kgo.TransactionalID(txnID), kgo.TransactionTimeout(txnTimeout),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.RecordDeliveryTimeout(20*time.Second)); err != nil {
				c = nil
				setUpFailed("new client", err)
				continue
			}
		}
		// Drawn before anything can fail, so the schedule of choices is the seed's alone.
		n, first, abort := 1+rng.IntN(4), rng.IntN(w.partitions), rng.IntN(4) == 0
		if err := c.BeginTransaction(); err != nil {
			c.Close()
			c = nil
			setUpFailed("begin transaction", err)
			continue
		}
		name := fmt.Sprintf("%s#%06d", txnID, seq)
		recs := make([]*kgo.Record, n)
		for k := range recs {
			recs[k] = &kgo.Record{Topic: topic, Partition: int32((first + k) % w.partitions),
				Key: []byte(name), Value: []byte(fmt.Sprintf("%s/%d", name, k))}
		}
		sent += n
		keep, clean := w.runTxn(c, process, name, recs, abort)
		if !keep {
			c.Close() // a new client fences and ends what this one left open
			c = nil
		}
		if !clean {
			sleepCtx(ctx, 200*time.Millisecond) // a cluster that refuses everything is not spun on
		}
	}
}

// runTxn produces recs in transaction name on c, which has begun it, and ends it; it
// reports whether c may go on to the next transaction, and whether nothing failed.
func (w *txnWorkload) runTxn(c *kgo.Client, process, name string, recs []*kgo.Record, abort bool) (keep, clean bool) {
	history.BeginTxn(w.rec, process, name, recs)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for _, r := range recs {
		id := history.InvokeTxnProduce(w.rec, process, name, r)
		wg.Add(1)
		// The promise's context is not the session's: a produce cut off mid-transaction
		// would only turn into an abort.
		c.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			history.CompleteProduce(w.rec, id, r, err)
			if err != nil {
				failed.Store(true)
			}
			wg.Done()
		})
	}
	defer wg.Wait() // every promise ends: flushed, aborted or failed by Close
	fctx, cancel := context.WithTimeout(context.Background(), txnEndTimeout)
	ferr := c.Flush(fctx)
	cancel()
	decision, why := history.TxnCommit, "chosen"
	if abort {
		decision = history.TxnAbort
	}
	if ferr != nil || failed.Load() {
		decision, why = history.TxnAbort, "produce failed"
	}
	if ferr != nil {
		actx, cancel := context.WithTimeout(context.Background(), txnEndTimeout)
		err := c.AbortBufferedRecords(actx)
		cancel()
		if err != nil {
			return false, false // never ended by this client: aborted by the next one's init
		}
	}
	err := w.endTxn(c, process, name, decision, why)
	if err != nil && decision == history.TxnCommit {
		// franz-go's documented answer to a failed commit; it settles nothing for the
		// checker (the commit may have been prepared), but lets the client go on.
		err = w.endTxn(c, process, name, history.TxnAbort, "commit failed")
		return err == nil, false
	}
	return err == nil, err == nil && why == "chosen"
}

// txnSessionError fails a txn session in which no transaction committed: the rules hold
// vacuously then, most likely because the cluster does not serve transactions.
func txnSessionError(res *history.Result) error {
	if s := res.Summary.Txns; s.Committed == 0 {
		return fmt.Errorf("no transaction committed (%s): does the cluster serve transactions?", s)
	}
	return nil
}

func (w *txnWorkload) endTxn(c *kgo.Client, process, name, decision, why string) error {
	ctx, cancel := context.WithTimeout(context.Background(), txnEndTimeout)
	defer cancel()
	id := history.InvokeTxnEnd(w.rec, process, name, decision, why)
	try := kgo.TryCommit
	if decision == history.TxnAbort {
		try = kgo.TryAbort
	}
	err := c.EndTransaction(ctx, try)
	history.CompleteTxnEnd(w.rec, id, err)
	w.sec.check(writerUser, "txn: end transaction", err)
	return err
}

// consume reads every partition from the start as cc until ctx ends or, once finish has
// set the target, it has reached the target in every partition.
func (w *txnWorkload) consume(ctx context.Context, cc txnConsumer) {
	from := map[int32]kgo.Offset{}
	for p := range int32(w.partitions) {
		from[p] = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxWait(500 * time.Millisecond), kgo.KeepControlRecords()}
	if cc.committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	st := history.NewTxnFetchState()
	defer func() {
		pos := map[int32]int64{}
		for p := range int32(w.partitions) {
			pos[p] = st.Pos[history.TP{Topic: topic, Partition: p}]
		}
		w.mu.Lock()
		w.reached[cc.name] = pos
		w.mu.Unlock()
	}()
	c, err := w.client(readerUser, opts...)
	if err != nil {
		fmt.Printf("chaos: txn: consumer %s: %v\n", cc.name, err)
		return
	}
	defer c.Close()
	var caught []int32
	for ctx.Err() == nil {
		// A caught-up consumer gets no fetches at all, so polls are bounded to look at
		// the target now and then.
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := c.PollFetches(pctx)
		timedOut := pctx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return
		}
		if !timedOut || len(fs.Records()) > 0 {
			w.sec.checkFetches(readerUser, cc.name, fs)
			history.RecordTxnFetches(w.rec, cc.name, fs, st)
		}
		select {
		case <-w.targetSet:
		default:
			continue
		}
		for p := range int32(w.partitions) {
			if pos := st.Pos[history.TP{Topic: topic, Partition: p}]; !slices.Contains(caught, p) && pos >= w.target[p] {
				history.CaughtUp(w.rec, cc.name, topic, p, pos)
				caught = append(caught, p)
			}
		}
		if len(caught) == w.partitions {
			return
		}
	}
}
