package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchConsumeFlags are the consumer flags of `bench consume` and `bench e2e`.
type benchConsumeFlags struct {
	consumers int
	group     string
}

func (f *benchConsumeFlags) register(fs *pflag.FlagSet, defConsumers int) {
	fs.IntVar(&f.consumers, "consumers", defConsumers, "number of consumer clients; without --group the partitions are split among them")
	fs.StringVarP(&f.group, "group", "g", "", "consume as members of this consumer group instead of from assigned partitions")
}

func (f *benchConsumeFlags) validate() error {
	if f.consumers <= 0 {
		return fmt.Errorf("invalid --consumers %d: must be positive", f.consumers)
	}
	if f.group != "" && strings.TrimSpace(f.group) == "" {
		return errors.New("--group must not be blank")
	}
	return nil
}

// partTarget is how far one partition must be read for `bench consume` to be
// done with it.
type partTarget struct {
	end  int64
	done atomic.Bool
}

// benchConsumers is a set of consumer clients reading one topic.
type benchConsumers struct {
	topic   string
	clients []*kgo.Client
	errs    errTracker
	base    time.Time

	records, bytes atomic.Int64 // every record read (of this run, for e2e)
	lastNs         atomic.Int64 // when the latest record arrived

	// bench consume: stop once every partition is read up to its end at start.
	targets   map[int32]*partTarget
	remaining atomic.Int64
	caughtUp  chan struct{}

	// bench e2e: records carry a run id and their send time.
	e2e                bool
	runID              uint64
	countFrom          atomic.Int64 // records sent this long after base count toward the latency
	lat                latencySet
	measuring          *atomic.Bool
	winRecords, winByt atomic.Int64

	assigned atomic.Int64 // partitions assigned to group members
	wg       sync.WaitGroup

	// bench consume --raw: one per client, fetching by hand.
	raw        []*rawConsumer
	rawPartMax int32
}

// newBenchConsumers builds the clients. Without a group, the partitions of
// offsets are dealt round-robin to the consumers, each starting at its
// partition's offset there. With a group, the group's committed offsets are
// first set to offsets (only possible while it has no members), and each
// consumer joins it.
func newBenchConsumers(ctx context.Context, cmd *cobra.Command, cf *clientFlags, f *benchConsumeFlags, adm *kadm.Client, topic string, offsets map[int32]int64) (*benchConsumers, error) {
	c := &benchConsumers{topic: topic, caughtUp: make(chan struct{})}
	base := []kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadUncommitted())}
	if f.group == "" {
		parts := make([]int32, 0, len(offsets))
		for p := range offsets {
			parts = append(parts, p)
		}
		slices.Sort(parts)
		n := min(f.consumers, len(parts))
		assign := make([]map[int32]kgo.Offset, n)
		for i, p := range parts {
			if assign[i%n] == nil {
				assign[i%n] = map[int32]kgo.Offset{}
			}
			assign[i%n][p] = kgo.NewOffset().At(offsets[p])
		}
		for _, a := range assign {
			cl, err := cf.newClient(cmd, append(base, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: a}))...)
			if err != nil {
				c.close()
				return nil, err
			}
			c.clients = append(c.clients, cl)
		}
		return c, nil
	}

	commit := kadm.Offsets{}
	for p, o := range offsets {
		commit.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	cctx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	resp, err := adm.CommitOffsets(cctx, f.group, commit)
	cancel()
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("setting the offsets of group %q (it must have no members; use a fresh group name): %w", f.group, err)
	}
	for range f.consumers {
		cl, err := cf.newClient(cmd, append(base,
			kgo.ConsumerGroup(f.group),
			kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				c.assigned.Add(int64(len(m[topic])))
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				c.assigned.Add(-int64(len(m[topic])))
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				c.assigned.Add(-int64(len(m[topic])))
			}),
		)...)
		if err != nil {
			c.close()
			return nil, err
		}
		c.clients = append(c.clients, cl)
	}
	return c, nil
}

// setTargets makes the consumers note when every partition has been read up
// to end (offsets at the start of the run); it returns how many partitions
// have records to read.
func (c *benchConsumers) setTargets(start, end map[int32]int64) int {
	c.targets = map[int32]*partTarget{}
	n := 0
	for p, e := range end {
		t := &partTarget{end: e}
		if e <= start[p] {
			t.done.Store(true)
		} else {
			n++
		}
		c.targets[p] = t
	}
	c.remaining.Store(int64(n))
	if n == 0 {
		close(c.caughtUp)
	}
	return n
}

