package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func TestHistogramBuckets(t *testing.T) {
	// Every bucket's upper bound maps back to it, and values map to a bucket
	// whose bound is at or above them and within 1/histSub of them.
	for idx := 0; idx < histBuckets; idx++ {
		if got := histIndex(histBucketHigh(idx)); got != idx {
			t.Fatalf("histIndex(histBucketHigh(%d)=%d) = %d", idx, histBucketHigh(idx), got)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := rng.Uint64() >> rng.IntN(64)
		hi := histBucketHigh(histIndex(v))
		if hi < v {
			t.Fatalf("value %d: bucket bound %d below it", v, hi)
		}
		if v >= 2*histSub && float64(hi-v) > float64(v)/histSub {
			t.Fatalf("value %d: bucket bound %d more than 1/%d above it", v, hi, histSub)
		}
		if v < 2*histSub && hi != v {
			t.Fatalf("small value %d not exact (bound %d)", v, hi)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	if h.quantile(0.5) != 0 || h.count() != 0 || h.mean() != 0 {
		t.Fatal("empty histogram should report zeros")
	}
	// 1..100000 µs in nanoseconds: the q-quantile is q*100000 µs.
	const n = 100000
	perm := rand.New(rand.NewPCG(3, 4)).Perm(n)
	for _, i := range perm {
		h.record(int64(i+1) * 1000)
	}
	if h.count() != n || h.min != 1000 || h.max != n*1000 {
		t.Fatalf("count %d min %d max %d", h.count(), h.min, h.max)
	}
	for _, q := range []float64{0.001, 0.5, 0.9, 0.99, 0.999} {
		want := q * n * 1000
		got := float64(h.quantile(q))
		if got < want || got > want*(1+1.0/histSub) {
			t.Errorf("quantile(%v) = %v, want within [%v, %v]", q, got, want, want*(1+1.0/histSub))
		}
	}
	if got := h.quantile(1); got != n*1000 {
		t.Errorf("quantile(1) = %d, want the exact max %d", got, n*1000)
	}
	if m := h.mean(); math.Abs(m-(n+1)*500) > 1 {
		t.Errorf("mean = %v, want %v", m, (n+1)*500)
	}
	s := h.summary()
	if s.P50Ms < 50 || s.P50Ms > 50.5 || s.MaxMs != 100 || s.Samples != n {
		t.Errorf("summary = %+v", s)
	}

	// Merging two halves is the same as recording everything in one.
	var a, b histogram
	for i, v := range perm {
		if i%2 == 0 {
			a.record(int64(v+1) * 1000)
		} else {
			b.record(int64(v+1) * 1000)
		}
	}
	a.merge(&b)
	if a.counts != h.counts || a.n != h.n || a.min != h.min || a.max != h.max {
		t.Error("merged histogram differs from the combined one")
	}
	a.reset()
	if a.count() != 0 || a.quantile(0.99) != 0 || a.max != 0 {
		t.Error("reset histogram is not empty")
	}
	// Negative durations (clock oddities) count as zero.
	a.record(-5)
	if a.quantile(1) != 0 || a.count() != 1 {
		t.Error("negative value not recorded as 0")
	}
	// A single huge value is its own maximum.
	a.record(math.MaxInt64)
	if a.quantile(1) != math.MaxInt64 {
		t.Errorf("max = %d", a.quantile(1))
	}
}

func TestLatencySet(t *testing.T) {
	var s latencySet
	r1, r2 := s.add(), s.add()
	for i := 1; i <= 100; i++ {
		r1.record(time.Duration(i)*time.Millisecond, i > 50) // the first 50 are warmup
		r2.record(time.Duration(i)*time.Millisecond, true)
	}
	p99, n := s.intervalQuantile(0.99)
	if n != 200 || p99 < 99*time.Millisecond || p99 > 100*time.Millisecond {
		t.Errorf("interval p99 %v over %d values", p99, n)
	}
	if _, n := s.intervalQuantile(0.99); n != 0 {
		t.Errorf("interval not emptied: %d values", n)
	}
	if tot := s.total(); tot.count() != 150 {
		t.Errorf("total has %d values, want 150", tot.count())
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1024": 1024, "1KiB": 1024, "1k": 1024, "64 KiB": 64 << 10, "1MiB": 1 << 20, "1mib": 1 << 20,
		"1MB": 1e6, "1.5KiB": 1536, "1GiB": 1 << 30, "2G": 2 << 30, "0": 0, "-5": -5, "10B": 10,
	} {
		got, err := parseByteSize(in)
		if err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KiB", "1XB", "one", "1..2MiB"} {
		if _, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q): want an error", in)
		}
	}
	for v, want := range map[int64]string{1024: "1KiB", 1 << 20: "1MiB", 1 << 30: "1GiB", 1000: "1000", 0: "0"} {
		if got := formatByteSize(v); got != want {
			t.Errorf("formatByteSize(%d) = %q, want %q", v, got, want)
		}
	}
}

// runBench runs `cairn bench args...` with a deadline and captured output.
func runBench(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	root := &cobra.Command{Use: "cairn", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newBenchCmd())
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(""))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"bench"}, args...))
	err := root.ExecuteContext(ctx)
	return result{out: out.String(), errOut: errOut.String(), err: err}
}

