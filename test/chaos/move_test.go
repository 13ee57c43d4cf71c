package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestDrawTargetKeepsSizeRacksAndChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	racks := []string{"r1", "r1", "r2", "r2", "r3"}
	sizes := map[int]int{}
	for range 2000 {
		current := []int32{1, 3, 5}
		got := drawTarget(rng, current, 5, racks, 2, 1, false)
		sizes[len(got)]++
		if len(got) < 2 || len(got) > 4 {
			t.Fatalf("drawTarget(%v) = %v: the size must stay within one of 3", current, got)
		}
		if rackCount(got, racks) < 2 {
			t.Fatalf("drawTarget = %v spans %d racks, want at least min.insync.racks 2", got, rackCount(got, racks))
		}
		if slices.Equal(got, current) {
			t.Fatalf("drawTarget = %v, the current set itself", got)
		}
		seen := map[int32]bool{}
		for _, id := range got {
			if id < 1 || id > 5 || seen[id] {
				t.Fatalf("drawTarget = %v: ids must be distinct brokers 1..5", got)
			}
			seen[id] = true
		}
	}
	for _, n := range []int{2, 3, 4} {
		if sizes[n] == 0 {
			t.Errorf("no target of %d replicas in 2000 draws (%v): RF changes must be drawn too", n, sizes)
		}
	}
}

func TestDrawTargetBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		// One broker: the only set is the current one.
		if got := drawTarget(rng, []int32{1}, 1, []string{"r"}, 1, 1, false); !slices.Equal(got, []int32{1}) {
			t.Fatalf("one broker: drawTarget = %v, want [1]", got)
		}
		// Write caching keeps at least three replicas on three brokers: only reorderings.
		got := drawTarget(rng, []int32{1, 2, 3}, 3, []string{"a", "b", "c"}, 1, 3, false)
		if !sameSet(got, []int32{1, 2, 3}) {
			t.Fatalf("minRF 3 of 3 brokers: drawTarget = %v, want a reordering of [1 2 3]", got)
		}
		// RF 1 never shrinks below one.
		if got := drawTarget(rng, []int32{2}, 3, []string{"a", "b", "c"}, 1, 1, false); len(got) < 1 || len(got) > 2 {
			t.Fatalf("drawTarget of [2] = %v", got)
		}
	}
}

func TestDrawTargetStray(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	racks := []string{"r1", "r1", "r2", "r2", "r3"}
	for range 200 {
		got := drawTarget(rng, []int32{1, 3, 5}, 5, racks, 3, 1, true)
		if rackCount(got, racks) >= 3 {
			t.Fatalf("stray drawTarget = %v spans 3 racks; want a set the broker refuses", got)
		}
	}
	// With one rack per broker every set of 2+ spans 2 racks: a stray draw for
	// min.insync.racks 1 cannot exist and falls back to a valid one.
	if got := drawTarget(rng, []int32{1, 2}, 3, []string{"a", "b", "c"}, 1, 1, true); len(got) == 0 {
		t.Fatalf("stray draw without a stray set: %v", got)
	}
}

func TestDrawOther(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 100 {
		if got := drawOther(rng, []int32{1, 2, 3}, 2); got == 2 || got < 1 || got > 3 {
			t.Fatalf("drawOther([1 2 3], not 2) = %d", got)
		}
	}
	if got := drawOther(rng, []int32{4}, 4); got != 4 {
		t.Errorf("drawOther([4], not 4) = %d, want 4 (the only replica)", got)
	}
	if got := drawOther(rng, []int32{4, 5}, -1); got != 4 && got != 5 {
		t.Errorf("drawOther with no leader = %d", got)
	}
}

func TestClassifyMove(t *testing.T) {
	orig, target := []int32{1, 2, 3}, []int32{3, 4, 5}
	for _, c := range []struct {
		name                   string
		replicas               []int32
		cancelled, seen, acked bool
		elapsed                time.Duration
		want                   moveOutcome
	}{
		{"on the target", []int32{5, 4, 3}, false, true, true, time.Second, moveCompleted},
		{"done before it was ever listed", target, false, false, true, 0, moveCompleted},
		{"back after an accepted cancel", orig, true, false, true, time.Second, moveCancelled},
		{"back after a cancel whose answer was lost", orig, false, true, true, time.Second, moveCancelled},
		{"not applied here yet", orig, false, false, true, time.Minute, moveOpen},
		{"never recorded (no answer)", orig, false, false, false, 11 * time.Second, moveRefused},
		{"no answer, still young", orig, false, false, false, time.Second, moveOpen},
		{"in between", []int32{3, 4, 5, 1, 2}, false, true, true, time.Second, moveOpen},
	} {
		if got := classifyMove(orig, target, c.replicas, c.cancelled, c.seen, c.acked, c.elapsed); got != c.want {
			t.Errorf("%s: classifyMove = %q, want %q", c.name, got, c.want)
		}
	}
	// A move to a reordering of the same brokers: cancelled when a cancel was accepted.
	if got := classifyMove(orig, []int32{2, 1, 3}, []int32{1, 2, 3}, true, false, true, time.Second); got != moveCancelled {
		t.Errorf("reordering, cancel accepted: %q, want cancelled", got)
	}
	if got := classifyMove(orig, []int32{2, 1, 3}, []int32{2, 1, 3}, false, false, true, time.Second); got != moveCompleted {
		t.Errorf("reordering: %q, want completed", got)
	}
}