func (c *benchConsumers) start(ctx context.Context, base time.Time) {
	c.base = base
	if c.raw != nil {
		for _, rc := range c.raw {
			c.wg.Go(func() { c.fetchRaw(ctx, rc) })
		}
		return
	}
	for _, cl := range c.clients {
		lr := c.lat.add()
		c.wg.Go(func() { c.poll(ctx, cl, lr) })
	}
}

func (c *benchConsumers) poll(ctx context.Context, cl *kgo.Client, lr *latencyRecorder) {
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		fs.EachError(func(_ string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
				c.errs.add(fmt.Errorf("partition %d: %w", p, err))
			}
		})
		now := time.Since(c.base)
		measuring := c.measuring != nil && c.measuring.Load()
		var n, b int64
		fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
			for _, r := range ftp.Records {
				if c.e2e {
					if len(r.Value) < e2eHeader || binary.BigEndian.Uint64(r.Value[0:8]) != c.runID {
						continue // not this run's
					}
					sent := time.Duration(binary.BigEndian.Uint64(r.Value[8:16]))
					lr.record(now-sent, int64(sent) >= c.countFrom.Load())
				}
				n++
				b += int64(len(r.Key) + len(r.Value))
			}
			if k := len(ftp.Records); k > 0 && c.targets != nil {
				if t := c.targets[ftp.Partition]; t != nil && ftp.Records[k-1].Offset+1 >= t.end && !t.done.Swap(true) {
					if c.remaining.Add(-1) == 0 {
						close(c.caughtUp)
					}
				}
			}
		})
		if n == 0 {
			continue
		}
		c.records.Add(n)
		c.bytes.Add(b)
		if measuring {
			c.winRecords.Add(n)
			c.winByt.Add(b)
		}
		c.lastNs.Store(int64(now))
	}
}

// waitAssigned waits until the group members have n partitions assigned (at
// most limit) and returns how long after base that was.
func (c *benchConsumers) waitAssigned(ctx context.Context, n int64, limit time.Duration, warn io.Writer) time.Duration {
	for c.assigned.Load() < n {
		if !sleepCtx(ctx, 10*time.Millisecond) {
			break
		}
		if time.Since(c.base) > limit {
			fmt.Fprintf(warn, "bench: the group has %d of %d partitions assigned after %v; going on\n", c.assigned.Load(), n, limit)
			break
		}
	}
	return time.Since(c.base)
}

// stop waits for the pollers to return (cancel must cancel the ctx given to
// start).
func (c *benchConsumers) stop(cancel context.CancelFunc) {
	cancel()
	c.wg.Wait()
}

func (c *benchConsumers) close() {
	for _, rc := range c.raw {
		rc.closeConns()
	}
	var wg sync.WaitGroup
	for _, cl := range c.clients {
		wg.Go(cl.Close)
	}
	wg.Wait()
}

