package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// `cairn bench`: load generators that measure a cluster (produce, consume,
// e2e) or the disk under it (disk). Every mode stops by itself after
// --duration (^C stops it early), prints a progress line to stderr every
// second, and ends with a summary on stdout: human-readable, or with --json
// exactly one JSON object.

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure produce, consume and end-to-end performance, or the disk's own fsync bandwidth",
		Long: `Bench runs a load for --duration and reports throughput and latency.

  cairn bench produce   producers writing fixed-size records (send→ack latency)
  cairn bench consume   consumers reading a topic from the start
  cairn bench e2e       producers and consumers together (produce→consume latency)
  cairn bench disk      sequential write + fdatasync of the disk itself (the baseline)
  cairn bench tcp       one loopback TCP connection (the baseline for consume)

MB/s is 10^6 payload bytes (record keys and values) per second. A progress line goes to
stderr every second; the summary goes to stdout, as one JSON object with --json.
^C stops a run early and still prints the summary.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newBenchProduceCmd(), newBenchConsumeCmd(), newBenchE2ECmd(), newBenchDiskCmd(), newBenchTCPCmd())
	return cmd
}

// benchCommon holds the flags every bench mode takes.
type benchCommon struct {
	duration time.Duration
	json     bool
}

func (c *benchCommon) register(fs *pflag.FlagSet, defDuration time.Duration) {
	fs.DurationVarP(&c.duration, "duration", "d", defDuration, "how long to measure")
	fs.BoolVar(&c.json, "json", false, "print the summary as one JSON object on stdout")
}

func (c *benchCommon) validate() error {
	if c.duration <= 0 {
		return fmt.Errorf("invalid --duration %v: must be positive", c.duration)
	}
	return nil
}

// byteSize is a flag holding a byte count written as a plain number or with a
// unit: KiB, MiB, GiB, TiB (powers of 1024; K, M, G, T are the same) or
// KB, MB, GB, TB (powers of 1000).
type byteSize int64

func (b *byteSize) String() string { return formatByteSize(int64(*b)) }
func (b *byteSize) Type() string   { return "size" }
func (b *byteSize) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] == '-' || t[i] == '+' || t[i] == '.' || (t[i] >= '0' && t[i] <= '9')) {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := byteUnits[unit]
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("invalid size %q: want a byte count such as 1024, 64KiB, 1MiB or 1GB", s)
	}
	v := math.Round(f * mult)
	if math.Abs(v) > math.MaxInt64/2 {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return int64(v), nil
}

func formatByteSize(v int64) string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v != 0 && v%u.n == 0 {
			return strconv.FormatInt(v/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(v, 10)
}

// benchReport is the final summary of a run. Fields that do not apply to a
// mode are left out of the JSON.
type benchReport struct {
	Mode        string         `json:"mode"`
	Parameters  map[string]any `json:"parameters"`
	DurationS   float64        `json:"duration_s"`
	Interrupted bool           `json:"interrupted"`

	Records     *int64   `json:"records,omitempty"`
	Bytes       int64    `json:"bytes"`
	MBPerS      float64  `json:"mb_per_s"`
	RecordsPerS *float64 `json:"records_per_s,omitempty"`

	// LatencyKind names what the top-level percentiles measure.
	LatencyKind string `json:"latency,omitempty"`
	*latencySummary

	// e2e: the producers' send→ack latency, and what the consumers read.
	ProduceLatency *latencySummary `json:"produce_latency,omitempty"`
	Consumed       *int64          `json:"consumed_records,omitempty"`
	ConsumeMBPerS  *float64        `json:"consume_mb_per_s,omitempty"`
	NotConsumed    *int64          `json:"not_consumed,omitempty"`

	// produce and e2e: records still unacknowledged when the bench gave up
	// waiting for them.
	Unacknowledged *int64 `json:"unacknowledged,omitempty"`

	// disk
	Syncs     *int64   `json:"syncs,omitempty"`
	SyncsPerS *float64 `json:"syncs_per_s,omitempty"`

	Errors     int64  `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

