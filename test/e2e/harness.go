// Package e2e holds Cairn's end-to-end tests: they drive real `cairn` processes with real
// Kafka clients (franz-go, sarama, kcat, confluent-kafka-python, kafka-python and the cairn
// CLI) and assert what a user of the broker can observe.
//
// This file is the suite's side of the harness: it builds the binary once and gives each
// test brokers (test/harness runs their processes) on free loopback ports with their own
// data directories, which fail the test where the harness reports an error, plus Kafka
// clients and admin API reads bound to the test. Every test starts its own broker; brokers
// are cheap.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/test/harness"
)

const (
	// pythonHelper is the interpreter that has the Debian Kafka modules; the python3 on
	// PATH may be a separate install without them.
	pythonHelper = "/usr/bin/python3"
	installHint  = "run scripts/install-test-deps.sh to install the end-to-end test dependencies"
)

var (
	// cairnBin is the broker binary built once by runMain.
	cairnBin string
	// clientsDir holds the Python helper scripts.
	clientsDir string
)

// runMain builds the cairn binary, runs the tests and removes the binary. TestMain calls it.
func runMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	clientsDir = filepath.Join(wd, "clients")
	dir, err := os.MkdirTemp("", "cairn-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if cairnBin, err = harness.Build(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

// BrokerOpts configures startBroker.
type BrokerOpts struct {
	NodeID int
	// OmitNodeID leaves --node-id off the command line, so that the id comes from the
	// environment or a --config file given in Env or Args.
	OmitNodeID bool
	// DataDir, when set, is used instead of a fresh temporary directory.
	DataDir  string
	LogLevel string   // default "info"
	Args     []string // extra `cairn start` flags
	Env      []string // extra environment, KEY=VALUE
	// Addrs, when set, are the Kafka, admin and RPC addresses to use (a cluster's members
	// must know each other's RPC addresses before any starts).
	Addrs *[3]string
	// Listeners are Kafka listeners beside the PLAINTEXT one, each on a free port
	// (Broker.ListenerAddrs); TLS is the PEM material of the TLS ones.
	Listeners []harness.Listener
	TLS       harness.TLSFiles
}

// Broker is one cairn process (and its successors after Restart) with a fixed data
// directory and fixed addresses: the harness's broker, failing the test where the harness
// returns an error.
type Broker struct {
	*harness.Broker
	t    testing.TB
	opts BrokerOpts
}

// startBroker starts a broker on free loopback ports (or on opts.Addrs) with a fresh data
// directory, waits until it reports ready, and registers a cleanup that stops it (SIGTERM,
// expecting exit 0). A start that finds a port taken is tried again, on other free ports or
// on the same opts.Addrs.
func startBroker(t testing.TB, opts BrokerOpts) *Broker {
	t.Helper()
	b := newBroker(t, opts)
	launch := func() error { return b.LaunchOnFreePorts(context.Background(), nil) }
	if opts.Addrs != nil {
		launch = func() error { return b.LaunchOnFixedPorts(context.Background()) }
	}
	if err := launch(); err != nil {
		t.Fatalf("starting broker: %v\nlog tail:\n%s", err, harness.TailFile(b.LogPath, 60))
	}
	t.Cleanup(b.cleanupStop)
	return b
}

// newBroker prepares a broker (log file, data directory, and the addresses of opts.Addrs)
// without starting it.
func newBroker(t testing.TB, opts BrokerOpts) *Broker {
	t.Helper()
	if opts.NodeID == 0 {
		opts.NodeID = 1 // node ids start at 1: raft reserves 0
	}
	logDir, err := os.MkdirTemp("", "cairn-e2e-log-")
	if err != nil {
		t.Fatal(err)
	}
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	b := &Broker{t: t, opts: opts, Broker: harness.New(harness.Options{
		ID: opts.NodeID, OmitNodeID: opts.OmitNodeID, Binary: cairnBin, DataDir: opts.DataDir,
		LogPath: filepath.Join(logDir, "broker.log"), LogLevel: opts.LogLevel, Args: opts.Args, Env: opts.Env,
		Listeners: opts.Listeners, TLS: opts.TLS,
	})}
	if opts.Addrs != nil {
		b.KafkaAddr, b.AdminAddr, b.RPCAddr = opts.Addrs[0], opts.Addrs[1], opts.Addrs[2]
	}
	// Registered first, so it runs last: after the broker stopped, keep the log (and print
	// its tail) only when the test failed.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker %d log kept at %s; last lines:\n%s", opts.NodeID, b.LogPath, harness.TailFile(b.LogPath, 60))
			return
		}
		os.RemoveAll(logDir)
	})
	return b
}

// freeAddr returns a loopback address whose port was free a moment ago (see
// harness.FreeAddr).
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := harness.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Stop sends SIGTERM, waits for the exit and fails the test unless the exit code is 0. A
// broker that does not run (after Kill9, say) has nothing to stop.
func (b *Broker) Stop() {
	b.t.Helper()
	if err := b.Broker.Stop(); err != nil {
		b.t.Fatalf("stopping broker: %v\nlog tail:\n%s", err, harness.TailFile(b.LogPath, 40))
	}
}

func (b *Broker) cleanupStop() {
	if err := b.Broker.Stop(); err != nil {
		b.t.Errorf("stopping broker at the end of the test: %v", err)
	}
}

// Kill9 kills the process with SIGKILL and waits until it is gone.
func (b *Broker) Kill9() {
	b.t.Helper()
	if err := b.Kill(); err != nil {
		b.t.Fatalf("Kill9: %v", err)
	}
}

