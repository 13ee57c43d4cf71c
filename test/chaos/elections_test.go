package main

import (
	"slices"
	"strings"
	"testing"
)

func TestLeaderChangesNamesEveryRisenEpoch(t *testing.T) {
	before := map[int32]leaderState{0: {1, 5, 1}, 1: {2, 3, 2}, 2: {3, 7, 3}}
	after := map[int32]leaderState{0: {1, 5, 1}, 1: {3, 4, 2}, 2: {3, 8, 3}}
	got := leaderChanges(before, after)
	want := []string{"partition 1: epoch 3 → 4, leader 2 → 3", "partition 2: epoch 7 → 8, leader 3 → 3"}
	if !slices.Equal(got, want) {
		t.Fatalf("changes = %q, want %q", got, want)
	}
	if err := electionReport(got, 3); err == nil || !strings.Contains(err.Error(), "2 partitions changed leader") {
		t.Fatalf("a calm session with two elections gave %v", err)
	}
	if err := electionReport(leaderChanges(before, before), 3); err != nil {
		t.Fatalf("a calm session without elections failed: %v", err)
	}
}

func TestUnsettledListsPartitionsOffTheirPreferredReplica(t *testing.T) {
	states := map[int32]leaderState{0: {1, 1, 1}, 1: {1, 1, 2}, 2: {3, 1, 2}}
	if got := unsettled(states); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("unsettled = %v, want [1 2]", got)
	}
}
