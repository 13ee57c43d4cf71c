// Package harness runs a cluster of real `cairn` processes on loopback and injects faults
// into it: kill -9, SIGSTOP/SIGCONT, graceful restarts, power loss (kill -9 under
// --simulate-power-loss) and network partitions between any two brokers, one direction at
// a time. It is the fault-injection layer of issue 5; a workload and a checker sit on top.
//
// Brokers are numbered 1..N (their node ids). Each runs with its own data folder, its own
// rack (rack-i) and, in front of its rpc listener, a proxy the harness controls: the broker
// advertises the proxy's address (--advertised-rpc-addr) and every broker's seeds are the
// proxy addresses, so all inter-broker traffic runs through the proxies. Inter-broker
// connections carry traffic one way (the dialler's hello names the sending node), so the
// proxy of broker `to` cutting node `from` cuts exactly the from → to direction. Kafka and
// admin traffic is not proxied.
//
// Every wait is bounded; Close stops every process, and on Linux the kernel kills the
// brokers if the harness process dies first (Pdeathsig).
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Options configures Start. Zero values take the defaults noted.
type Options struct {
	N int // number of brokers (node ids 1..N); required
	// Binary is the cairn binary to run; "" builds github.com/cairn-io/cairn/cmd/cairn
	// (the working directory must be inside the module) into a folder Close removes.
	Binary string
	// LogDir receives one log per broker (broker-<id>.log, every start appended) and the
	// harness's own event log (harness.log). The harness never removes it; "" makes a new
	// folder under the system's temporary folder (see Cluster.LogDir).
	LogDir string
	// DataDir holds the brokers' data folders (node-<id>); "" makes a temporary folder that
	// Close removes.
	DataDir string
	// SimulatePowerLoss starts every broker with --simulate-power-loss; PowerLoss needs it.
	SimulatePowerLoss bool
	LogLevel          string   // broker --log-level (default "info")
	Args              []string // extra `cairn start` flags for every broker
	// ReadyTimeout bounds each wait for a broker's readiness (default 30 s); StopTimeout
	// bounds each wait for an exit after SIGTERM (default 30 s), after which the broker is
	// killed and the stop reported as failed.
	ReadyTimeout, StopTimeout time.Duration
	// Logf, when set, also receives every harness event (faults, starts, stops).
	Logf func(format string, args ...any)
}

// Broker is one broker's fixed identity: its addresses and folders stay the same across
// restarts.
type Broker struct {
	ID                int
	KafkaAddr         string // what clients dial
	AdminAddr         string // admin HTTP API
	RPCAddr           string // the broker's own rpc listener
	AdvertisedRPCAddr string // its proxy: what the other brokers dial
	DataDir           string
	LogPath           string

	mu     sync.Mutex
	proc   *process
	starts int
}

type process struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed once reaped
	err     error         // Wait's result, valid after done
	killed  bool          // ended on purpose by SIGKILL
	stopped bool          // SIGTERM sent by the harness
	paused  bool
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Cluster is a running set of brokers and their proxies.
type Cluster struct {
	opts    Options
	bin     string
	brokers []*Broker
	proxies []*proxy
	seeds   string
	cleanup []string // folders Close removes

	evMu   sync.Mutex
	events *os.File

	closeOnce sync.Once
	closeErr  error
}

// Build compiles the cairn binary into dir and returns its path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "cairn")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/cairn-io/cairn/cmd/cairn")
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cairn: %v\n%s", err, out)
	}
	return bin, nil
}

