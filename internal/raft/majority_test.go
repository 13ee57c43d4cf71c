package raft

import (
	"errors"
	"testing"

	"go.etcd.io/raft/v3/quorum"
)

func TestVoterWritten(t *testing.T) {
	reports := map[uint64]uint64{2: 7, 3: 4}
	for _, tc := range []struct {
		name           string
		id, own, match uint64
		want           uint64
	}{
		{"the leader counts its own written index, not its Match", 1, 9, 5, 9},
		{"a follower's report above its Match counts", 2, 9, 5, 7},
		{"Match is a floor under an older report", 3, 9, 6, 6},
		{"a follower without a report counts its Match", 4, 9, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := voterWritten(tc.id, 1, tc.own, tc.match, reports); got != tc.want {
				t.Fatalf("voterWritten(%d) = %d, want %d", tc.id, got, tc.want)
			}
		})
	}
}

// termLog is a log whose entry i has terms[i-first]; other indexes are compacted or absent.
type termLog struct {
	first uint64
	terms []uint64
}

func (l termLog) Term(i uint64) (uint64, error) {
	if i < l.first || i-l.first >= uint64(len(l.terms)) {
		return 0, errors.New("unavailable")
	}
	return l.terms[i-l.first], nil
}

func joint(in, out []uint64) quorum.JointConfig {
	var c quorum.JointConfig
	c[0] = quorum.MajorityConfig{}
	for _, id := range in {
		c[0][id] = struct{}{}
	}
	if len(out) > 0 {
		c[1] = quorum.MajorityConfig{}
		for _, id := range out {
			c[1][id] = struct{}{}
		}
	}
	return c
}

func TestMajorityReplicated(t *testing.T) {
	log := termLog{first: 1, terms: []uint64{1, 1, 2, 2, 2, 2, 2, 2, 2, 2}} // 1..10; term 2 from 3
	for _, tc := range []struct {
		name      string
		in, out   []uint64
		acked     ackMap
		prev, own uint64
		term      uint64
		want      uint64
	}{
		{name: "a majority of three has written 8", in: []uint64{1, 2, 3},
			acked: ackMap{1: 10, 2: 8, 3: 4}, own: 10, term: 2, want: 8},
		{name: "a lone voter's written index is the boundary", in: []uint64{1},
			acked: ackMap{1: 6}, own: 6, term: 2, want: 6},
		{name: "the boundary never moves back", in: []uint64{1, 2, 3},
			acked: ackMap{1: 10, 2: 5, 3: 4}, prev: 7, own: 10, term: 2, want: 7},
		{name: "an entry of an earlier term does not count", in: []uint64{1, 2, 3},
			acked: ackMap{1: 10, 2: 2, 3: 2}, own: 10, term: 2, want: 0},
		{name: "nor one this leader's log no longer holds", in: []uint64{1, 2, 3},
			acked: ackMap{1: 12, 2: 12, 3: 12}, own: 12, term: 2, prev: 3, want: 3},
		{name: "not above the leader's own written index", in: []uint64{1, 2, 3},
			acked: ackMap{1: 10, 2: 10, 3: 10}, own: 6, term: 2, want: 0},
		{name: "a voter missing from acked counts as nothing written", in: []uint64{1, 2, 3},
			acked: ackMap{1: 10, 2: 9}, own: 10, term: 2, want: 9},
		{name: "joint: the incoming half alone is not enough", in: []uint64{1, 2, 3}, out: []uint64{1, 4, 5},
			acked: ackMap{1: 10, 2: 10, 3: 10, 4: 5, 5: 4}, own: 10, term: 2, want: 5},
		{name: "joint: nor the outgoing half alone", in: []uint64{1, 2, 3}, out: []uint64{1, 4, 5},
			acked: ackMap{1: 10, 2: 6, 3: 3, 4: 10, 5: 10}, own: 10, term: 2, want: 6},
		{name: "joint: a majority of each half", in: []uint64{1, 2, 3}, out: []uint64{1, 4, 5},
			acked: ackMap{1: 10, 2: 9, 3: 3, 4: 9, 5: 3}, own: 10, term: 2, want: 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := majorityReplicated(joint(tc.in, tc.out), tc.acked, tc.prev, tc.own, tc.term, log)
			if got != tc.want {
				t.Fatalf("majorityReplicated = %d, want %d", got, tc.want)
			}
		})
	}
}