func TestBenchBadFlags(t *testing.T) {
	// Nothing listens here; every case must fail before dialing.
	const addr = "127.0.0.1:1"
	dir := t.TempDir()
	file := dir + "/f"
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "-b", addr, "--acks", "2"}, `invalid --acks "2"`},
		{[]string{"produce", "-b", addr, "--acks", "1", "--idempotent"}, "--idempotent needs --acks all"},
		{[]string{"produce", "-b", addr, "--acks", "0", "--idempotent=true"}, "--idempotent needs --acks all"},
		{[]string{"produce", "-b", addr, "--compression", "brotli"}, `invalid --compression "brotli"`},
		{[]string{"produce", "-b", addr, "--record-size", "0"}, "invalid --record-size 0: must be positive"},
		{[]string{"produce", "-b", addr, "--record-size", "-1KiB"}, "invalid --record-size -1024: must be positive"},
		{[]string{"produce", "-b", addr, "--record-size", "lots"}, `invalid size "lots"`},
		{[]string{"produce", "-b", addr, "--producers", "0"}, "invalid --producers 0"},
		{[]string{"produce", "-b", addr, "--rate", "-1"}, "invalid --rate -1"},
		{[]string{"produce", "-b", addr, "--duration", "0s"}, "invalid --duration 0s"},
		{[]string{"produce", "-b", addr, "--warmup", "-1s"}, "invalid --warmup -1s"},
		{[]string{"produce", "-b", addr, "--partitions", "0"}, "invalid --partitions 0"},
		{[]string{"produce", "-b", addr, "--replication-factor", "-2"}, "invalid --replication-factor -2"},
		{[]string{"produce", "-b", addr, "--topic", " "}, "--topic must not be empty"},
		{[]string{"produce", "-b", addr, "extra"}, "unknown command"},
		{[]string{"consume", "-b", addr, "--consumers", "0"}, "invalid --consumers 0"},
		{[]string{"consume", "-b", addr, "--topic", ""}, "--topic must not be empty"},
		{[]string{"e2e", "-b", addr, "--record-size", "8"}, "at least 16 bytes"},
		{[]string{"e2e", "-b", addr, "--acks", "1", "--idempotent"}, "--idempotent needs --acks all"},
		{[]string{"disk", "--dir", dir, "--write-size", "0"}, "invalid --write-size 0"},
		{[]string{"disk", "--dir", dir, "--size", "-1"}, "invalid --size -1"},
		{[]string{"disk", "--dir", dir + "/missing"}, "no such file"},
		{[]string{"disk", "--dir", file}, "is not a folder"},
	} {
		r := runBench(t, tc.args...)
		if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("bench %s: got error %v, want one containing %q", strings.Join(tc.args, " "), r.err, tc.want)
		}
	}
	// With --acks 1 idempotence is simply off unless asked for.
	var pf benchProduceFlags
	cmd := &cobra.Command{}
	pf.register(cmd.Flags())
	if err := cmd.Flags().Parse([]string{"--acks", "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pf.producerOpts(cmd); err != nil || pf.idempotent {
		t.Errorf("--acks 1 alone: err %v, idempotent %v; want no error and idempotence off", err, pf.idempotent)
	}
}