// Start builds the binary if needed, starts opts.N brokers together (founders wait for
// every seed) and returns once every broker is ready and lists every broker in its
// metadata, or ctx ends. On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.N < 1 {
		return nil, errors.New("harness: Options.N must be at least 1")
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 30 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 30 * time.Second
	}
	c := &Cluster{opts: opts}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.opts.LogDir == "" {
		if c.opts.LogDir, err = os.MkdirTemp("", "cairn-chaos-logs-"); err != nil {
			return nil, err
		}
	} else if err = os.MkdirAll(c.opts.LogDir, 0o755); err != nil {
		return nil, err
	}
	if c.events, err = os.OpenFile(filepath.Join(c.opts.LogDir, "harness.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	if c.opts.DataDir == "" {
		if c.opts.DataDir, err = os.MkdirTemp("", "cairn-chaos-data-"); err != nil {
			return nil, err
		}
		c.cleanup = append(c.cleanup, c.opts.DataDir)
	}
	c.bin = opts.Binary
	if c.bin == "" {
		dir, err := os.MkdirTemp("", "cairn-chaos-bin-")
		if err != nil {
			return nil, err
		}
		c.cleanup = append(c.cleanup, dir)
		if c.bin, err = Build(ctx, dir); err != nil {
			return nil, err
		}
	}

	var seeds []string
	for id := 1; id <= opts.N; id++ {
		p, err := newProxy(int32(id), c.logf)
		if err != nil {
			return nil, err
		}
		c.proxies = append(c.proxies, p)
		seeds = append(seeds, p.addr())
		b := &Broker{ID: id, AdvertisedRPCAddr: p.addr(),
			DataDir: filepath.Join(c.opts.DataDir, fmt.Sprintf("node-%d", id)),
			LogPath: filepath.Join(c.opts.LogDir, fmt.Sprintf("broker-%d.log", id))}
		if err := os.MkdirAll(b.DataDir, 0o755); err != nil {
			return nil, err
		}
		c.brokers = append(c.brokers, b)
	}
	c.seeds = strings.Join(seeds, ",")

	errs := make([]error, opts.N)
	var wg sync.WaitGroup
	for i, b := range c.brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The proxies are the seeds, so a broker whose port was taken between the probe
			// and its bind can move to other ports without the others noticing.
			for attempt := 0; ; attempt++ {
				b.KafkaAddr, b.AdminAddr, b.RPCAddr = freeAddr(), freeAddr(), freeAddr()
				c.proxies[i].setTarget(b.RPCAddr)
				errs[i] = c.launch(ctx, b)
				if errs[i] == nil || attempt == 2 || !strings.Contains(TailFile(b.LogPath, 20), "address already in use") {
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, e := range errs {
		if e != nil {
			return nil, fmt.Errorf("starting broker %d: %w\nlog tail:\n%s", i+1, e, TailFile(c.brokers[i].LogPath, 40))
		}
	}
	if err := c.WaitFormed(ctx); err != nil {
		return nil, err
	}
	c.logf("cluster of %d formed; seeds %s", opts.N, c.seeds)
	return c, nil
}

// freeAddr returns a loopback address whose port was free a moment ago, from below
// Linux's ephemeral range so that no outgoing connection takes it meanwhile.
func freeAddr() string {
	for range 200 {
		port := 10000 + rand.IntN(22000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	return "127.0.0.1:1" // the broker's bind fails and says so
}

func (c *Cluster) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.evMu.Lock()
	if c.events != nil {
		fmt.Fprintf(c.events, "%s %s\n", time.Now().Format("15:04:05.000000"), msg)
	}
	c.evMu.Unlock()
	if c.opts.Logf != nil {
		c.opts.Logf("harness: %s", msg)
	}
}

// N returns the number of brokers.
func (c *Cluster) N() int { return len(c.brokers) }

// LogDir returns the folder holding the broker logs and harness.log.
func (c *Cluster) LogDir() string { return c.opts.LogDir }

// Broker returns broker id (1..N). It panics on an id out of range.
func (c *Cluster) Broker(id int) *Broker { return c.brokers[id-1] }

// KafkaAddrs returns every broker's Kafka address, in id order.
func (c *Cluster) KafkaAddrs() []string {
	out := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		out[i] = b.KafkaAddr
	}
	return out
}

// Client returns a franz-go client seeded with every broker; the caller closes it.
func (c *Cluster) Client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(c.KafkaAddrs()...), kgo.MetadataMinAge(100 * time.Millisecond), kgo.ClientID("cairn-chaos")}
	return kgo.NewClient(append(base, opts...)...)
}