// fakeAdmin answers the issue-14 admin contract as a broker would.
func fakeAdmin(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	fail := func(w http.ResponseWriter, code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"message": msg, "code": code})
	}
	mux.HandleFunc("POST /v1/partitions/{topic}/{partition}/replicas", func(w http.ResponseWriter, r *http.Request) {
		var ids []int32
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &ids); err != nil {
			fail(w, 400, "the body must be a JSON array of replicas")
			return
		}
		switch {
		case r.PathValue("topic") != "chaos":
			fail(w, 404, fmt.Sprintf("topic %q does not exist", r.PathValue("topic")))
		case r.PathValue("partition") == "1":
			fail(w, 409, "chaos-1 is moving already")
		case r.PathValue("partition") == "2":
			fail(w, 503, "no controller leader applied it in time")
		case slices.Contains(ids, 9):
			fail(w, 400, "broker 9 is not registered")
		default:
			w.Write([]byte("{}"))
		}
	})
	mux.HandleFunc("POST /v1/partitions/{topic}/{partition}/cancel_reconfiguration", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("partition") == "0" {
			fail(w, 409, "too late: chaos-0 is leaving its joint configuration")
			return
		}
		w.Write([]byte("{}"))
	})
	mux.HandleFunc("POST /v1/partitions/{topic}/{partition}/transfer_leadership", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("target") == "7" {
			fail(w, 400, "broker 7 is not a replica of chaos-0")
			return
		}
		w.WriteHeader(500)
		w.Write([]byte("boom"))
	})
	mux.HandleFunc("GET /v1/partitions/reconfigurations", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`[{"topic":"chaos","partition":1,"original":[1,2,3],"target":[4,5,6],"adding":[4,5,6],"removing":[1,2,3],"cancelled":true,"final":false,"phase":"catching_up","bytes_moved":1,"bytes_left":2}]`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestAdminCallsFollowTheContract(t *testing.T) {
	srv := fakeAdmin(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	hc := srv.Client()
	for _, c := range []struct {
		name   string
		v      verdict
		want   answer
		reason string
	}{
		{"move", httpMove(ctx, hc, addr, "chaos", 0, []int32{3, 4, 5}), accepted, ""},
		{"move of a moving partition", httpMove(ctx, hc, addr, "chaos", 1, []int32{3, 4, 5}), refused, "HTTP 409: chaos-1 is moving already"},
		{"move with no controller", httpMove(ctx, hc, addr, "chaos", 2, []int32{3, 4, 5}), unanswered, "HTTP 503: no controller leader"},
		{"move to an unknown broker", httpMove(ctx, hc, addr, "chaos", 0, []int32{9}), refused, "broker 9 is not registered"},
		{"move of an unknown topic", httpMove(ctx, hc, addr, "nope", 0, []int32{1}), refused, `HTTP 404: topic "nope" does not exist`},
		{"cancel", httpCancel(ctx, hc, addr, "chaos", 1), accepted, ""},
		{"cancel too late", httpCancel(ctx, hc, addr, "chaos", 0), refused, "too late"},
		{"transfer to a non-replica", httpTransfer(ctx, hc, addr, "chaos", 0, 7), refused, "broker 7 is not a replica"},
		{"transfer hitting a server fault", httpTransfer(ctx, hc, addr, "chaos", 0, 2), unanswered, "HTTP 500: boom"},
		{"a broker that is gone", httpMove(ctx, hc, "127.0.0.1:1", "chaos", 0, []int32{1}), unanswered, "connect"},
	} {
		if c.v.answer != c.want || !strings.Contains(c.v.reason, c.reason) {
			t.Errorf("%s: %v, want %v with %q", c.name, c.v, c.want, c.reason)
		}
	}
	list, v := httpReconfigurations(ctx, hc, addr)
	if v.answer != accepted || len(list) != 1 || list[0].Partition != 1 || !list[0].Cancelled || !slices.Equal(list[0].Target, []int32{4, 5, 6}) {
		t.Errorf("reconfigurations: %+v, %v", list, v)
	}
}

func TestKafkaVerdict(t *testing.T) {
	if v := kafkaVerdict(nil, nil, ""); v.answer != accepted {
		t.Errorf("no error: %v", v)
	}
	if v := kafkaVerdict(errors.New("dial tcp: refused"), nil, ""); v.answer != unanswered {
		t.Errorf("a request error: %v, want no answer", v)
	}
	if v := kafkaVerdict(nil, kerr.ReassignmentInProgress, "cancel is too late"); v.answer != refused || !strings.Contains(v.reason, "REASSIGNMENT_IN_PROGRESS") || !strings.Contains(v.reason, "too late") {
		t.Errorf("REASSIGNMENT_IN_PROGRESS: %v, want a refusal naming the code and the message", v)
	}
	if v := kafkaVerdict(nil, kerr.RequestTimedOut, ""); v.answer != unanswered {
		t.Errorf("REQUEST_TIMED_OUT: %v, want no answer (it may still be applied)", v)
	}
}

func TestMoveStatsLine(t *testing.T) {
	s := moveStats{Moves: 5, Completed: 2, Cancelled: 1, Refused: 1, TimedOut: 1, CancelAsks: 2, CancelsAccepted: 1, CancelsRefused: 1,
		Transfers: 3, TransfersRefused: 1, Elections: 2, StillMoving: []int32{2}}
	got := s.String()
	for _, want := range []string{"5 requested", "2 completed", "1 cancelled", "1 refused", "1 timed out", "3 transfers (1 refused)", "still moving after the final wait: [2]"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
}
