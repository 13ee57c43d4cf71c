package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestLabAuto runs `cairn lab --auto`: its own three brokers, every step, each observed
// outcome checked against the topic's contract by the lab itself (a mismatch exits
// non-zero). The test checks the exit and that every step reported its outcome.
func TestLabAuto(t *testing.T) {
	t.Parallel()
	r := run(t, 5*time.Minute, "", cairnBin, "lab", "--auto", "--dir", t.TempDir())
	if r.Err != nil {
		t.Fatalf("cairn lab --auto: %s", r)
	}
	if n := strings.Count(r.Stdout, "OK: the outcome is what the contract allows."); n != 6 {
		t.Fatalf("%d steps reported OK, want 6:\n%s", n, r.Stdout)
	}
	for _, want := range []string{
		"acks=1 produce to the leader: acknowledged", "after the minority crash it is gone",
		"A consumer reads it before the power cut: true", "acks=all produce (waited 4 s): not acknowledged",
		"after the whole-cluster power cut it is still there", "Every step's outcome matched the contract.",
		"cairn topic explain now warns: 2 in-sync replicas, below min.insync.replicas=3",
		"acks=all produce: not acknowledged (NOT_ENOUGH_REPLICAS",
		"cairn topic explain now warns: in-sync replicas span 2 declared racks, below min.insync.racks=3",
		"NOT_ENOUGH_RACKS",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the lab's output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", r.Stdout)
	}
}
