package contract

import "fmt"

// The state now against the promise: a partition whose leader, ISR or live replicas make
// an acks=all write weaker than Explain promised, or refused, gets a warning that says so.

func warnings(t Topic, part Partition, racks []string) []Warning {
	var out []Warning
	add := func(format string, args ...any) {
		out = append(out, Warning{Partition: part.ID, What: fmt.Sprintf(format, args...)})
	}
	rf := len(part.Replicas)
	if part.Leader < 0 {
		add("no leader: produce and fetch wait for an election")
	}
	var isr []Replica
	for _, r := range part.Replicas {
		switch {
		case !r.Live:
			add("replica %d%s is down", r.ID, rackSuffix(r.Rack))
		case !r.InSync:
			add("replica %d%s is out of sync", r.ID, rackSuffix(r.Rack))
		}
		if r.Live && r.InSync {
			isr = append(isr, r)
		}
	}
	minISR := min(max(t.MinInsyncReplicas, 1), rf)
	if len(isr) < minISR {
		add("%d in-sync replicas, below min.insync.replicas=%d: acks=all is refused with NOT_ENOUGH_REPLICAS", len(isr), minISR)
	}
	if t.MinInsyncRacks > 1 {
		if spanned := distinct(declaredRacks(isr)); spanned < t.MinInsyncRacks {
			add("in-sync replicas span %d declared racks, below min.insync.racks=%d: acks=all is refused (NOT_ENOUGH_RACKS)", spanned, t.MinInsyncRacks)
		}
	}
	if len(isr) < rf/2+1 {
		add("no majority in sync: acks=all waits until one is")
	}
	// A write acknowledged before a replica went down may be held by it: until it is back,
	// fewer live copies stand between that write and the next failure.
	var down []Replica
	for _, r := range part.Replicas {
		if !r.Live {
			down = append(down, r)
		}
	}
	if len(down) == 0 {
		return out
	}
	n := holders(Topic{MinInsyncReplicas: t.MinInsyncReplicas}, part)
	switch live := n - len(down); {
	case live <= 0:
		add("a write acknowledged while the down replicas were up may have no live copy until one returns")
	case live == 1:
		add("a write acknowledged while the down replicas were up may be on 1 live replica only: one more failure may lose it")
	}
	one := Topic{MinInsyncReplicas: t.MinInsyncReplicas, MinInsyncRacks: t.MinInsyncRacks}
	for _, lost := range rackLosses(racks) {
		if keptOnLoss(one, part, inRacks(part.Replicas, lost), nil) && !keptOnLoss(one, part, inRacks(part.Replicas, lost), down) {
			add("while replicas are down, the %s may lose a write acknowledged before they went down", rackLossName(lost))
		}
	}
	return out
}

func rackSuffix(rack string) string {
	if rack == "" {
		return ""
	}
	return " (rack " + rack + ")"
}

func distinct(racks []string) int {
	seen := map[string]bool{}
	for _, r := range racks {
		if r != "" {
			seen[r] = true
		}
	}
	return len(seen)
}