func ptr[T any](v T) *T { return &v }

func mbPerS(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return round3(float64(bytes) / 1e6 / d.Seconds())
}

func perS(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return round3(float64(n) / d.Seconds())
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// write prints the report: one JSON object, or human lines.
func (r *benchReport) write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "bench %s: %.2f s", r.Mode, r.DurationS)
	if r.Interrupted {
		b.WriteString(" (interrupted)")
	}
	b.WriteString("\n")
	if r.Records != nil {
		fmt.Fprintf(&b, "  records:     %d (%s)\n", *r.Records, humanBytes(r.Bytes))
	} else {
		fmt.Fprintf(&b, "  bytes:       %s\n", humanBytes(r.Bytes))
	}
	fmt.Fprintf(&b, "  throughput:  %.1f MB/s", r.MBPerS)
	if r.RecordsPerS != nil {
		fmt.Fprintf(&b, ", %.0f records/s", *r.RecordsPerS)
	}
	if r.SyncsPerS != nil {
		fmt.Fprintf(&b, ", %.0f fdatasyncs/s (%d)", *r.SyncsPerS, *r.Syncs)
	}
	b.WriteString("\n")
	if r.latencySummary != nil {
		writeLatency(&b, r.LatencyKind, r.latencySummary)
	}
	if r.ProduceLatency != nil {
		writeLatency(&b, "send→ack", r.ProduceLatency)
	}
	if r.Consumed != nil {
		fmt.Fprintf(&b, "  consumed:    %d records", *r.Consumed)
		if r.ConsumeMBPerS != nil {
			fmt.Fprintf(&b, ", %.1f MB/s", *r.ConsumeMBPerS)
		}
		if r.NotConsumed != nil && *r.NotConsumed > 0 {
			fmt.Fprintf(&b, "; %d acknowledged records not consumed", *r.NotConsumed)
		}
		b.WriteString("\n")
	}
	if r.Unacknowledged != nil && *r.Unacknowledged > 0 {
		fmt.Fprintf(&b, "  unacknowledged at exit: %d records\n", *r.Unacknowledged)
	}
	if r.Errors > 0 {
		fmt.Fprintf(&b, "  errors:      %d, first: %s\n", r.Errors, r.FirstError)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeLatency(b *strings.Builder, kind string, l *latencySummary) {
	if kind == "" {
		kind = "latency"
	}
	fmt.Fprintf(b, "  %-12s p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms (mean %.3f ms, %d samples)\n",
		kind+":", l.P50Ms, l.P99Ms, l.P999Ms, l.MaxMs, l.MeanMs, l.Samples)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.2f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

func fmtMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms"
}

// startProgress prints line(elapsed, since the previous line) to w every
// second until the returned stop is called (stop waits for the printer).
func startProgress(w io.Writer, start time.Time, line func(elapsed, interval time.Duration) string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last := start
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				fmt.Fprintln(w, line(now.Sub(start).Round(time.Second), now.Sub(last)))
				last = now
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

// syncWriter serializes writes from the progress printer and warnings.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// sleepCtx sleeps for d or until ctx is done; it reports whether it slept the
// whole time.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// errTracker counts errors and keeps the first.
type errTracker struct {
	mu    sync.Mutex
	n     int64
	first error
}

func (e *errTracker) add(err error) {
	e.mu.Lock()
	e.n++
	if e.first == nil {
		e.first = err
	}
	e.mu.Unlock()
}

func (e *errTracker) count() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

func (e *errTracker) fill(r *benchReport) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r.Errors = e.n
	if e.first != nil {
		r.FirstError = e.first.Error()
	}
}

// err is the error a run with failures exits with (after its summary).
func (e *errTracker) err(what string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		return nil
	}
	return fmt.Errorf("%d %s failed; first: %w", e.n, what, e.first)
}

// benchTopicFlags are the flags of the modes that may create the topic.
type benchTopicFlags struct {
	topic      string
	partitions int32
	rf         int16
}

