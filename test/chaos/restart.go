package main

import (
	"bufio"
	"os"
	"strings"
	"time"

	"github.com/cairn-io/cairn/test/chaos/faults"
	"github.com/cairn-io/cairn/test/chaos/history"
)

// registeredLine is how a broker's log reports its registration with the controller; it
// opens its partition replicas only after that (internal/broker New: cluster Run, then
// reconcile), so until then it cannot make a write majority-replicated.
const registeredLine = `msg="broker registered"`

// markRestart closes the window of the lossy fault name, whose brokers ids the harness
// began to start again at began (see history.KindRestart): until the first of them had
// registered, no partition could make a write majority-replicated, so a write
// acknowledged before then was replicated before the cut and the checker holds it to this
// fault. The moment is read from their logs; when one lacks it, began stands (no later
// than the truth). It is known only when every broker holds a replica of every partition
// (replication factor min(3, brokers) = brokers): with more brokers a majority of them may
// leave some partition a majority of its replicas, so no marker is recorded and the checker
// keeps its older rule, which dates a write's exposure from its acknowledgement alone.
// Move faults keep that premise: only write-caching sessions have lossy faults, and there a
// move never leaves a partition fewer than min(3, brokers) replicas (move.go).
func markRestart(cl *faults.Cluster, rec *history.Recorder, name string, lossy bool, ids []int, began time.Time) {
	if !lossy || cl.N() > 3 {
		return
	}
	up := time.Time{}
	for _, id := range ids {
		t, ok := registeredSince(cl.Broker(id).LogPath, began)
		if !ok {
			up = began
			break
		}
		if up.IsZero() || t.Before(up) {
			up = t
		}
	}
	if up.IsZero() {
		up = began
	}
	rec.Restart(name, up)
}

// registeredSince returns when the broker whose log is at path first registered at or
// after since, from the line's time= field (millisecond precision, truncated: no later than
// the truth). The first registration counts, not the last start's: a start that registered
// and then failed (a port taken) had opened its partition replicas in between.
func registeredSince(path string, since time.Time) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	since = since.Truncate(time.Millisecond)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, registeredLine) {
			if t, ok := logTime(line); ok && !t.Before(since) {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// logTime reads the leading time=... field of a text log line.
func logTime(line string) (time.Time, bool) {
	v, ok := strings.CutPrefix(line, "time=")
	if !ok {
		return time.Time{}, false
	}
	v, _, _ = strings.Cut(v, " ")
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}