// launch starts broker b's process and waits until it is ready. On failure the process is
// killed and reaped.
func (c *Cluster) launch(ctx context.Context, b *Broker) error {
	b.mu.Lock()
	if b.proc != nil && !b.proc.exited() {
		b.mu.Unlock()
		return fmt.Errorf("broker %d is already running (pid %d)", b.ID, b.proc.cmd.Process.Pid)
	}
	b.starts++
	logf, err := os.OpenFile(b.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	fmt.Fprintf(logf, "=== harness: start #%d of node %d (kafka %s, admin %s, rpc %s, advertised rpc %s) at %s ===\n",
		b.starts, b.ID, b.KafkaAddr, b.AdminAddr, b.RPCAddr, b.AdvertisedRPCAddr, time.Now().Format(time.RFC3339Nano))
	args := []string{"start",
		"--node-id", strconv.Itoa(b.ID),
		"--data-dir", b.DataDir,
		"--kafka-addr", b.KafkaAddr,
		"--admin-addr", b.AdminAddr,
		"--rpc-addr", b.RPCAddr,
		"--advertised-rpc-addr", b.AdvertisedRPCAddr,
		"--seeds", c.seeds,
		"--rack", fmt.Sprintf("rack-%d", b.ID),
		"--log-level", c.opts.LogLevel,
	}
	if c.opts.SimulatePowerLoss {
		args = append(args, "--simulate-power-loss")
	}
	args = append(args, c.opts.Args...)
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		b.mu.Unlock()
		return err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	b.proc = p
	n := b.starts
	b.mu.Unlock()
	c.logf("broker %d: start #%d, pid %d", b.ID, n, cmd.Process.Pid)
	if err := c.waitReady(ctx, b, p); err != nil {
		b.mu.Lock()
		p.killed = true
		b.mu.Unlock()
		p.cmd.Process.Kill()
		<-p.done
		return err
	}
	c.logf("broker %d: ready", b.ID)
	return nil
}

// waitReady polls /v1/status/ready until it answers 200, the process exits, ctx ends or
// ReadyTimeout passes.
func (c *Cluster) waitReady(ctx context.Context, b *Broker, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	url := "http://" + b.AdminAddr + "/v1/status/ready"
	for {
		if p.exited() {
			return fmt.Errorf("broker %d exited before it was ready: %v", b.ID, p.err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := hc.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			return fmt.Errorf("broker %d not ready within %v: %w", b.ID, c.opts.ReadyTimeout, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitFormed waits until every running broker lists all N brokers in its metadata.
func (c *Cluster) WaitFormed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	for _, b := range c.brokers {
		if !b.Running() {
			continue
		}
		var last error
		for {
			// A fresh client each time: its first request goes to its seed, so the answer
			// is b's own view (a reused client may ask any broker it has learned of).
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.KafkaAddr), kgo.ClientID("cairn-chaos-harness"))
			if err != nil {
				return err
			}
			md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
			cl.Close()
			if err == nil && len(md.Brokers) == len(c.brokers) {
				break
			}
			if err != nil {
				last = err
			} else {
				last = fmt.Errorf("lists %d brokers", len(md.Brokers))
			}
			select {
			case <-ctx.Done():
				// Every broker's own controller view says which replica lags, or which
				// liveness verdict is missing.
				return fmt.Errorf("broker %d does not list all %d brokers: %v; views:\n%s", b.ID, len(c.brokers), last, c.clusterViews())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// clusterViews returns each running broker's /v1/cluster answer, one line per broker.
func (c *Cluster) clusterViews() string {
	var sb strings.Builder
	hc := &http.Client{Timeout: 2 * time.Second}
	for _, b := range c.brokers {
		if !b.Running() {
			fmt.Fprintf(&sb, "broker %d: not running\n", b.ID)
			continue
		}
		resp, err := hc.Get("http://" + b.AdminAddr + "/v1/cluster")
		if err != nil {
			fmt.Fprintf(&sb, "broker %d: %v\n", b.ID, err)
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&sb, "broker %d: %s\n", b.ID, strings.TrimSpace(string(raw)))
	}
	return sb.String()
}

func (c *Cluster) broker(id int) (*Broker, error) {
	if id < 1 || id > len(c.brokers) {
		return nil, fmt.Errorf("harness: no broker %d (brokers are 1..%d)", id, len(c.brokers))
	}
	return c.brokers[id-1], nil
}

// running returns broker id's live process, or an error.
func (c *Cluster) running(id int) (*Broker, *process, error) {
	b, err := c.broker(id)
	if err != nil {
		return nil, nil, err
	}
	b.mu.Lock()
	p := b.proc
	b.mu.Unlock()
	if p == nil || p.exited() {
		return b, nil, fmt.Errorf("broker %d is not running", id)
	}
	return b, p, nil
}

// Running reports whether the broker's process is alive (paused counts as alive).
func (b *Broker) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proc != nil && !b.proc.exited()
}

// PID returns the broker's current process id, 0 when none runs.
func (b *Broker) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil || b.proc.exited() {
		return 0
	}
	return b.proc.cmd.Process.Pid
}

// Kill9 kills broker id with SIGKILL (paused or not) and waits until it is reaped.
func (c *Cluster) Kill9(id int) error {
	b, p, err := c.running(id)
	if err != nil {
		return err
	}
	c.logf("broker %d: kill -9 (pid %d)", id, p.cmd.Process.Pid)
	return c.kill(b, p)
}

func (c *Cluster) kill(b *Broker, p *process) error {
	b.mu.Lock()
	p.killed = true
	b.mu.Unlock()
	p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("broker %d: pid %d not reaped 10 s after SIGKILL", b.ID, p.cmd.Process.Pid)
	}
}

// Pause stops broker id with SIGSTOP: its sockets stay open, it answers nothing.
func (c *Cluster) Pause(id int) error {
	b, p, err := c.running(id)
	if err != nil {
		return err
	}
	c.logf("broker %d: SIGSTOP", id)
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	b.mu.Lock()
	p.paused = true
	b.mu.Unlock()
	return nil
}

// Resume continues a paused broker with SIGCONT.
func (c *Cluster) Resume(id int) error {
	b, p, err := c.running(id)
	if err != nil {
		return err
	}
	c.logf("broker %d: SIGCONT", id)
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	b.mu.Lock()
	p.paused = false
	b.mu.Unlock()
	return nil
}

// Stop stops broker id gracefully: SIGTERM (and SIGCONT if paused), then waits up to
// StopTimeout for exit code 0. Past the timeout the broker is killed; either way a stop
// that does not end in exit code 0 is an error. A broker that is not running is an error.
func (c *Cluster) Stop(id int) error {
	b, p, err := c.running(id)
	if err != nil {
		return err
	}
	c.logf("broker %d: SIGTERM", id)
	return c.stop(b, p)
}

func (c *Cluster) stop(b *Broker, p *process) error {
	b.mu.Lock()
	p.stopped = true
	paused := p.paused
	p.paused = false
	b.mu.Unlock()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !p.exited() {
		return err
	}
	if paused {
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-p.done:
	case <-time.After(c.opts.StopTimeout):
		c.kill(b, p)
		return fmt.Errorf("broker %d did not exit within %v of SIGTERM (killed)", b.ID, c.opts.StopTimeout)
	}
	if p.err != nil {
		return fmt.Errorf("broker %d exited with %v after SIGTERM, want exit code 0", b.ID, p.err)
	}
	return nil
}

// Start starts broker id again (after Kill9 or Stop) and waits until it is ready.
func (c *Cluster) Start(ctx context.Context, id int) error {
	b, err := c.broker(id)
	if err != nil {
		return err
	}
	return c.launch(ctx, b)
}

// Restart stops broker id gracefully (see Stop) and starts it again.
func (c *Cluster) Restart(ctx context.Context, id int) error {
	if err := c.Stop(id); err != nil {
		return err
	}
	return c.Start(ctx, id)
}

// PowerLoss cuts the power of the given brokers (kill -9 of each, one after another with
// no pause, under --simulate-power-loss: what they had not fsynced is gone), then starts
// them all again together and waits until each is ready. With no ids, every broker loses
// power.
func (c *Cluster) PowerLoss(ctx context.Context, ids ...int) error {
	if !c.opts.SimulatePowerLoss {
		return errors.New("harness: PowerLoss needs Options.SimulatePowerLoss")
	}
	if len(ids) == 0 {
		for id := 1; id <= len(c.brokers); id++ {
			ids = append(ids, id)
		}
	}
	type victim struct {
		b *Broker
		p *process
	}
	var vs []victim
	for _, id := range ids {
		b, p, err := c.running(id)
		if err != nil {
			return err
		}
		vs = append(vs, victim{b, p})
	}
	c.logf("power loss of brokers %v", ids)
	for _, v := range vs {
		v.b.mu.Lock()
		v.p.killed = true
		v.b.mu.Unlock()
		v.p.cmd.Process.Signal(syscall.SIGKILL)
	}
	for _, v := range vs {
		if err := c.kill(v.b, v.p); err != nil {
			return err
		}
	}
	errs := make([]error, len(vs))
	var wg sync.WaitGroup
	for i, v := range vs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.launch(ctx, v.b)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Cut blocks inter-broker traffic from broker from to broker to: new connections are
// refused, open ones are closed. The other direction is untouched.
func (c *Cluster) Cut(from, to int) error {
	if _, err := c.broker(from); err != nil {
		return err
	}
	if _, err := c.broker(to); err != nil {
		return err
	}
	c.logf("cut %d -> %d", from, to)
	c.proxies[to-1].cut(int32(from))
	return nil
}

// Heal lets traffic from broker from to broker to through again.
func (c *Cluster) Heal(from, to int) error {
	if _, err := c.broker(from); err != nil {
		return err
	}
	if _, err := c.broker(to); err != nil {
		return err
	}
	c.logf("heal %d -> %d", from, to)
	c.proxies[to-1].heal(int32(from))
	return nil
}

// IsCut reports whether traffic from broker from to broker to is cut.
func (c *Cluster) IsCut(from, to int) bool {
	if from < 1 || from > len(c.brokers) || to < 1 || to > len(c.brokers) {
		return false
	}
	return c.proxies[to-1].isCut(int32(from))
}

// Partition cuts both directions between brokers a and b.
func (c *Cluster) Partition(a, b int) error {
	return errors.Join(c.Cut(a, b), c.Cut(b, a))
}

// Isolate cuts broker id from every other broker, both directions.
func (c *Cluster) Isolate(id int) error {
	var errs []error
	for o := 1; o <= len(c.brokers); o++ {
		if o != id {
			errs = append(errs, c.Partition(id, o))
		}
	}
	return errors.Join(errs...)
}

// HealAll heals every cut.
func (c *Cluster) HealAll() {
	c.logf("heal all")
	for _, p := range c.proxies {
		p.healAll()
	}
}

// ProxyStats returns what broker id's proxy did so far.
func (c *Cluster) ProxyStats(id int) ProxyStats { return c.proxies[id-1].stats() }

// ErrNoReplica is returned by Partition when the broker has no replica of the partition.
var ErrNoReplica = errors.New("harness: no replica on that broker")

// PartitionStatus is a broker's admin view of one partition (GET /v1/partitions/{t}/{p}).
type PartitionStatus struct {
	Leader             int32   `json:"leader"`
	LeaderEpoch        int32   `json:"leader_epoch"`
	IsLeader           bool    `json:"is_leader"`
	Replicas           []int32 `json:"replicas"`
	ISR                []int32 `json:"isr"`
	LogStart           int64   `json:"log_start_offset"`
	LogEnd             int64   `json:"log_end_offset"`
	Flushed            int64   `json:"flushed_offset"`
	MajorityReplicated int64   `json:"majority_replicated_offset"`
	Committed          int64   `json:"committed_offset"`
	LastVisible        int64   `json:"last_visible_offset"`
}

// PartitionStatus asks broker id's admin API for its view of topic/partition, within 2 s.
func (c *Cluster) PartitionStatus(ctx context.Context, id int, topic string, partition int32) (PartitionStatus, error) {
	var st PartitionStatus
	b, err := c.broker(id)
	if err != nil {
		return st, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/v1/partitions/%s/%d", b.AdminAddr, topic, partition), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return st, ErrNoReplica
	case resp.StatusCode != http.StatusOK:
		return st, fmt.Errorf("broker %d: /v1/partitions/%s/%d: HTTP %d: %s", id, topic, partition, resp.StatusCode, raw)
	}
	return st, json.Unmarshal(raw, &st)
}

// Close stops every broker (SIGCONT if paused, SIGTERM, then SIGKILL past StopTimeout),
// closes the proxies and removes the folders the harness made (never LogDir). It reports
// brokers that did not stop with exit code 0 and brokers that had died on their own. It
// is safe to call more than once.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, b := range c.brokers {
			b.mu.Lock()
			p := b.proc
			b.mu.Unlock()
			if p == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if p.exited() {
					b.mu.Lock()
					expected := p.killed || p.stopped
					b.mu.Unlock()
					if !expected {
						err = fmt.Errorf("broker %d had exited on its own: %v", b.ID, p.err)
					}
				} else {
					err = c.stop(b, p)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for _, p := range c.proxies {
			p.close()
		}
		for _, d := range c.cleanup {
			os.RemoveAll(d)
		}
		c.logf("closed")
		c.evMu.Lock()
		if c.events != nil {
			c.events.Close()
			c.events = nil
		}
		c.evMu.Unlock()
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// TailFile returns the last n lines of a file (a broker log, say).
func TailFile(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
