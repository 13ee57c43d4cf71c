// Command benchnet runs a cluster of real cairn brokers behind the chaos harness's link
// proxies (test/chaos/faults), with a delay on every inter-broker link, for benchmarks that
// need the distance between racks on one machine (scripts/bench.sh racks):
//
//	go run ./test/benchnet --racks r1,r2,r3 --delay-in 200us --delay-cross 2ms --addr-file /tmp/addrs
//
// Once every broker is ready it prints (and writes to --addr-file) the Kafka bootstrap list
// and the admin addresses, then runs until SIGINT or SIGTERM and stops the brokers. Only
// inter-broker traffic is delayed; clients reach the brokers directly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-io/cairn/test/chaos/faults"
)

// brokerArgs collects repeated --broker-arg flags.
type brokerArgs []string

func (a *brokerArgs) String() string     { return strings.Join(*a, " ") }
func (a *brokerArgs) Set(s string) error { *a = append(*a, s); return nil }

func main() {
	var (
		rackList, pairList, addrFile, binary, dataDir, logDir string
		in, cross                                             time.Duration
		args                                                  brokerArgs
	)
	flag.StringVar(&rackList, "racks", "r1,r2,r3", "comma-separated rack of each broker, broker 1 first")
	flag.DurationVar(&in, "delay-in", 0, "delay of each inter-broker link between two brokers of the same rack")
	flag.DurationVar(&cross, "delay-cross", 0, "delay of each inter-broker link between racks")
	flag.StringVar(&pairList, "delay-pairs", "", "per rack pair delays overriding --delay-cross, both directions, e.g. r1/r2=0.2ms,r1/r3=2ms")
	flag.StringVar(&addrFile, "addr-file", "", "file to write `bootstrap=…` and `admin=…` lines to once the cluster is ready")
	flag.StringVar(&binary, "binary", "", "cairn binary to run (default: build ./cmd/cairn)")
	flag.StringVar(&dataDir, "data-dir", "", "folder for the brokers' data (default: a temporary folder, removed at the end)")
	flag.StringVar(&logDir, "log-dir", "", "folder for the broker logs (default: a new temporary folder, kept)")
	flag.Var(&args, "broker-arg", "an extra `cairn start` flag for every broker (repeat for more)")
	flag.Parse()
	if err := run(rackList, pairList, addrFile, binary, dataDir, logDir, in, cross, args); err != nil {
		fmt.Fprintln(os.Stderr, "benchnet:", err)
		os.Exit(2)
	}
}

func run(rackList, pairList, addrFile, binary, dataDir, logDir string, in, cross time.Duration, args []string) error {
	racks := strings.Split(rackList, ",")
	for i, r := range racks {
		if racks[i] = strings.TrimSpace(r); racks[i] == "" {
			return fmt.Errorf("--racks %q gives broker %d no rack", rackList, i+1)
		}
	}
	if in < 0 || cross < 0 {
		return errors.New("--delay-in and --delay-cross must not be negative")
	}
	pairs, err := parsePairs(pairList)
	if err != nil {
		return err
	}
	rackDelay := faults.RackDelays(racks, in, cross)
	delay := func(from, to int) time.Duration {
		if d, ok := pairs[rackPair(racks[from-1], racks[to-1])]; ok {
			return d
		}
		return rackDelay(from, to)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl, err := faults.Start(ctx, faults.Options{N: len(racks), Racks: racks, LinkDelay: delay,
		Binary: binary, DataDir: dataDir, LogDir: logDir, Args: args})
	if err != nil {
		return err
	}
	var admin []string
	for id := 1; id <= cl.N(); id++ {
		admin = append(admin, cl.Broker(id).AdminAddr)
	}
	lines := fmt.Sprintf("bootstrap=%s\nadmin=%s\n", strings.Join(cl.KafkaAddrs(), ","), strings.Join(admin, ","))
	fmt.Printf("benchnet: racks %v, delay %v in a rack, %v across, pairs %v; logs in %s\n%s", racks, in, cross, pairs, cl.LogDir(), lines)
	if addrFile != "" {
		if err := os.WriteFile(addrFile, []byte(lines), 0o644); err != nil {
			cl.Close()
			return err
		}
	}
	<-ctx.Done()
	return cl.Close()
}

// rackPair names the unordered pair of racks a and b.
func rackPair(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + "/" + b
}

// parsePairs reads --delay-pairs: comma-separated a/b=duration, one per unordered pair.
func parsePairs(list string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	if list == "" {
		return out, nil
	}
	for _, item := range strings.Split(list, ",") {
		pair, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		a, b, ok2 := strings.Cut(pair, "/")
		d, err := time.ParseDuration(value)
		if !ok || !ok2 || a == "" || b == "" || err != nil || d < 0 {
			return nil, fmt.Errorf("--delay-pairs item %q: want rackA/rackB=duration, e.g. r1/r2=0.2ms", item)
		}
		out[rackPair(a, b)] = d
	}
	return out, nil
}