// benchJSON runs a bench mode with --json and decodes its one JSON object.
func benchJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	r := runBench(t, append(args, "--json")...)
	if r.err != nil {
		t.Fatalf("bench %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.out, r.errOut)
	}
	dec := json.NewDecoder(strings.NewReader(r.out))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("bench %s: stdout is not JSON: %v\n%s", strings.Join(args, " "), err, r.out)
	}
	if dec.More() {
		t.Fatalf("bench %s: more than one JSON value on stdout:\n%s", strings.Join(args, " "), r.out)
	}
	return m
}

func wantNumbers(t *testing.T, m map[string]any, positive []string, present ...string) {
	t.Helper()
	for _, k := range append(positive, present...) {
		if _, ok := m[k].(float64); !ok {
			t.Errorf("%s: field %q missing or not a number in %v", m["mode"], k, m)
		}
	}
	for _, k := range positive {
		if v, _ := m[k].(float64); v <= 0 {
			t.Errorf("%s: %s = %v, want > 0", m["mode"], k, m[k])
		}
	}
}

func TestBenchAgainstFakeCluster(t *testing.T) {
	addr := newFakeCluster(t, 1)
	latency := []string{"p50_ms", "p99_ms", "p999_ms", "max_ms"}

	prod := benchJSON(t, "produce", "-b", addr, "--topic", "b", "--partitions", "3", "--producers", "2",
		"--record-size", "100", "--duration", "2s", "--warmup", "0s")
	wantNumbers(t, prod, append([]string{"records_per_s", "mb_per_s", "records", "duration_s", "bytes"}, latency...), "errors", "unacknowledged")
	if prod["mode"] != "produce" || prod["errors"] != 0.0 {
		t.Errorf("produce report: %v", prod)
	}
	params, _ := prod["parameters"].(map[string]any)
	if params["partitions"] != 3.0 || params["acks"] != "all" || params["idempotent"] != true || params["record_size"] != 100.0 {
		t.Errorf("produce parameters: %v", params)
	}
	if b, r := prod["bytes"].(float64), prod["records"].(float64); b != 100*r {
		t.Errorf("bytes %v for %v records of 100 bytes", b, r)
	}

	// Direct consumers read at least what was acknowledged in the window,
	// and stop by themselves once they reach the end.
	cons := benchJSON(t, "consume", "-b", addr, "--topic", "b", "--consumers", "2", "--duration", "60s")
	wantNumbers(t, cons, []string{"records_per_s", "mb_per_s", "records"})
	if cons["records"].(float64) < prod["records"].(float64) || cons["interrupted"] != false {
		t.Errorf("consumed %v records, produced %v", cons["records"], prod["records"])
	}
	if _, ok := cons["p99_ms"]; ok {
		t.Error("consume reports a latency it does not measure")
	}
	grp := benchJSON(t, "consume", "-b", addr, "--topic", "b", "--group", "bench-g", "--consumers", "2", "--duration", "60s")
	wantNumbers(t, grp, []string{"records_per_s", "records"})
	if grp["records"].(float64) <= 0 {
		t.Errorf("group consumed %v records", grp["records"])
	}

	// An empty topic is refused with a hint, a missing one named.
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := newAdmin(t, addr).CreateTopic(c, 2, 1, nil, "empty"); err != nil {
		t.Fatal(err)
	}
	if r := runBench(t, "consume", "-b", addr, "--topic", "empty"); r.err == nil || !strings.Contains(r.err.Error(), "no records to read") {
		t.Errorf("consume of an empty topic: %v", r.err)
	}
	if r := runBench(t, "consume", "-b", addr, "--topic", "nope"); r.err == nil || !strings.Contains(r.err.Error(), "does not exist") {
		t.Errorf("consume of a missing topic: %v", r.err)
	}

	e2e := benchJSON(t, "e2e", "-b", addr, "--topic", "e", "--partitions", "2", "--producers", "2", "--consumers", "2",
		"--rate", "2000", "--duration", "1s", "--warmup", "200ms", "--acks", "1", "--compression", "lz4")
	wantNumbers(t, e2e, append([]string{"records_per_s", "mb_per_s", "consumed_records"}, latency...), "not_consumed")
	if e2e["not_consumed"] != 0.0 || e2e["latency"] != "end-to-end" {
		t.Errorf("e2e report: %v", e2e)
	}
	if pl, _ := e2e["produce_latency"].(map[string]any); pl == nil || pl["p99_ms"] == nil {
		t.Errorf("e2e report has no produce_latency: %v", e2e)
	}
	e2eGroup := benchJSON(t, "e2e", "-b", addr, "--topic", "e", "--group", "e2e-g", "--producers", "1",
		"--rate", "1000", "--duration", "1s", "--warmup", "0s")
	wantNumbers(t, e2eGroup, append([]string{"records_per_s", "consumed_records"}, latency...))
}

