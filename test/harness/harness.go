// Package harness runs real `cairn` broker processes for the multi-process suites
// (test/e2e and test/chaos) and for `cairn lab` (internal/lab), which runs its own cluster
// of the binary it is part of. It owns a broker's process lifecycle and nothing else: it builds
// the binary, picks free loopback ports, launches a broker with its own data directory and
// log, waits until the broker reports ready, stops it gracefully (SIGTERM, exit code 0
// required), kills it (SIGKILL), pauses and resumes it (SIGSTOP, SIGCONT), starts it again
// on the same addresses and folders, and reads the admin API's views a suite needs to
// decide that a cluster has formed.
//
// It must not know what a suite does with the brokers: no testing.T (callers decide whether
// an error fails a test or ends a session), no Kafka workload, no fault schedule, no network
// cuts (test/chaos/faults layers those on top), and no assertion about the data. Every wait
// is bounded, and on Linux the kernel kills a broker whose harness process dies first.
//
// One rule holds for every broker: its process ends only because the harness ended it. A
// process that exits on its own, even with exit code 0, is reported by the next Stop.
package harness

import (
	"context"
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
)

// Default bounds of the waits; Options overrides them per broker.
const (
	DefaultReadyTimeout = 30 * time.Second
	DefaultStopTimeout  = 30 * time.Second
	// reapTimeout bounds the wait for the kernel to reap a SIGKILLed process.
	reapTimeout = 10 * time.Second
	// portAttempts is how many starts a launch makes in all while each finds a port already
	// in use (other free ports each time, or the same fixed ones).
	portAttempts = 3
)

// Build compiles the cairn binary into dir and returns its path. The working directory
// must be inside the module.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "cairn")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/cairn-io/cairn/cmd/cairn")
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cairn: %v\n%s", err, out)
	}
	return bin, nil
}

// ClusterAddrs picks free loopback addresses for n brokers that must know each other's
// rpc address before any starts: each broker's Kafka, admin and rpc address, and the rpc
// addresses as the seeds.
func ClusterAddrs(n int) (addrs [][3]string, seeds []string, err error) {
	addrs = make([][3]string, n)
	for i := range addrs {
		for k := range addrs[i] {
			if addrs[i][k], err = FreeAddr(); err != nil {
				return nil, nil, err
			}
		}
		seeds = append(seeds, addrs[i][2])
	}
	return addrs, seeds, nil
}

