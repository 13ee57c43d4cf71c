// Command benchfetch measures what fetch sessions (KIP-227) save a consumer of many
// partitions, for docs/benchmarks.md: on one real cairn broker on loopback it creates a
// topic of --partitions partitions, then runs the same workload twice, once with a
// franz-go consumer that uses fetch sessions (its default) and once with one that does not
// (kgo.DisableFetchSessions): for --idle the consumer tails the topic with nothing
// produced, then for --duration a producer offers --rate small records per second spread
// over every partition while the consumer tails it. For each run it reads the broker's
// own counters (Fetch requests, request bytes in, Fetch response bytes, the process's CPU
// seconds) before and after, and prints them per fetch and as ratios of the two runs:
//
//	go run ./test/benchfetch --partitions 1000 --idle 20s --duration 30s --rate 2000
//
// It owns the run's order and figures only; the broker's lifecycle is test/harness's. It
// removes its data folder at the end, and every wait is bounded.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/test/harness"
)

type options struct {
	binary         string
	partitions     int
	rate           int
	idle, duration time.Duration
}

// counters are the broker's figures a run is measured by.
type counters struct {
	Fetches       float64 `json:"fetches"`
	RequestBytes  float64 `json:"request_bytes"` // every API's; Fetch's dominate
	FetchRespByte float64 `json:"fetch_response_bytes"`
	CPUSeconds    float64 `json:"cpu_seconds"`
}

func (c counters) minus(o counters) counters {
	return counters{c.Fetches - o.Fetches, c.RequestBytes - o.RequestBytes, c.FetchRespByte - o.FetchRespByte, c.CPUSeconds - o.CPUSeconds}
}

type phase struct {
	Sessions bool     `json:"sessions"`
	Phase    string   `json:"phase"` // idle or tailing
	Seconds  float64  `json:"seconds"`
	Records  int64    `json:"records_consumed"`
	Counters counters `json:"broker"`
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "cairn binary (default: build ./cmd/cairn)")
	flag.IntVar(&o.partitions, "partitions", 1000, "partitions of the topic the consumer reads")
	flag.IntVar(&o.rate, "rate", 2000, "records per second produced while tailing (100 bytes each, spread over every partition)")
	flag.DurationVar(&o.idle, "idle", 20*time.Second, "how long the consumer tails an idle topic")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long the consumer tails the topic while it is written")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*(o.idle+o.duration)+5*time.Minute)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "benchfetch:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "cairn-benchfetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.binary == "" {
		if o.binary, err = harness.Build(ctx, dir); err != nil {
			return err
		}
	}
	b := harness.New(harness.Options{ID: 1, Binary: o.binary, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "broker.log")})
	if err := b.LaunchOnFreePorts(ctx, nil); err != nil {
		return fmt.Errorf("starting the broker: %w (log %s)", err, harness.TailFile(filepath.Join(dir, "broker.log"), 20))
	}
	defer b.Stop()
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.KafkaAddr))
	if err != nil {
		return err
	}
	defer admin.Close()
	const topic = "fetched"
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, int32(o.partitions), 1, nil, topic); err != nil {
		return fmt.Errorf("creating the topic: %w", err)
	}
	var phases []phase
	for _, sessions := range []bool{true, false} {
		ps, err := measure(ctx, b, topic, o, sessions)
		if err != nil {
			return err
		}
		phases = append(phases, ps...)
	}
	report(phases)
	return json.NewEncoder(os.Stdout).Encode(phases)
}

