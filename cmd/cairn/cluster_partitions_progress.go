package main

import (
	"fmt"
	"strings"
	"time"
)

// The progress of `partitions move-status --watch`: the rate of each move comes from the
// bytes moved between two polls, smoothed over the polls (a move's catch-up runs in
// bursts), and the ETA is the bytes left at that rate. The first poll has no rate yet.

// rateSmoothing is the weight of the newest interval's rate in the smoothed rate.
const rateSmoothing = 0.5

// progressBarWidth is the bar's width in characters, inside its brackets.
const progressBarWidth = 30

type moveSample struct {
	at    time.Time
	moved int64
	rate  float64 // bytes per second, smoothed
	rated bool    // rate is measured (two polls seen)
}

// moveProgress remembers each move's last poll.
type moveProgress struct {
	last map[partitionKey]moveSample
}

func newMoveProgress() *moveProgress { return &moveProgress{last: map[partitionKey]moveSample{}} }

func (p *moveProgress) forget(k partitionKey) { delete(p.last, k) }

// progressRow is what one poll says of a move.
type progressRow struct {
	known    bool // the driver reports bytes moved and left
	fraction float64
	rate     float64
	rated    bool
	eta      time.Duration
}

// observe records a poll of m at now and returns its progress.
func (p *moveProgress) observe(now time.Time, m reconfiguration) progressRow {
	f, ok := fraction(m)
	if !ok {
		p.forget(m.key())
		return progressRow{}
	}
	row := progressRow{known: true, fraction: f}
	cur := moveSample{at: now, moved: *m.BytesMoved}
	prev, seen := p.last[m.key()]
	switch {
	case seen && !now.After(prev.at):
		cur = prev // no time has passed: nothing new to measure
	case seen && cur.moved >= prev.moved:
		inst := float64(cur.moved-prev.moved) / now.Sub(prev.at).Seconds()
		cur.rate, cur.rated = inst, true
		if prev.rated {
			cur.rate = rateSmoothing*inst + (1-rateSmoothing)*prev.rate
		}
	}
	// Otherwise a first poll, or fewer bytes moved than before (the move restarted its
	// catch-up, after a leader change say): measure again from here.
	p.last[m.key()] = cur
	row.rate, row.rated = cur.rate, cur.rated
	if cur.rated && cur.rate > 0 {
		row.eta = time.Duration(float64(*m.BytesLeft) / cur.rate * float64(time.Second))
	}
	return row
}

// etaText says when a move should finish at its current rate.
func (r progressRow) etaText(left int64) string {
	switch {
	case !r.rated:
		return "ETA measuring"
	case left == 0:
		return "ETA now"
	case r.rate <= 0:
		return "ETA unknown (stalled)"
	}
	return "ETA " + roundDuration(r.eta).String()
}

// roundDuration keeps an ETA readable: seconds under an hour, minutes above.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}

// render is the move's line(s): a bar on a terminal, one plain line elsewhere.
func (r progressRow) render(m reconfiguration, terminal bool) string {
	head := fmt.Sprintf("%s  %s -> %s  %s", m.name(), int32List(m.Original), int32List(m.Target), phaseOf(m))
	if !r.known {
		if terminal {
			return head + "\n  (the move driver reports no byte counts yet)"
		}
		return head + ": no byte counts yet"
	}
	moved, left := *m.BytesMoved, *m.BytesLeft
	rate := "rate measuring"
	if r.rated {
		rate = humanBytes(int64(r.rate)) + "/s"
	}
	stats := []string{fmt.Sprintf("%3.0f%%", r.fraction*100), humanBytes(moved) + " moved", humanBytes(left) + " left", rate, r.etaText(left)}
	if !terminal {
		return head + ": " + strings.Join(stats, ", ")
	}
	filled := min(progressBarWidth, max(0, int(r.fraction*progressBarWidth)))
	bar := "[" + strings.Repeat("#", filled) + strings.Repeat(".", progressBarWidth-filled) + "]"
	return head + "\n  " + bar + "  " + strings.Join(stats, "  ")
}
