// Command benchmove measures a partition move on four real cairn brokers on loopback, for
// scripts/bench.sh move and docs/benchmarks.md's "Moves" section:
//
//	go run ./test/benchmove --binary /tmp/cairn --data-dir /tmp/mv --out /tmp/mv-out --size 2GiB
//
// In one run it fills partition 0 of topic "moved" (replicas 1,2,3) with --size bytes,
// measures the disk's fdatasync bandwidth with `cairn bench disk` in the data folder,
// moves the partition to 1,2,4 (broker 4 copies the whole log) while `cairn bench produce`
// offers --rate records per second to topic "load" (8 partitions on brokers 1,2,3), then
// runs the same load for the same time without a move, and measures the disk again. With
// --rate-property NAME (the cluster property bounding a learner's catch-up), where the
// brokers have it, the first move runs with NAME=0 (unbounded), and the partition then
// moves back to 1,2,3 (broker 3 copies the whole log again) with NAME at its default (or
// --rate-bound), under the same load.
//
// It owns the run's order and timing only: the brokers' lifecycle is test/harness's, the
// load and the disk figures are `cairn bench`'s (their JSON goes to --out as they print it),
// and it writes its own figures to --out/move.json. Every wait is bounded, the load runs at
// most --max-move, and it removes --data-dir at the end (also after an error or SIGINT).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-io/cairn/test/harness"
)

type options struct {
	binary, dataDir, logDir, out string
	size                         int64
	rate                         int
	diskDuration, maxMove        time.Duration
	rateProperty, rateBound      string
}

func main() {
	var (
		o    options
		size string
	)
	flag.StringVar(&o.binary, "binary", "", "cairn binary to run (default: build ./cmd/cairn)")
	flag.StringVar(&o.dataDir, "data-dir", "", "folder for the brokers' data, removed at the end (required)")
	flag.StringVar(&o.logDir, "log-dir", "", "folder for the broker logs (default: --out/move-logs)")
	flag.StringVar(&o.out, "out", "", "folder for the JSON results (required)")
	flag.StringVar(&size, "size", "2GiB", "bytes to fill the moved partition with (a count, or with KiB, MiB, GiB)")
	flag.IntVar(&o.rate, "rate", 20000, "records per second (1 KiB each) the load producer offers during and without the move")
	flag.DurationVar(&o.diskDuration, "disk-duration", 15*time.Second, "length of each `cairn bench disk` run")
	flag.DurationVar(&o.maxMove, "max-move", 10*time.Minute, "give up on a move that takes longer")
	flag.StringVar(&o.rateProperty, "rate-property", "", "cluster property bounding a learner's catch-up: the first move runs with it 0, a second at --rate-bound")
	flag.StringVar(&o.rateBound, "rate-bound", "", "the rate property's value for the second move (default: the property's default)")
	flag.Parse()
	var err error
	if o.size, err = parseSize(size); err != nil {
		fatal(err)
	}
	if o.dataDir == "" || o.out == "" {
		fatal(errors.New("--data-dir and --out are required"))
	}
	if o.rate <= 0 || o.diskDuration <= 0 || o.maxMove <= 0 {
		fatal(errors.New("--rate, --disk-duration and --max-move must be positive"))
	}
	if o.logDir == "" {
		o.logDir = filepath.Join(o.out, "move-logs")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = run(ctx, o)
	if rmErr := os.RemoveAll(o.dataDir); rmErr != nil && err == nil {
		err = rmErr
	}
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "benchmove:", err)
	os.Exit(2)
}

// parseSize reads a byte count with an optional binary unit: 2GiB, 256MiB, 4096.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	mult := int64(1)
	num := s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	var n int64
	if _, err := fmt.Sscanf(num, "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != num {
		return 0, fmt.Errorf("--size %q: want a positive byte count such as 2GiB, 256MiB or 4096", s)
	}
	return n * mult, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s benchmove: %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) error {
	for _, d := range []string{o.dataDir, o.out, o.logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if o.binary == "" {
		bin, err := harness.Build(ctx, o.dataDir)
		if err != nil {
			return err
		}
		o.binary = bin
	}
	cl, err := startCluster(ctx, o)
	if err != nil {
		return err
	}
	r := &runner{o: o, cl: cl}
	if o.rateProperty != "" {
		if _, _, err := r.rate(ctx); err != nil {
			logf("no learner catch-up bound to compare (%v): one move, unbounded", err)
			r.o.rateProperty = ""
		}
	}
	err = r.measure(ctx)
	if err == nil && r.o.rateProperty != "" {
		err = r.measureBounded(ctx)
	}
	if err == nil {
		err = r.write()
	}
	if cl.stop(); err == nil && len(cl.stopErrs) > 0 {
		err = errors.Join(cl.stopErrs...)
	}
	return err
}
