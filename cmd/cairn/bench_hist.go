package main

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// A log-bucketed latency histogram for `cairn bench`, in the spirit of
// HdrHistogram: every power-of-two range of values is split into histSub
// equal sub-buckets, so a recorded value is known to within 1/histSub (0.8 %)
// of itself, and memory is fixed (histBuckets counters, about 58 KiB) however
// many values are recorded. Values are non-negative integers (nanoseconds);
// values below histSub are counted exactly.

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // sub-buckets per power of two
	// The largest shift is 64-1-histSubBits, so the largest index is
	// (64-1-histSubBits)*histSub + 2*histSub - 1.
	histBuckets = (64 - histSubBits + 1) * histSub
)

type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    float64
	min    uint64
	max    uint64
}

// histIndex is the bucket of v. Values below 2*histSub have a bucket each;
// above, v's top histSubBits+1 bits pick the bucket.
func histIndex(v uint64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(v) - 1 - histSubBits
	return shift*histSub + int(v>>uint(shift))
}

// histBucketHigh is the largest value that falls into bucket idx.
func histBucketHigh(idx int) uint64 {
	if idx < 2*histSub {
		return uint64(idx)
	}
	shift := idx/histSub - 1
	mantissa := uint64(idx - shift*histSub)
	return (mantissa+1)<<uint(shift) - 1
}

func (h *histogram) record(v int64) {
	if v < 0 {
		v = 0
	}
	u := uint64(v)
	h.counts[histIndex(u)]++
	if h.n == 0 || u < h.min {
		h.min = u
	}
	if u > h.max {
		h.max = u
	}
	h.n++
	h.sum += float64(u)
}

// merge adds every value recorded in o to h.
func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

func (h *histogram) reset() {
	if h.n == 0 {
		return
	}
	clear(h.counts[:])
	h.n, h.sum, h.min, h.max = 0, 0, 0, 0
}

func (h *histogram) count() uint64 { return h.n }

// quantile returns the value at quantile q (0 < q <= 1): the smallest bucket
// bound such that at least q of the values are at or below it, clamped to the
// recorded minimum and maximum (so quantile(1) is the exact maximum). It is 0
// for an empty histogram.
func (h *histogram) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(1, min(rank, h.n))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := max(h.min, min(histBucketHigh(i), h.max))
			return int64(v)
		}
	}
	return int64(h.max)
}

func (h *histogram) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// latencySummary is a histogram of nanoseconds rendered in milliseconds.
type latencySummary struct {
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	P999Ms  float64 `json:"p999_ms"`
	MaxMs   float64 `json:"max_ms"`
	MeanMs  float64 `json:"mean_ms"`
	Samples uint64  `json:"latency_samples"`
}

func nsToMs(ns float64) float64 { return math.Round(ns/1e3) / 1e3 } // ms with µs precision

func (h *histogram) summary() *latencySummary {
	return &latencySummary{
		P50Ms:   nsToMs(float64(h.quantile(0.50))),
		P99Ms:   nsToMs(float64(h.quantile(0.99))),
		P999Ms:  nsToMs(float64(h.quantile(0.999))),
		MaxMs:   nsToMs(float64(h.max)),
		MeanMs:  nsToMs(h.mean()),
		Samples: h.n,
	}
}

// latencyRecorder is one writer's pair of histograms: interval, drained every
// second for the progress line, and total, the values that count toward the
// final figures. The lock is uncontended but for the once-a-second drain.
type latencyRecorder struct {
	mu       sync.Mutex
	interval histogram
	total    histogram
}

// record adds d to the progress interval and, when counted, to the total.
func (r *latencyRecorder) record(d time.Duration, counted bool) {
	r.mu.Lock()
	r.interval.record(int64(d))
	if counted {
		r.total.record(int64(d))
	}
	r.mu.Unlock()
}

// latencySet is the recorders of all writers of one kind of latency.
type latencySet struct {
	mu      sync.Mutex
	recs    []*latencyRecorder
	scratch histogram
}

func (s *latencySet) add() *latencyRecorder {
	r := &latencyRecorder{}
	s.mu.Lock()
	s.recs = append(s.recs, r)
	s.mu.Unlock()
	return r
}

// intervalQuantile empties every recorder's interval histogram and returns
// quantile q over their union, and how many values it had.
func (s *latencySet) intervalQuantile(q float64) (time.Duration, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scratch.reset()
	for _, r := range s.recs {
		r.mu.Lock()
		s.scratch.merge(&r.interval)
		r.interval.reset()
		r.mu.Unlock()
	}
	return time.Duration(s.scratch.quantile(q)), s.scratch.count()
}

// total merges every recorder's counted values into a new histogram.
func (s *latencySet) total() *histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &histogram{}
	for _, r := range s.recs {
		r.mu.Lock()
		h.merge(&r.total)
		r.mu.Unlock()
	}
	return h
}
