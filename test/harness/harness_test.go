package harness

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeBrokerEnv turns the test binary into a stand-in broker (see fakeBroker): the rules of
// the lifecycle are checked here in milliseconds, without building cairn.
const fakeBrokerEnv = "HARNESS_FAKE_BROKER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeBrokerEnv); mode != "" {
		os.Exit(fakeBroker(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeBroker serves /v1/status/ready on --admin-addr and exits 0 on SIGTERM, like cairn.
// The mode is a comma-separated script: the broker's k-th start (counted in its data
// folder) plays the k-th mode, and the last mode plays on. Modes: "ok"; "exit-early" (exits
// 3 before it is ready); "port-taken" (fails as cairn does when a listener's port is in
// use); "exit-after-ready" (exits 0 on its own once ready); "ignore-term" (ready, deaf to
// SIGTERM).
func fakeBroker(script string, args []string) int {
	fs := flag.NewFlagSet("cairn", flag.ContinueOnError)
	admin := fs.String("admin-addr", "", "")
	dataDir := fs.String("data-dir", "", "")
	kafka := fs.String("kafka-addr", "", "")
	for _, name := range []string{"node-id", "rpc-addr", "log-level"} {
		fs.String(name, "", "")
	}
	if len(args) == 0 || args[0] != "start" || fs.Parse(args[1:]) != nil {
		return 2
	}
	modes := strings.Split(script, ",")
	counter := filepath.Join(*dataDir, "fake-starts")
	raw, _ := os.ReadFile(counter)
	start := len(raw) // one byte per start
	if err := os.WriteFile(counter, append(raw, '.'), 0o644); err != nil {
		return 2
	}
	mode := modes[min(start, len(modes)-1)]
	switch mode {
	case "exit-early":
		return 3
	case "port-taken":
		fmt.Fprintf(os.Stderr, "cairn: kafka listener: listen tcp %s: bind: address already in use\n", *kafka)
		return 1
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	mux := http.NewServeMux()
	served := make(chan struct{}, 1)
	mux.HandleFunc("/v1/status/ready", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case served <- struct{}{}:
		default:
		}
	})
	go http.ListenAndServe(*admin, mux)
	switch mode {
	case "exit-after-ready":
		<-served
		time.Sleep(50 * time.Millisecond) // let the answer reach the harness
		return 0
	case "ignore-term":
		select {}
	}
	<-term
	return 0
}

func newFake(t *testing.T, mode string, opts Options) *Broker {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts.ID, opts.Binary, opts.DataDir, opts.LogPath = 1, exe, dir, filepath.Join(dir, "broker.log")
	opts.Env = []string{fakeBrokerEnv + "=" + mode}
	b := New(opts)
	t.Cleanup(func() {
		if b.Running() {
			b.Kill()
		}
	})
	return b
}

func launch(t *testing.T, b *Broker) {
	t.Helper()
	if err := b.LaunchOnFreePorts(t.Context(), nil); err != nil {
		t.Fatalf("launch: %v\n%s", err, TailFile(b.LogPath, 20))
	}
}

// A broker stopped by the harness, killed by it, paused and stopped, or started again on the
// same addresses, ends cleanly; the log keeps every start.
func TestLifecycle(t *testing.T) {
	b := newFake(t, "ok", Options{})
	launch(t, b)
	if b.PID() == 0 || !b.Running() {
		t.Fatal("a launched broker does not run")
	}
	if err := b.Launch(t.Context()); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("a second Launch of a running broker: %v, want already running", err)
	}
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(); err != nil {
		t.Fatalf("Stop after Kill: %v, want nothing to stop", err)
	}
	if err := b.Kill(); err == nil {
		t.Fatal("Kill of a broker that does not run succeeded")
	}
	addr := b.AdminAddr
	if err := b.Launch(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b.AdminAddr != addr {
		t.Fatalf("a restart moved the admin address from %s to %s", addr, b.AdminAddr)
	}
	if err := b.Pause(); err != nil {
		t.Fatal(err)
	}
	if n, err := runningThreads(b.current().cmd.Process.Pid); err != nil || n != 0 {
		t.Fatalf("after Pause returned, %d threads still run (%v), want all stopped", n, err)
	}
	if err := b.Stop(); err != nil {
		t.Fatalf("Stop of a paused broker: %v", err)
	}
	if b.Running() {
		t.Fatal("a stopped broker still runs")
	}
	if n := strings.Count(TailFile(b.LogPath, 100), "=== harness: start #"); n != 2 {
		t.Fatalf("log names %d starts, want 2", n)
	}
}

// A broker may end only because the harness ended it: an exit before readiness fails the
// launch, and an exit of its own, even with code 0, is reported by the next Stop.
func TestExitsOfItsOwnAreReported(t *testing.T) {
	early := newFake(t, "exit-early", Options{})
	if err := early.LaunchOnFreePorts(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("launch of a broker that exits at once: %v", err)
	}
	b := newFake(t, "exit-after-ready", Options{})
	launch(t, b)
	deadline := time.Now().Add(10 * time.Second)
	for b.Running() {
		if time.Now().After(deadline) {
			t.Fatal("the fake broker did not exit on its own")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := b.Stop(); err == nil || !strings.Contains(err.Error(), "exited on its own") {
		t.Fatalf("Stop after an exit of its own: %v, want it reported", err)
	}
}

// A broker deaf to SIGTERM is killed after StopTimeout, and the stop fails.
func TestStopTimeoutKills(t *testing.T) {
	b := newFake(t, "ignore-term", Options{StopTimeout: 200 * time.Millisecond})
	launch(t, b)
	err := b.Stop()
	if err == nil || !strings.Contains(err.Error(), "did not exit within") {
		t.Fatalf("Stop of a broker that ignores SIGTERM: %v", err)
	}
	if b.Running() {
		t.Fatal("the broker still runs after the stop timed out")
	}
}

// Kill ends several brokers at once (a power cut), and LaunchAll and StopAll start and stop
// them together.
func TestKillTogether(t *testing.T) {
	bs := []*Broker{newFake(t, "ok", Options{}), newFake(t, "ok", Options{})}
	for _, b := range bs {
		launch(t, b)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := Kill(bs...); err != nil {
		t.Fatal(err)
	}
	for i, b := range bs {
		if b.Running() {
			t.Fatalf("broker %d runs after Kill", i)
		}
	}
	for i, err := range LaunchAll(ctx, bs...) {
		if err != nil {
			t.Fatalf("broker %d: %v", i, err)
		}
	}
	for i, err := range StopAll(bs...) {
		if err != nil {
			t.Fatalf("broker %d: %v", i, err)
		}
	}
}

// WaitListed needs every broker running: one that is down fails the wait at once (e2e
// started them all, so it has lost one), while WaitListedSkippingDown leaves it out (a
// fault schedule may have it down).
func TestWaitListedAndDownBrokers(t *testing.T) {
	down := newFake(t, "ok", Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := WaitListed(ctx, 1, down)
	if err == nil || !strings.Contains(err.Error(), "broker 1 is not running") {
		t.Fatalf("WaitListed with a broker down: %v, want it reported not running", err)
	}
	if ctx.Err() != nil {
		t.Fatal("WaitListed with a broker down waited for its context to end")
	}
	if err := WaitListedSkippingDown(ctx, 1, down); err != nil {
		t.Fatalf("WaitListedSkippingDown with the only broker down: %v, want nothing to wait for", err)
	}
}

// A start that finds a port already in use is tried again: on other free ports by
// LaunchOnFreePorts, on the same ones by LaunchOnFixedPorts, three starts in all. Launch
// starts once, and only the failed start's own output counts, not an earlier start's.
func TestTakenPortsAreTriedAgain(t *testing.T) {
	moved := newFake(t, "port-taken,ok", Options{})
	var picks []string
	if err := moved.LaunchOnFreePorts(t.Context(), func() { picks = append(picks, moved.AdminAddr) }); err != nil {
		t.Fatalf("LaunchOnFreePorts after a taken port: %v", err)
	}
	if len(picks) != 2 || picks[0] == picks[1] {
		t.Fatalf("LaunchOnFreePorts picked admin addresses %v, want two different ones", picks)
	}

	fixed := newFake(t, "port-taken,ok,exit-early", Options{})
	setFreeAddrs(t, fixed)
	addr := fixed.AdminAddr
	if err := fixed.LaunchOnFixedPorts(t.Context()); err != nil {
		t.Fatalf("LaunchOnFixedPorts after a taken port: %v", err)
	}
	if fixed.AdminAddr != addr || starts(fixed) != 2 {
		t.Fatalf("LaunchOnFixedPorts: admin %s after %d starts, want %s after 2", fixed.AdminAddr, starts(fixed), addr)
	}
	if err := fixed.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := fixed.LaunchOnFixedPorts(t.Context()); err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("LaunchOnFixedPorts of a broker that exits at once: %v", err)
	}
	if n := starts(fixed); n != 3 {
		t.Fatalf("a start that failed for another reason was tried again (%d starts, want 3): the earlier taken port counted", n)
	}

	taken := newFake(t, "port-taken", Options{})
	setFreeAddrs(t, taken)
	if err := taken.LaunchOnFixedPorts(t.Context()); err == nil {
		t.Fatal("LaunchOnFixedPorts with a port always taken succeeded")
	}
	if n := starts(taken); n != 3 {
		t.Fatalf("LaunchOnFixedPorts with a port always taken made %d starts, want 3", n)
	}

	once := newFake(t, "port-taken,ok", Options{})
	setFreeAddrs(t, once)
	if err := once.Launch(t.Context()); err == nil {
		t.Fatal("Launch on a taken port succeeded")
	}
	if n := starts(once); n != 1 {
		t.Fatalf("Launch made %d starts, want 1", n)
	}
}

func setFreeAddrs(t *testing.T, b *Broker) {
	t.Helper()
	for _, a := range []*string{&b.KafkaAddr, &b.AdminAddr, &b.RPCAddr} {
		var err error
		if *a, err = FreeAddr(); err != nil {
			t.Fatal(err)
		}
	}
}

// starts counts the starts the broker's log names.
func starts(b *Broker) int {
	raw, _ := os.ReadFile(b.LogPath)
	return strings.Count(string(raw), "=== harness: start #")
}

// A port one user of the harness claimed is never handed to another, even while the
// broker that owns it is down and the port is free: flock's claim is per open file, so a
// second claim here fails exactly as another process's would.
func TestClaimedPortIsNotHandedOut(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	if claimPort(port) {
		t.Fatalf("port %d was handed out and then claimed again", port)
	}
	for range 50 {
		other, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if other == addr {
			t.Fatalf("FreeAddr handed out %s twice", addr)
		}
	}
}
