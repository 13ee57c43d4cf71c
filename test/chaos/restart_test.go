package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRegisteredAt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker-2.log")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := registeredAt(path + ".missing"); ok {
		t.Error("a missing log gave a registration time")
	}
	first := "=== harness: start #1 of node 2 at 2026-12-01T18:34:39Z: cairn start ===\n" +
		`time=2026-12-01T18:34:39.420Z level=INFO msg="controller group started" node=2` + "\n" +
		`time=2026-12-01T18:34:39.561Z level=INFO msg="broker registered" node=2 incarnation=1` + "\n"
	write(first)
	if got, ok := registeredAt(path); !ok || !got.Equal(time.Date(2026, 12, 1, 18, 34, 39, 561e6, time.UTC)) {
		t.Errorf("registeredAt = %v, %v; want 18:34:39.561", got, ok)
	}
	// The last start counts; until it registers there is no time, however many earlier
	// starts did.
	second := first + "=== harness: start #2 of node 2 at 2026-12-01T18:35:08Z: cairn start ===\n" +
		`time=2026-12-01T18:35:08.420Z level=INFO msg="controller group started" node=2` + "\n"
	write(second)
	if got, ok := registeredAt(path); ok {
		t.Errorf("registeredAt = %v before the last start registered", got)
	}
	write(second + `time=2026-12-01T18:35:09.561Z level=INFO msg="broker registered" node=2 incarnation=2` + "\n" +
		`time=2026-12-01T18:35:20.000Z level=INFO msg="broker registered" node=2 incarnation=3` + "\n")
	if got, ok := registeredAt(path); !ok || !got.Equal(time.Date(2026, 12, 1, 18, 35, 9, 561e6, time.UTC)) {
		t.Errorf("registeredAt = %v, %v; want the last start's first registration, 18:35:09.561", got, ok)
	}
	write("=== harness: start #1 ===\n" + `time=yesterday level=INFO msg="broker registered"` + "\n")
	if got, ok := registeredAt(path); ok {
		t.Errorf("registeredAt = %v from an unreadable time", got)
	}
}
