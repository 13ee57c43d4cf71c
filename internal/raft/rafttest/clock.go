package rafttest

import (
	"slices"
	"sync"
	"time"
)

// Clock is a manual clock: time moves only by Advance, and the timers it passes fire then,
// in deadline order, on the goroutine that advances it. It implements raft.Clock; Now is
// safe to call from any goroutine (a partition's refresher reads it), so a test can hand
// Now to whatever else it needs to run on the same time.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []timer
}

type timer struct {
	at time.Time
	f  func()
}

// NewClock is a clock at a fixed instant, so that scripts print the same times on every run.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arms a timer that calls f once the clock has been advanced by d.
func (c *Clock) AfterFunc(d time.Duration, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timers = append(c.timers, timer{at: c.now.Add(d), f: f})
}

// Advance moves the clock on by d and fires every timer due by then, earliest first (in
// the order armed among equal deadlines). A timer fires with the clock at the advanced
// time, and outside the clock's lock: one it arms counts from that time.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		slices.SortStableFunc(c.timers, func(a, b timer) int { return a.at.Compare(b.at) })
		if len(c.timers) == 0 || c.timers[0].at.After(c.now) {
			c.mu.Unlock()
			return
		}
		t := c.timers[0]
		c.timers = c.timers[1:]
		c.mu.Unlock()
		t.f()
	}
}
