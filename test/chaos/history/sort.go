package history

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Helpers that give the checker a deterministic order of map keys, so that its details
// come out the same for the same history.

func describe(m map[string]string) string {
	ks := sortedKeys(m)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%q (%s)", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func tpCmp(a, b TP) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

func sortKeys(ks []obsKey) {
	slices.SortFunc(ks, func(a, b obsKey) int { return cmp.Or(tpCmp(a.tp, b.tp), cmp.Compare(a.off, b.off)) })
}

// keysBy returns m's keys in the order compare gives.
func keysBy[K comparable, V any](m map[K]V, compare func(a, b K) int) []K {
	return slices.SortedFunc(maps.Keys(m), compare)
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K { return slices.Sorted(maps.Keys(m)) }

func sortedTPs[V any](m map[TP]V) []TP { return keysBy(m, tpCmp) }

func sortedPTPs[V any](m map[ptp]V) []ptp {
	return keysBy(m, func(a, b ptp) int { return cmp.Or(strings.Compare(a.process, b.process), tpCmp(a.tp, b.tp)) })
}

func sortedGTPs[V any](m map[gtp]V) []gtp {
	return keysBy(m, func(a, b gtp) int { return cmp.Or(strings.Compare(a.group, b.group), tpCmp(a.tp, b.tp)) })
}