func newBenchConsumeCmd() *cobra.Command {
	var (
		cf    clientFlags
		bc    benchCommon
		cfl   benchConsumeFlags
		rfl   benchRawFlags
		topic string
	)
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Measure consume throughput, reading a topic from the start",
		Long: `Consume reads --topic from the start of every partition and stops when it has read
everything the topic held when it started, or after --duration, whichever comes first.
Fill the topic first, for example with 'cairn bench produce'.

Without --group, the partitions are dealt to --consumers clients that fetch them directly.
With --group, --consumers clients join that consumer group; the group's committed
offsets are first set to the start of the log (so the group must have no members), and
nothing is committed afterwards.

With --raw (not with --group), each of the --consumers clients sends its own Fetch
requests (v12, 50 MiB per response, --partition-max-bytes per partition) straight to
each partition's leader and only walks the record batch headers of the answer: no
record is decoded and no CRC checked, so the figure is the broker's cost rather than
the client's. Its bytes are whole record batches as sent (headers and record framing
included, compressed if the batches are), not keys and values; its records are the
record counts of those batches (transaction markers left out), where a batch the run
starts inside of is counted whole.

The measured time runs from the start of the consumers (with --group: from when every
partition is assigned; the join time is reported as group_join_s) to the last record read.`,
		Example: `  cairn bench consume -b localhost:9092 --topic cairn-bench --consumers 4
  cairn bench consume --raw --consumers 2 --json
  cairn bench consume --group bench-readers --consumers 2 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchConsume(cmd, &cf, &bc, &cfl, &rfl, topic)
		},
	}
	cf.register(cmd, false)
	bc.register(cmd.Flags(), 60*time.Second)
	cfl.register(cmd.Flags(), 1)
	rfl.register(cmd.Flags())
	cmd.Flags().StringVarP(&topic, "topic", "t", "cairn-bench", "topic to read")
	return cmd
}

func runBenchConsume(cmd *cobra.Command, cf *clientFlags, bc *benchCommon, f *benchConsumeFlags, rf *benchRawFlags, topic string) error {
	if err := bc.validate(); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	if err := rf.validate(f); err != nil {
		return err
	}
	sec, err := cf.security(cmd)
	if err != nil {
		return err
	}
	if rf.raw && sec.enabled() {
		// The raw consumers write their fetches to a socket of their own, in plaintext.
		return errors.New("--raw reads over plaintext connections of its own: drop --raw to consume over TLS or SASL")
	}
	if strings.TrimSpace(topic) == "" {
		return errors.New("--topic must not be empty")
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
	startOffs, endOffs, err := listOffsets(ctx, adm, topic)
	if err != nil {
		return requestError(cmd, cf, "reading the topic's offsets", err)
	}
	var cons *benchConsumers
	if rf.raw {
		cons, err = newRawConsumers(cmd, cf, f, rf, topic, startOffs)
	} else {
		cons, err = newBenchConsumers(ctx, cmd, cf, f, adm, topic, startOffs)
	}
	if err != nil {
		return err
	}
	defer cons.close()
	if cons.setTargets(startOffs, endOffs) == 0 {
		return fmt.Errorf("topic %q has no records to read: fill it first, e.g. with 'cairn bench produce --topic %s'", topic, topic)
	}

	rep := &benchReport{
		Mode: "consume",
		Parameters: map[string]any{
			"topic":      topic,
			"partitions": len(endOffs),
			"consumers":  len(cons.clients),
			"group":      f.group,
			"duration_s": bc.duration.Seconds(),
			"raw":        rf.raw,
		},
	}
	if rf.raw {
		rep.Parameters["partition_max_bytes"] = int64(rf.partMaxBytes)
	}
	start := time.Now()
	var lastRecs, lastBytes int64
	stopProgress := startProgress(stderr, start, func(el, iv time.Duration) string {
		recs, bytes := cons.records.Load(), cons.bytes.Load()
		line := fmt.Sprintf("%v: %.1f MB/s, %.0f rec/s", el, mbPerS(bytes-lastBytes, iv), perS(recs-lastRecs, iv))
		if e := cons.errs.count(); e > 0 {
			line += fmt.Sprintf(", %d errors", e)
		}
		lastRecs, lastBytes = recs, bytes
		return line
	})
	defer stopProgress()

	consCtx, cancelCons := context.WithCancel(ctx)
	defer cancelCons()
	cons.start(consCtx, start)
	// The window starts when the consumers do (their connection and first
	// fetch included) or, for a group, once every partition is assigned; it
	// ends with the last record read, or when the run stopped.
	winStart := time.Duration(0)
	var skipRecs, skipBytes int64
	if f.group != "" {
		joined := cons.waitAssigned(ctx, int64(len(endOffs)), 30*time.Second, stderr)
		rep.Parameters["group_join_s"] = round3(joined.Seconds())
		select {
		case <-cons.caughtUp:
			// Everything was read while the group formed: keep the
			// whole run as the window.
		default:
			winStart = joined
			skipRecs, skipBytes = cons.records.Load(), cons.bytes.Load()
		}
	}
	caughtUp := false
	select {
	case <-cons.caughtUp:
		caughtUp = true
	case <-ctx.Done():
	case <-time.After(bc.duration):
	}
	stoppedAt := time.Since(start)
	cons.stop(cancelCons)
	stopProgress()

	winEnd := stoppedAt
	if caughtUp {
		winEnd = time.Duration(cons.lastNs.Load())
	}
	win := max(0, winEnd-winStart)
	rep.DurationS = round3(win.Seconds())
	rep.Interrupted = ctx.Err() != nil
	rep.Records = ptr(cons.records.Load() - skipRecs)
	rep.Bytes = cons.bytes.Load() - skipBytes
	rep.MBPerS = mbPerS(rep.Bytes, win)
	rep.RecordsPerS = ptr(perS(*rep.Records, win))
	cons.errs.fill(rep)
	if err := rep.write(cmd.OutOrStdout(), bc.json); err != nil {
		return err
	}
	return cons.errs.err("fetches")
}
