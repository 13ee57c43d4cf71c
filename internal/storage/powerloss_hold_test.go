package storage

import (
	"path/filepath"
	"testing"
	"time"
)

// While fsyncs are held, a Sync waits and makes nothing durable: a kill -9 then keeps only
// what was synced before the hold. Released, the waiting Sync completes and its bytes are
// durable.
func TestPowerLossFSHeldSyncsMakeNothingDurable(t *testing.T) {
	root := t.TempDir()
	pl := newPL(t, root)
	name := filepath.Join(root, "log")
	f := writeSynced(t, pl, name, "before ", true)
	mustDo(t, pl.SyncDir(root))

	pl.HoldSyncs()
	if _, err := f.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.Sync() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if held, waiting := pl.SyncsHeld(); held && waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Sync never reached the hold")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Sync returned while held: %v", err)
	default:
	}
	if got := readAllFS(t, newPL(t, root), name); string(got) != "before " {
		t.Fatalf("a power cut while held keeps %q, want %q", got, "before ")
	}

	pl.ReleaseSyncs()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if held, waiting := pl.SyncsHeld(); held || waiting != 0 {
		t.Fatalf("after release: held %v, %d waiting", held, waiting)
	}
	if got := readAllFS(t, newPL(t, root), name); string(got) != "before held" {
		t.Fatalf("after release %q, want %q", got, "before held")
	}
}
