package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// benchDrainTimeout bounds how long bench e2e waits, after the producers
// stopped, for the consumers to read what was acknowledged.
const benchDrainTimeout = 10 * time.Second

func newBenchE2ECmd() *cobra.Command {
	var (
		cf  clientFlags
		bc  benchCommon
		pf  benchProduceFlags
		cfl benchConsumeFlags
	)
	cmd := &cobra.Command{
		Use:   "e2e",
		Short: "Measure end-to-end latency: producers and consumers together",
		Long: `E2e runs producers (the flags of 'bench produce') and consumers (the flags of
'bench consume') on the same topic at once. Every record's value starts with the run's id
and the time of its Produce call; a consumer that reads it records the end-to-end
latency, produce call to consumed. Records sent during --warmup are not counted.

The consumers start at the current end of the topic, so old records are not read. With
--group, the group's committed offsets are first set to that end (the group must have no
members). After --duration the producers stop, and the consumers get up to 10 s to read
every acknowledged record; not_consumed counts those they did not.`,
		Example: `  cairn bench e2e -b localhost:9092 --producers 4 --consumers 4 --rate 20000
  cairn bench e2e --acks 1 --record-size 256 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchE2E(cmd, &cf, &bc, &pf, &cfl)
		},
	}
	cf.register(cmd, false)
	bc.register(cmd.Flags(), 10*time.Second)
	pf.register(cmd.Flags())
	cfl.register(cmd.Flags(), 1)
	return cmd
}

func runBenchE2E(cmd *cobra.Command, cf *clientFlags, bc *benchCommon, pf *benchProduceFlags, f *benchConsumeFlags) error {
	if err := bc.validate(); err != nil {
		return err
	}
	opts, err := pf.producerOpts(cmd)
	if err != nil {
		return err
	}
	if pf.recordSize < e2eHeader {
		return fmt.Errorf("invalid --record-size %d: bench e2e needs at least %d bytes for its header", pf.recordSize, e2eHeader)
	}
	if err := f.validate(); err != nil {
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
	adm := kadm.NewClient(admCl)
	partitions, err := pf.ensureTopic(ctx, cmd, adm, stderr)
	if err != nil {
		return requestError(cmd, cf, "preparing the topic", err)
	}
	_, endOffs, err := listOffsets(ctx, adm, pf.topic)
	if err != nil {
		return requestError(cmd, cf, "reading the topic's offsets", err)
	}

	prods, err := newBenchProducers(cmd, cf, pf, opts, true)
	if err != nil {
		return err
	}
	defer prods.close()
	cons, err := newBenchConsumers(ctx, cmd, cf, f, adm, pf.topic, endOffs)
	if err != nil {
		return err
	}
	defer cons.close()
	cons.e2e, cons.runID, cons.measuring = true, prods.runID, &prods.measuring

	// One clock for both sides: durations since base.
	base := time.Now()
	cons.countFrom.Store(math.MaxInt64) // nothing counts until the producers' warmup is over
	consCtx, cancelCons := context.WithCancel(ctx)
	defer cancelCons()
	cons.start(consCtx, base)
	if f.group != "" {
		// Members start at the committed end offsets whenever they join, so
		// nothing is missed; waiting only keeps the join out of the figures.
		cons.waitAssigned(ctx, int64(len(endOffs)), 30*time.Second, stderr)
	}
	start := time.Now()
	prods.countFrom = start.Sub(base) + pf.warmup
	cons.countFrom.Store(int64(prods.countFrom))

	var lastAcked, lastBytes, lastCons int64
	stopProgress := startProgress(stderr, start, func(el, iv time.Duration) string {
		acked, bytes, consumed := prods.ackedAll.Load(), prods.bytesAll.Load(), cons.records.Load()
		ack99, an := prods.lat.intervalQuantile(0.99)
		e2e99, en := cons.lat.intervalQuantile(0.99)
		line := fmt.Sprintf("%v: produce %.1f MB/s, %.0f rec/s", el, mbPerS(bytes-lastBytes, iv), perS(acked-lastAcked, iv))
		if an > 0 {
			line += ", ack p99 " + fmtMs(ack99)
		}
		line += fmt.Sprintf("; consume %.0f rec/s", perS(consumed-lastCons, iv))
		if en > 0 {
			line += ", e2e p99 " + fmtMs(e2e99)
		}
		if el <= pf.warmup {
			line += " (warmup)"
		}
		if e := prods.errs.count() + cons.errs.count(); e > 0 {
			line += fmt.Sprintf(", %d errors", e)
		}
		lastAcked, lastBytes, lastCons = acked, bytes, consumed
		return line
	})
	defer stopProgress()

	prods.start(ctx, base)
	winStart, winEnd := measure(ctx, &prods.measuring, pf.warmup, bc.duration)
	left := prods.stop(benchFlushTimeout)

	// Let the consumers read what was acknowledged.
	drainBy := time.Now().Add(benchDrainTimeout)
	for cons.records.Load() < prods.ackedAll.Load() && time.Now().Before(drainBy) {
		if !sleepCtx(ctx, 10*time.Millisecond) {
			break
		}
	}
	cons.stop(cancelCons)
	stopProgress()

	win := winEnd.Sub(winStart)
	rep := &benchReport{
		Mode:        "e2e",
		Parameters:  map[string]any{"duration_s": bc.duration.Seconds(), "consumers": len(cons.clients), "group": f.group},
		DurationS:   round3(win.Seconds()),
		Interrupted: ctx.Err() != nil,
		Records:     ptr(prods.ackedWin.Load()),
		Bytes:       prods.bytesWin.Load(),
		LatencyKind: "end-to-end",
	}
	pf.params(rep.Parameters, partitions)
	rep.MBPerS = mbPerS(rep.Bytes, win)
	rep.RecordsPerS = ptr(perS(*rep.Records, win))
	rep.latencySummary = cons.lat.total().summary()
	rep.ProduceLatency = prods.lat.total().summary()
	rep.Consumed = ptr(cons.records.Load())
	rep.ConsumeMBPerS = ptr(mbPerS(cons.winByt.Load(), win))
	rep.NotConsumed = ptr(max(0, prods.ackedAll.Load()-cons.records.Load()))
	rep.Unacknowledged = ptr(left)
	var errs errTracker
	for _, t := range []*errTracker{&prods.errs, &cons.errs} {
		t.mu.Lock()
		if t.n > 0 {
			errs.mu.Lock()
			errs.n += t.n
			if errs.first == nil {
				errs.first = t.first
			}
			errs.mu.Unlock()
		}
		t.mu.Unlock()
	}
	errs.fill(rep)
	if err := rep.write(cmd.OutOrStdout(), bc.json); err != nil {
		return err
	}
	if err := errs.err("records or fetches"); err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("%d records were still unacknowledged %v after the run ended", left, benchFlushTimeout)
	}
	return nil
}
