package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRegisteredSince(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker-3.log")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := func(sec, ms int) time.Time { return time.Date(2026, 12, 1, 20, 14, sec, ms*1e6, time.UTC) }
	if _, ok := registeredSince(path+".missing", at(0, 0)); ok {
		t.Error("a missing log gave a registration time")
	}
	earlier := "=== harness: start #42 of node 3 at 2026-12-01T20:14:20Z: cairn start ===\n" +
		`time=2026-12-01T20:14:20.166Z level=INFO msg="controller group started" node=3` + "\n" +
		`time=2026-12-01T20:14:20.247Z level=INFO msg="broker registered" node=3 incarnation=42` + "\n"
	restarted := earlier + "=== harness: start #43 of node 3 at 2026-12-01T20:14:36Z: cairn start ===\n" +
		`time=2026-12-01T20:14:36.166Z level=INFO msg="controller group started" node=3` + "\n"
	write(restarted)
	if got, ok := registeredSince(path, at(36, 0)); ok {
		t.Errorf("registeredSince = %v: the restart has not registered yet, only the start before the fault", got)
	}
	// A start that registered and then failed on a port taken counts: it had opened its
	// partition replicas. The retry's later registration does not move the moment.
	write(restarted + `time=2026-12-01T20:14:36.247Z level=INFO msg="broker registered" node=3 incarnation=43` + "\n" +
		"cairn: kafka listener: listen tcp 127.0.0.1:14655: bind: address already in use\n" +
		"=== harness: start #44 of node 3 at 2026-12-01T20:14:36.351Z: cairn start ===\n" +
		`time=2026-12-01T20:14:36.451Z level=INFO msg="broker registered" node=3 incarnation=44` + "\n")
	if got, ok := registeredSince(path, at(36, 0)); !ok || !got.Equal(at(36, 247)) {
		t.Errorf("registeredSince = %v, %v; want the first registration since the restart, 20:14:36.247", got, ok)
	}
	write(restarted + `time=yesterday level=INFO msg="broker registered"` + "\n")
	if got, ok := registeredSince(path, at(36, 0)); ok {
		t.Errorf("registeredSince = %v from an unreadable time", got)
	}
}