// measure runs one consumer through the idle and the tailing phases.
func measure(ctx context.Context, b *harness.Broker, topic string, o options, sessions bool) ([]phase, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(b.KafkaAddr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd())}
	if !sessions {
		opts = append(opts, kgo.DisableFetchSessions())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var consumed atomic.Int64
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			fs := cl.PollFetches(pollCtx)
			consumed.Add(int64(fs.NumRecords()))
		}
	}()
	// Measure once the consumer fetches every partition: its first fetches wait for the
	// topic's leaders and its start offsets.
	settled := time.Now().Add(90 * time.Second)
	for {
		c, err := scrape(ctx, b.AdminAddr)
		if err != nil {
			return nil, err
		}
		if c.Fetches > 0 && c.FetchRespByte > 0 {
			break
		}
		if time.Now().After(settled) {
			return nil, errors.New("the consumer did not fetch within 90 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)

	var out []phase
	for _, ph := range []struct {
		name string
		d    time.Duration
		rate int
	}{{"idle", o.idle, 0}, {"tailing", o.duration, o.rate}} {
		before, err := scrape(ctx, b.AdminAddr)
		if err != nil {
			return nil, err
		}
		n0, start := consumed.Load(), time.Now()
		if err := produceFor(ctx, b.KafkaAddr, topic, ph.d, ph.rate); err != nil {
			return nil, err
		}
		after, err := scrape(ctx, b.AdminAddr)
		if err != nil {
			return nil, err
		}
		out = append(out, phase{Sessions: sessions, Phase: ph.name, Seconds: time.Since(start).Seconds(),
			Records: consumed.Load() - n0, Counters: after.minus(before)})
	}
	stopPoll()
	<-polled
	return out, nil
}

// produceFor offers rate records per second (none at 0) for d, round robin over the
// partitions, and returns when d has passed.
func produceFor(ctx context.Context, addr, topic string, d time.Duration, rate int) error {
	if rate <= 0 {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	value := []byte(strings.Repeat("v", 100))
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(d)
	perTick := max(1, rate/100)
	var failed atomic.Pointer[error]
	for time.Now().Before(end) {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		for range perTick {
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if e := failed.Load(); e != nil {
		return *e
	}
	return nil
}

// scrape reads the counters from the broker's /metrics.
func scrape(ctx context.Context, adminAddr string) (counters, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+adminAddr+"/metrics", nil)
	if err != nil {
		return counters{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return counters{}, err
	}
	defer resp.Body.Close()
	var c counters
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case `cairn_kafka_requests_total{api="Fetch"}`:
			c.Fetches, found = v, found+1
		case "cairn_kafka_bytes_in_total":
			c.RequestBytes, found = v, found+1
		case `cairn_kafka_response_bytes_total{api="Fetch"}`:
			c.FetchRespByte, found = v, found+1
		case "process_cpu_seconds_total":
			c.CPUSeconds, found = v, found+1
		}
	}
	if found < 2 { // the Fetch counters appear with the first fetch; the others are always there
		return c, errors.New("the broker's /metrics lacks the counters measured")
	}
	return c, sc.Err()
}

func report(phases []phase) {
	fmt.Fprintf(os.Stderr, "%-9s %-8s %8s %10s %12s %13s %14s %10s\n", "sessions", "phase", "fetches", "records", "req B/fetch", "resp B/fetch", "CPU ms/fetch", "CPU s")
	by := map[string]phase{}
	for _, p := range phases {
		f := max(p.Counters.Fetches, 1)
		fmt.Fprintf(os.Stderr, "%-9v %-8s %8.0f %10d %12.0f %13.0f %14.3f %10.2f\n", p.Sessions, p.Phase, p.Counters.Fetches, p.Records,
			p.Counters.RequestBytes/f, p.Counters.FetchRespByte/f, 1000*p.Counters.CPUSeconds/f, p.Counters.CPUSeconds)
		by[fmt.Sprint(p.Sessions, p.Phase)] = p
	}
	for _, ph := range []string{"idle", "tailing"} {
		on, off := by["true"+ph], by["false"+ph]
		ratio := func(a, b float64) float64 {
			if b == 0 {
				return 0
			}
			return a / b
		}
		fmt.Fprintf(os.Stderr, "%s: with sessions / without: request bytes %.3f, response bytes %.3f, broker CPU %.3f (per record consumed: %.3f)\n", ph,
			ratio(on.Counters.RequestBytes, off.Counters.RequestBytes), ratio(on.Counters.FetchRespByte, off.Counters.FetchRespByte),
			ratio(on.Counters.CPUSeconds, off.Counters.CPUSeconds),
			ratio(on.Counters.CPUSeconds/float64(max(on.Records, 1)), off.Counters.CPUSeconds/float64(max(off.Records, 1))))
	}
}
