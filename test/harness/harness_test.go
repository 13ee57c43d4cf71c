package harness

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
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
// Modes: "ok"; "exit-early" (exits 3 before it is ready); "exit-after-ready" (exits 0 on its
// own once ready); "ignore-term" (ready, deaf to SIGTERM).
func fakeBroker(mode string, args []string) int {
	if mode == "exit-early" {
		return 3
	}
	fs := flag.NewFlagSet("cairn", flag.ContinueOnError)
	admin := fs.String("admin-addr", "", "")
	for _, name := range []string{"node-id", "data-dir", "kafka-addr", "rpc-addr", "log-level"} {
		fs.String(name, "", "")
	}
	if len(args) == 0 || args[0] != "start" || fs.Parse(args[1:]) != nil {
		return 2
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
