package rafttest

import (
	"slices"
	"testing"
	"time"
)

// Write caching's flush timers fire when the test advances the clock past them, earliest
// first; a timer armed as one fires counts from the time the clock was advanced to.
func TestClockFiresDueTimersInDeadlineOrder(t *testing.T) {
	c := NewClock()
	start := c.Now()
	var fired []string
	c.AfterFunc(30*time.Millisecond, func() { fired = append(fired, "30ms") })
	c.AfterFunc(10*time.Millisecond, func() {
		fired = append(fired, "10ms")
		c.AfterFunc(5*time.Millisecond, func() { fired = append(fired, "10ms+5ms") })
	})
	c.AfterFunc(10*time.Millisecond, func() { fired = append(fired, "10ms, armed second") })
	c.Advance(9 * time.Millisecond)
	if len(fired) != 0 {
		t.Fatalf("fired %v before any deadline", fired)
	}
	c.Advance(11 * time.Millisecond)
	if want := []string{"10ms", "10ms, armed second"}; !slices.Equal(fired, want) {
		t.Fatalf("fired %v by 20ms, want %v", fired, want)
	}
	c.Advance(10 * time.Millisecond) // the timer armed at 20ms is due at 25ms
	if want := []string{"10ms", "10ms, armed second", "10ms+5ms", "30ms"}; !slices.Equal(fired, want) {
		t.Fatalf("fired %v by 30ms, want %v", fired, want)
	}
	if got := c.Now().Sub(start); got != 30*time.Millisecond {
		t.Fatalf("clock moved %v, want 30ms", got)
	}
}
