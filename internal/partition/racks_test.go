package partition

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/kafkatest"
)

// The ISR shrinks when time passes with no event: a waiter that min.insync.racks holds
// back must see that on its own and fail, not wait for its timeout. In a synctest bubble
// the waiter is seen blocked before the clock moves, and nothing refreshes the partition
// afterwards: only its own re-check can wake it.
func TestRackWaiterSeesTheISRShrinkWithoutAnEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &replicaScript{t: t, racks: Racks{1: "a", 2: "a", 3: "b", 4: "b", 5: "c"}}
		defer s.close()
		cfg := defaultConfig()
		cfg.MinInsyncRacks = 3
		s.reset(5, cfg)
		s.d.Hold(5, true)
		p := s.part(1)
		var wait func(context.Context) ProduceResult
		s.d.ProcessWhile(1, func() { _, wait = p.Produce(kafkatest.Plain(1, 1000).Bytes(), -1) })
		if wait == nil {
			t.Fatal("the batch was not admitted")
		}
		s.d.Stabilize()
		s.refresh()

		answer := make(chan ProduceResult, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		go func() { answer <- wait(ctx) }()
		synctest.Wait() // the waiter is blocked: the batch sits in racks a and b
		select {
		case r := <-answer:
			t.Fatalf("answered before the ISR shrank: %v %s", r.Err, r.Msg)
		default:
		}
		s.d.Clock().Advance(DefaultReplicaLagMax + time.Millisecond) // host 5 leaves the ISR; no refresh
		r := <-answer
		if r.Err != kerr.NotEnoughReplicasAfterAppend || !strings.HasPrefix(r.Msg, "NOT_ENOUGH_RACKS: ") {
			t.Fatalf("got %v %q, want NOT_ENOUGH_REPLICAS_AFTER_APPEND with NOT_ENOUGH_RACKS:", r.Err, r.Msg)
		}
		if ctx.Err() != nil {
			t.Fatal("the waiter answered only at its timeout")
		}
	})
}

// RackState is the leader's: the racks its ISR spans, sorted, against min.insync.racks,
// with under and at as the metrics report them (both false while the rule is off, so a
// rackless cluster shows no partition under); a follower reports nothing.
func TestRackStateIsTheLeaders(t *testing.T) {
	s := &replicaScript{t: t, racks: Racks{1: "c", 2: "a", 3: "c"}}
	defer s.close()
	cfg := defaultConfig()
	cfg.MinInsyncRacks = 2
	s.reset(3, cfg)
	for _, id := range []uint64{2, 3} {
		if st, ok := s.part(id).RackState(); ok {
			t.Fatalf("follower %d reports %+v", id, st)
		}
	}
	check := func(want RackState) {
		t.Helper()
		st, ok := s.part(1).RackState()
		if !ok || !slices.Equal(st.ISRRacks, want.ISRRacks) || st.MinRacks != want.MinRacks || st.Under != want.Under || st.At != want.At {
			t.Fatalf("leader reports %+v (ok %v), want %+v", st, ok, want)
		}
	}
	check(RackState{ISRRacks: []string{"a", "c"}, MinRacks: 2, At: true})
	cfg.MinInsyncRacks = 3
	s.part(1).SetConfig(cfg)
	check(RackState{ISRRacks: []string{"a", "c"}, MinRacks: 3, Under: true})
	s.part(1).SetRacks(nil)
	cfg.MinInsyncRacks = 1
	s.part(1).SetConfig(cfg)
	check(RackState{MinRacks: 1})
}