func TestBenchDisk(t *testing.T) {
	dir := t.TempDir()
	m := benchJSON(t, "disk", "--dir", dir, "--size", "8MiB", "--write-size", "1MiB")
	wantNumbers(t, m, []string{"mb_per_s", "p50_ms", "p99_ms", "max_ms", "syncs", "duration_s"}, "p999_ms")
	if m["bytes"] != float64(8<<20) || m["syncs"] != 8.0 {
		t.Errorf("disk report: %v", m)
	}
	if _, ok := m["records_per_s"]; ok {
		t.Error("disk reports records_per_s")
	}
	// The test file is gone.
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("left in %s: %v (%v)", dir, ents, err)
	}
	// The human summary goes to stdout; the partial last write is counted.
	r := runBench(t, "disk", "--dir", dir, "--size", "1000KiB", "--write-size", "300KiB")
	if r.err != nil || !strings.Contains(r.out, "bench disk:") || !strings.Contains(r.out, "fdatasync:") || !strings.Contains(r.out, "1.02 MB") {
		t.Errorf("human disk summary: %v\n%s", r.err, r.out)
	}
}

// Cancelling a run (^C) ends it with its summary and no error: neither the records
// still buffered nor a producer waiting for buffer room count as failures. The second
// case keeps the producer's buffer full, so it is waiting for room when the run ends.
func TestBenchStopsOnCancel(t *testing.T) {
	for _, extra := range [][]string{{"--rate", "500"}, {"--buffer", "1KiB"}} {
		t.Run(strings.Join(extra, "="), func(t *testing.T) { benchStopsOnCancel(t, extra) })
	}
}

func benchStopsOnCancel(t *testing.T, extra []string) {
	addr := newFakeCluster(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() {
		root := &cobra.Command{Use: "cairn", SilenceUsage: true, SilenceErrors: true}
		root.AddCommand(newBenchCmd())
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		args := []string{"bench", "produce", "-b", addr, "--duration", "10m", "--warmup", "0s", "--producers", "1", "--json"}
		root.SetArgs(append(args, extra...))
		err := root.ExecuteContext(ctx)
		done <- result{out: out.String(), errOut: errOut.String(), err: err}
	}()
	// Cancel once the run has been producing for a while: 50 records stored take 100 ms
	// at 500/s, ten times the producer's linger, so acknowledgements have reached the run's
	// counters by then. (Cancelling at the first stored record once left the summary with
	// no acknowledgement counted yet, 18 ms into the run.)
	adm := newAdmin(t, addr)
	waitFor(t, "records in the bench topic", func() (bool, string) {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(c, "cairn-bench")
		if err != nil {
			return false, err.Error()
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n >= 50, strconv.FormatInt(n, 10) + " records"
	})
	cancel()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("cancelled run: %v\n%s", r.err, r.errOut)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(r.out), &m); err != nil {
			t.Fatalf("no JSON summary after cancel: %v\n%s", err, r.out)
		}
		if m["interrupted"] != true || m["records"].(float64) <= 0 {
			t.Errorf("cancelled run summary: %v", m)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("bench produce did not stop after cancel")
	}
}

func TestBenchTCP(t *testing.T) {
	m := benchJSON(t, "tcp", "--duration", "300ms", "--write-size", "64KiB")
	wantNumbers(t, m, []string{"mb_per_s", "duration_s", "bytes"})
	if _, ok := m["p99_ms"]; ok {
		t.Errorf("tcp reports a latency: %v", m)
	}
	if r := runBench(t, "tcp", "--write-size", "0"); r.err == nil {
		t.Error("--write-size 0 accepted")
	}
}