// FreeAddr returns a loopback address whose port was free a moment ago and that no other
// process using this harness has claimed. Ports come from below Linux's ephemeral range
// (32768 and up): a port the kernel hands out for ":0" is also what the many outgoing
// connections of a parallel run get, and one of them could take it before the broker binds
// it. The claim is a lock file held until this process exits, because a broker keeps its
// ports across restarts: while it is down its ports are free, and another test process
// (a parallel package, a chaos session) picking one of them would keep it from ever
// starting again.
func FreeAddr() (string, error) {
	for range 200 {
		port := 10000 + rand.IntN(22000)
		if !claimPort(port) {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr, nil
	}
	return "", errors.New("harness: no free loopback port found")
}

// claimedPorts holds the lock files of the ports this process claimed, open (and so
// locked) until it exits.
var claimedPorts struct {
	sync.Mutex
	files []*os.File
}

// claimPort takes port's lock file in a folder shared by every process on the machine,
// or reports that another process holds it. Where the folder cannot be used, claims are
// not checked (as before they existed).
func claimPort(port int) bool {
	dir := filepath.Join(os.TempDir(), "cairn-harness-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	claimedPorts.Lock()
	claimedPorts.files = append(claimedPorts.files, f)
	claimedPorts.Unlock()
	return true
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

// Options describes one broker. Binary, DataDir and LogPath are required.
type Options struct {
	ID int // node id, 1 and up (raft reserves 0)
	// OmitNodeID leaves --node-id off the command line, so that the id comes from the
	// environment or a --config file given in Env or Args.
	OmitNodeID bool
	Binary     string
	DataDir    string
	// LogPath receives the broker's stdout and stderr; every start appends to it after a
	// line that names the start and its command line.
	LogPath  string
	LogLevel string   // --log-level (default "info")
	Args     []string // further `cairn start` flags
	Env      []string // further environment, KEY=VALUE
	// ReadyTimeout bounds each wait for readiness; StopTimeout bounds each wait for an exit
	// after SIGTERM, after which the broker is killed and the stop reported as failed.
	ReadyTimeout, StopTimeout time.Duration
	// Logf, when set, receives every lifecycle event (starts, signals, readiness).
	Logf func(format string, args ...any)
	// Listeners, when set, are Kafka listeners beside the PLAINTEXT one on KafkaAddr; each
	// binds a free loopback port (Broker.ListenerAddrs), and the broker is started with
	// --listeners instead of --kafka-addr.
	Listeners []Listener
	// TLS is the PEM material and client authentication of the TLS listeners.
	TLS TLSFiles
}

// Listener is one further Kafka listener: its name and security protocol.
type Listener struct {
	Name, Protocol string // e.g. "SSL", "SSL"
}

// TLSFiles are the ssl.* start flags of a broker with TLS listeners.
type TLSFiles struct {
	Cert, Key, CA string
	ClientAuth    string // none, requested, required; "" leaves the flag off
	// PrincipalRules is ssl.principal.mapping.rules; "" leaves the flag off.
	PrincipalRules string
}

// Broker is one broker's fixed identity and its current process. The addresses and folders
// stay the same across restarts; set the addresses before the first Launch (or let
// LaunchOnFreePorts pick them).
type Broker struct {
	ID        int
	KafkaAddr string // what clients dial
	AdminAddr string // admin HTTP API
	RPCAddr   string // the broker's own rpc listener
	// ListenerAddrs are the addresses of Options.Listeners, by name.
	ListenerAddrs map[string]string
	DataDir       string
	LogPath       string

	opts Options

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
	logFrom int64 // where its part of the broker's log begins
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// New prepares a broker without starting it.
func New(opts Options) *Broker {
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	b := &Broker{ID: opts.ID, DataDir: opts.DataDir, LogPath: opts.LogPath, opts: opts}
	// A port that cannot be probed now is picked again at LaunchOnFreePorts; a broker on
	// fixed ports then fails its start with the empty address, which says why.
	_ = b.pickListenerAddrs()
	return b
}

// pickListenerAddrs gives each further listener a free loopback port.
func (b *Broker) pickListenerAddrs() error {
	if len(b.opts.Listeners) == 0 {
		return nil
	}
	b.ListenerAddrs = map[string]string{}
	for _, l := range b.opts.Listeners {
		addr, err := FreeAddr()
		if err != nil {
			return err
		}
		b.ListenerAddrs[l.Name] = addr
	}
	return nil
}

func (b *Broker) logf(format string, args ...any) {
	if b.opts.Logf != nil {
		b.opts.Logf("broker %d: "+format, append([]any{b.ID}, args...)...)
	}
}

// LaunchOnFreePorts picks free Kafka, admin and rpc addresses, calls picked (which may
// tell others the new addresses) and launches the broker. When another process took one
// of the ports between the probe and the broker's bind, it tries again with other ports.
// Only a broker whose peers do not dial its own addresses can move this way.
func (b *Broker) LaunchOnFreePorts(ctx context.Context, picked func()) error {
	return b.launchUntilPortsFree(ctx, func() error {
		var addrs [3]string
		for i := range addrs {
			var err error
			if addrs[i], err = FreeAddr(); err != nil {
				return err
			}
		}
		b.KafkaAddr, b.AdminAddr, b.RPCAddr = addrs[0], addrs[1], addrs[2]
		if err := b.pickListenerAddrs(); err != nil {
			return err
		}
		if picked != nil {
			picked()
		}
		return nil
	})
}

// LaunchOnFixedPorts launches the broker on the addresses it has, which its peers or its
// clients already know (a restart, or a member of a cluster whose seeds were fixed before
// it started). When one of them was taken at the bind, often by another process's brief
// probe for a free port, it tries again on the same addresses.
func (b *Broker) LaunchOnFixedPorts(ctx context.Context) error {
	return b.launchUntilPortsFree(ctx, nil)
}

// launchUntilPortsFree launches the broker up to portAttempts times, calling choose (when
// set) before each attempt, for as long as a failed start reports a port already in use.
func (b *Broker) launchUntilPortsFree(ctx context.Context, choose func() error) error {
	var err error
	for attempt := 0; attempt < portAttempts; attempt++ {
		if choose != nil {
			if err = choose(); err != nil {
				return err
			}
		}
		var p *process
		if p, err = b.launch(ctx); err == nil || p == nil || !b.portWasTaken(p) {
			return err
		}
		b.logf("attempt %d of %d: a port was already in use", attempt+1, portAttempts)
	}
	return err
}

// portWasTaken reports whether p's start failed because an address was in use. Only p's
// own part of the log counts: an earlier start's taken port says nothing about this one.
func (b *Broker) portWasTaken(p *process) bool {
	f, err := os.Open(b.LogPath)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(p.logFrom, io.SeekStart); err != nil {
		return false
	}
	raw, _ := io.ReadAll(f)
	return strings.Contains(string(raw), "address already in use")
}

// Launch starts the broker's process once and waits until it is ready, ctx ends or
// ReadyTimeout passes. On failure the process is killed and reaped. A broker that runs is
// an error. A port already in use fails it like any other error (LaunchOnFixedPorts tries
// again).
func (b *Broker) Launch(ctx context.Context) error {
	_, err := b.launch(ctx)
	return err
}

// launch is Launch; it also returns the process it started, nil when none started.
func (b *Broker) launch(ctx context.Context) (*process, error) {
	b.mu.Lock()
	if b.proc != nil && !b.proc.exited() {
		b.mu.Unlock()
		return nil, fmt.Errorf("broker %d is already running (pid %d)", b.ID, b.proc.cmd.Process.Pid)
	}
	b.starts++
	logf, err := os.OpenFile(b.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	var logFrom int64
	if st, err := logf.Stat(); err == nil {
		logFrom = st.Size()
	}
	args := b.commandLine()
	fmt.Fprintf(logf, "=== harness: start #%d of node %d (kafka %s, admin %s, rpc %s) at %s: cairn %s ===\n",
		b.starts, b.ID, b.KafkaAddr, b.AdminAddr, b.RPCAddr, time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(b.opts.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(b.opts.Env) > 0 {
		cmd.Env = append(os.Environ(), b.opts.Env...)
	}
	DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		b.mu.Unlock()
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{}), logFrom: logFrom}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	b.proc = p
	n := b.starts
	b.mu.Unlock()
	b.logf("start #%d, pid %d", n, cmd.Process.Pid)
	if err := b.waitReady(ctx, p); err != nil {
		b.mu.Lock()
		p.killed = true
		b.mu.Unlock()
		cmd.Process.Kill()
		<-p.done
		return p, err
	}
	b.logf("ready")
	return p, nil
}

func (b *Broker) commandLine() []string {
	args := []string{"start"}
	if !b.opts.OmitNodeID {
		args = append(args, "--node-id", strconv.Itoa(b.ID))
	}
	args = append(args, "--data-dir", b.DataDir)
	if len(b.opts.Listeners) == 0 {
		args = append(args, "--kafka-addr", b.KafkaAddr)
	} else {
		listeners := []string{"PLAINTEXT://" + b.KafkaAddr}
		protocols := []string{"PLAINTEXT:PLAINTEXT"}
		for _, l := range b.opts.Listeners {
			listeners = append(listeners, l.Name+"://"+b.ListenerAddrs[l.Name])
			protocols = append(protocols, l.Name+":"+l.Protocol)
		}
		args = append(args, "--listeners", strings.Join(listeners, ","),
			"--listener-security-protocol-map", strings.Join(protocols, ","))
	}
	for _, f := range []struct{ flag, value string }{
		{"--ssl-certificate-location", b.opts.TLS.Cert}, {"--ssl-key-location", b.opts.TLS.Key},
		{"--ssl-truststore-location", b.opts.TLS.CA}, {"--ssl-client-auth", b.opts.TLS.ClientAuth},
		{"--ssl-principal-mapping-rules", b.opts.TLS.PrincipalRules},
	} {
		if f.value != "" {
			args = append(args, f.flag, f.value)
		}
	}
	args = append(args,
		"--admin-addr", b.AdminAddr,
		"--rpc-addr", b.RPCAddr,
		"--log-level", b.opts.LogLevel,
	)
	return append(args, b.opts.Args...)
}

// waitReady polls /v1/status/ready until it answers 200, the process exits, ctx ends or
// ReadyTimeout passes.
func (b *Broker) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, b.opts.ReadyTimeout)
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
			return fmt.Errorf("broker %d not ready within %v: %w", b.ID, b.opts.ReadyTimeout, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// current returns the live process, or nil.
func (b *Broker) current() *process {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil || b.proc.exited() {
		return nil
	}
	return b.proc
}

// Running reports whether the broker's process is alive (paused counts as alive).
func (b *Broker) Running() bool { return b.current() != nil }

// PID returns the broker's current process id, 0 when none runs.
func (b *Broker) PID() int {
	if p := b.current(); p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// LogContains reports whether the broker's log (all starts) contains s.
func (b *Broker) LogContains(s string) bool {
	raw, _ := os.ReadFile(b.LogPath)
	return strings.Contains(string(raw), s)
}

// errNotRunning is what a signal to a broker without a live process returns.
func (b *Broker) errNotRunning() error { return fmt.Errorf("broker %d is not running", b.ID) }

// Stop stops the broker gracefully: SIGTERM (and SIGCONT if paused), then it waits up to
// StopTimeout for exit code 0. Past the timeout the broker is killed; either way a stop that
// does not end in exit code 0 is an error. When no process runs, Stop reports one that had
// exited without the harness ending it, and is otherwise a no-op.
func (b *Broker) Stop() error {
	b.mu.Lock()
	p := b.proc
	if p == nil || p.exited() {
		b.mu.Unlock()
		if p != nil && !p.killed && !p.stopped {
			return fmt.Errorf("broker %d had exited on its own: %v", b.ID, p.err)
		}
		return nil
	}
	p.stopped = true
	paused := p.paused
	p.paused = false
	b.mu.Unlock()
	b.logf("SIGTERM (pid %d)", p.cmd.Process.Pid)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !p.exited() {
		return err
	}
	if paused {
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-p.done:
	case <-time.After(b.opts.StopTimeout):
		Kill(b)
		return fmt.Errorf("broker %d did not exit within %v of SIGTERM (killed)", b.ID, b.opts.StopTimeout)
	}
	if p.err != nil {
		return fmt.Errorf("broker %d exited with %v after SIGTERM, want exit code 0", b.ID, p.err)
	}
	return nil
}

// Kill kills the brokers with SIGKILL (paused or not), one right after another with no
// wait in between, and then waits until each is reaped. Under --simulate-power-loss this is
// their power cut. Every broker must be running.
func Kill(bs ...*Broker) error {
	ps := make([]*process, len(bs))
	for i, b := range bs {
		if ps[i] = b.current(); ps[i] == nil {
			return b.errNotRunning()
		}
	}
	for i, b := range bs {
		b.mu.Lock()
		ps[i].killed = true
		b.mu.Unlock()
		b.logf("kill -9 (pid %d)", ps[i].cmd.Process.Pid)
		ps[i].cmd.Process.Signal(syscall.SIGKILL)
	}
	deadline := time.After(reapTimeout)
	for i, b := range bs {
		select {
		case <-ps[i].done:
		case <-deadline:
			return fmt.Errorf("broker %d: pid %d not reaped %v after SIGKILL", b.ID, ps[i].cmd.Process.Pid, reapTimeout)
		}
	}
	return nil
}

// Kill kills the broker with SIGKILL and waits until it is reaped (see the function Kill).
func (b *Broker) Kill() error { return Kill(b) }

// Pause stops the broker with SIGSTOP and returns once all its threads are stopped: its
// sockets stay open, it answers nothing.
func (b *Broker) Pause() error { return b.pause(true) }

// Resume continues a paused broker with SIGCONT.
func (b *Broker) Resume() error { return b.pause(false) }

func (b *Broker) pause(stop bool) error {
	p := b.current()
	if p == nil {
		return b.errNotRunning()
	}
	sig, name := syscall.SIGCONT, "SIGCONT"
	if stop {
		sig, name = syscall.SIGSTOP, "SIGSTOP"
	}
	b.logf("%s (pid %d)", name, p.cmd.Process.Pid)
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	if stop {
		if err := waitStopped(p.cmd.Process.Pid, reapTimeout); err != nil {
			return err
		}
	}
	b.mu.Lock()
	p.paused = stop
	b.mu.Unlock()
	return nil
}

// LaunchAll launches the brokers at once and returns each one's error, in order. A founder,
// or a broker of a cluster that was wholly down, is ready only once the others answer, so
// such brokers cannot be started one after another.
func LaunchAll(ctx context.Context, bs ...*Broker) []error {
	return Together(bs, func(b *Broker) error { return b.Launch(ctx) })
}

// StopAll stops the running brokers at once (see Stop) and returns each one's error.
func StopAll(bs ...*Broker) []error {
	return Together(bs, (*Broker).Stop)
}

// Together runs f on each of bs at once and returns each one's error, in order.
func Together[B any](bs []B, f func(B) error) []error {
	errs := make([]error, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(b)
		}()
	}
	wg.Wait()
	return errs
}