func (t *benchTopicFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&t.topic, "topic", "t", "cairn-bench", "topic to use; created if missing")
	fs.Int32VarP(&t.partitions, "partitions", "p", 8, "partitions of the topic when it is created (-1: the broker's default)")
	fs.Int16VarP(&t.rf, "replication-factor", "r", -1, "replication factor of the topic when it is created (-1: the broker's default)")
}

func (t *benchTopicFlags) validate() error {
	if strings.TrimSpace(t.topic) == "" {
		return errors.New("--topic must not be empty")
	}
	if t.partitions == 0 || t.partitions < -1 {
		return fmt.Errorf("invalid --partitions %d: want a positive count or -1", t.partitions)
	}
	if t.rf == 0 || t.rf < -1 {
		return fmt.Errorf("invalid --replication-factor %d: want a positive count or -1", t.rf)
	}
	return nil
}

// ensureTopic creates the topic if it does not exist and returns its
// partition count. An existing topic is used as it is; if --partitions or
// --replication-factor were given and differ, a warning says so.
func (t *benchTopicFlags) ensureTopic(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, warn io.Writer) (int32, error) {
	ctx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	describe := func() (kadm.TopicDetail, error) {
		tds, err := adm.ListTopics(ctx, t.topic)
		if err != nil {
			return kadm.TopicDetail{}, err
		}
		td, ok := tds[t.topic]
		if !ok {
			return kadm.TopicDetail{Err: kerr.UnknownTopicOrPartition}, nil
		}
		return td, nil
	}
	td, err := describe()
	if err != nil {
		return 0, fmt.Errorf("looking up topic %q: %w", t.topic, err)
	}
	if td.Err == nil {
		n := int32(len(td.Partitions))
		if cmd.Flags().Changed("partitions") && t.partitions > 0 && n != t.partitions {
			fmt.Fprintf(warn, "bench: topic %q exists with %d partitions (not %d); using it as it is\n", t.topic, n, t.partitions)
		}
		if rf := int16(td.Partitions.NumReplicas()); cmd.Flags().Changed("replication-factor") && t.rf > 0 && rf != t.rf {
			fmt.Fprintf(warn, "bench: topic %q exists with replication factor %d (not %d); using it as it is\n", t.topic, rf, t.rf)
		}
		return n, nil
	}
	if !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return 0, fmt.Errorf("looking up topic %q: %w", t.topic, td.Err)
	}
	resp, err := adm.CreateTopic(ctx, t.partitions, t.rf, nil, t.topic)
	if err == nil {
		err = brokerError(resp.Err, resp.ErrMessage)
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("creating topic %q: %w", t.topic, err)
	}
	// Wait until the topic's partitions have leaders, so the first produce
	// does not measure the creation.
	for {
		td, err := describe()
		if err == nil && td.Err == nil && len(td.Partitions) > 0 {
			ready := true
			for _, p := range td.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
			if ready {
				return int32(len(td.Partitions)), nil
			}
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return 0, fmt.Errorf("topic %q was created but its partitions have no leaders yet: %w", t.topic, ctx.Err())
		}
	}
}

// listOffsets returns the start and end offset of every partition of topic.
func listOffsets(ctx context.Context, adm *kadm.Client, topic string) (start, end map[int32]int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	get := func(list func(context.Context, ...string) (kadm.ListedOffsets, error), what string) (map[int32]int64, error) {
		lo, err := list(ctx, topic)
		if err == nil {
			err = lo.Error()
		}
		if err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("topic %q does not exist", topic)
			}
			return nil, fmt.Errorf("listing the %s offsets of %q: %w", what, topic, err)
		}
		out := map[int32]int64{}
		for p, o := range lo[topic] {
			out[p] = o.Offset
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("topic %q does not exist", topic)
		}
		return out, nil
	}
	if start, err = get(adm.ListStartOffsets, "start"); err != nil {
		return nil, nil, err
	}
	if end, err = get(adm.ListEndOffsets, "end"); err != nil {
		return nil, nil, err
	}
	return start, end, nil
}