// Restart stops the broker if it runs (SIGTERM, expecting exit 0; after Kill9 there is
// nothing to stop), then starts it again with the same data directory and addresses and
// waits until it is ready.
func (b *Broker) Restart() {
	b.t.Helper()
	b.Stop()
	if err := b.Launch(context.Background()); err != nil {
		b.t.Fatalf("restarting broker: %v\nlog tail:\n%s", err, harness.TailFile(b.LogPath, 60))
	}
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ctxFor returns a context bounded by d and by the test's end.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// ---- Kafka clients ----

// Client returns a franz-go client seeded with this broker, closed at the end of the test.
func (b *Broker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(b.KafkaAddr),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.RetryTimeout(30 * time.Second),
		kgo.ClientID("cairn-e2e"),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client over a fresh franz-go client.
func (b *Broker) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(b.Client(t))
}

// createTopic creates a topic with replication factor 1 and fails the test on any error.
func createTopic(t testing.TB, adm *kadm.Client, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(ctxFor(t, 15*time.Second), partitions, 1, configs, name)
	if err != nil {
		t.Fatalf("CreateTopics %s: request failed: %v", name, err)
	}
	if resp.Err != nil {
		t.Fatalf("CreateTopics %s: %v (%s)", name, resp.Err, resp.ErrMessage)
	}
}

// endOffsets returns the high watermark of each partition of topic.
func endOffsets(t testing.TB, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	return listed(t, topic, "ListEndOffsets", func(ctx context.Context) (kadm.ListedOffsets, error) {
		return adm.ListEndOffsets(ctx, topic)
	})
}

// startOffsets returns the log start offset of each partition of topic.
func startOffsets(t testing.TB, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	return listed(t, topic, "ListStartOffsets", func(ctx context.Context) (kadm.ListedOffsets, error) {
		return adm.ListStartOffsets(ctx, topic)
	})
}

func listed(t testing.TB, topic, what string, f func(context.Context) (kadm.ListedOffsets, error)) map[int32]int64 {
	t.Helper()
	l, err := f(ctxFor(t, 15*time.Second))
	if err != nil {
		t.Fatalf("%s %s: %v", what, topic, err)
	}
	out := map[int32]int64{}
	for p, o := range l[topic] {
		if o.Err != nil {
			t.Fatalf("%s %s[%d]: %v", what, topic, p, o.Err)
		}
		out[p] = o.Offset
	}
	return out
}

// PartitionStatus is the admin API's view of a partition.
type PartitionStatus = harness.PartitionStatus

// Partition fetches /v1/partitions/{topic}/{partition} from the admin API.
func (b *Broker) Partition(t testing.TB, topic string, partition int32) PartitionStatus {
	t.Helper()
	st, err := b.PartitionStatus(ctxFor(t, 5*time.Second), topic, partition)
	if err != nil {
		t.Fatalf("admin API /v1/partitions/%s/%d: %v", topic, partition, err)
	}
	return st
}

// Metric returns the value of one Prometheus sample from /metrics, matched by its name
// and exact label set as rendered (for example `{partition="0",topic="t"}`); ok is false
// when the sample is absent.
func (b *Broker) Metric(t testing.TB, name, labels string) (v float64, ok bool) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + b.AdminAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	prefix := name + labels + " "
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, prefix) {
			f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, prefix)), 64)
			if err != nil {
				t.Fatalf("/metrics line %q: %v", line, err)
			}
			return f, true
		}
	}
	return 0, false
}

// ---- external commands ----

type cmdResult struct {
	Stdout, Stderr string
	Err            error
}

func (r cmdResult) String() string {
	return fmt.Sprintf("err=%v\nstdout:\n%s\nstderr:\n%s", r.Err, r.Stdout, r.Stderr)
}

// run runs a command with stdin and a time limit and returns its output.
func run(t testing.TB, timeout time.Duration, stdin string, name string, args ...string) cmdResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s did not finish within %v: %w", name, timeout, err)
	}
	return cmdResult{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// requireKcat fails the test when kcat is not installed.
func requireKcat(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not installed: %s", installHint)
	}
	return path
}

// requirePython fails the test when /usr/bin/python3 cannot import module.
func requirePython(t testing.TB, module string) {
	t.Helper()
	if _, err := os.Stat(pythonHelper); err != nil {
		t.Fatalf("%s is missing: %s", pythonHelper, installHint)
	}
	r := run(t, 30*time.Second, "", pythonHelper, "-c", "import "+module)
	if r.Err != nil {
		t.Fatalf("%s cannot import %s (%v: %s): %s", pythonHelper, module, r.Err, strings.TrimSpace(r.Stderr), installHint)
	}
}

// runPython runs a helper script from clients/ and decodes its JSON stdout into out.
func runPython(t testing.TB, timeout time.Duration, out any, script string, args ...string) cmdResult {
	t.Helper()
	r := run(t, timeout, "", pythonHelper, append([]string{filepath.Join(clientsDir, script)}, args...)...)
	if out != nil && strings.TrimSpace(r.Stdout) != "" {
		if err := json.Unmarshal([]byte(r.Stdout), out); err != nil && r.Err == nil {
			r.Err = fmt.Errorf("decoding %s output: %w", script, err)
		}
	}
	return r
}

// lines splits output into non-empty lines.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			out = append(out, l)
		}
	}
	return out
}

var errNotClosed = errors.New("connection still open")
