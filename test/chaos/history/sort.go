package history

import (
	"fmt"
	"sort"
	"strings"
)

// Helpers that give the checker a deterministic order of map keys, so that its details
// come out the same for the same history.

func describe(m map[string]string) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%q (%s)", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func tpLess(a, b TP) bool {
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	return a.Partition < b.Partition
}

func sortKeys(ks []obsKey) {
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].tp != ks[j].tp {
			return tpLess(ks[i].tp, ks[j].tp)
		}
		return ks[i].off < ks[j].off
	})
}

func sortedTPs[V any](m map[TP]V) []TP {
	ks := make([]TP, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return tpLess(ks[i], ks[j]) })
	return ks
}

func sortedPTPs[V any](m map[ptp]V) []ptp {
	ks := make([]ptp, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].process != ks[j].process {
			return ks[i].process < ks[j].process
		}
		return tpLess(ks[i].tp, ks[j].tp)
	})
	return ks
}

func sortedGTPs[V any](m map[gtp]V) []gtp {
	ks := make([]gtp, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].group != ks[j].group {
			return ks[i].group < ks[j].group
		}
		return tpLess(ks[i].tp, ks[j].tp)
	})
	return ks
}
