package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// What `topic describe` shows of racks and in-sync minimums: a partition whose ISR or
// whose ISR's racks fall short of the minimum refuses acks=all produce, and the operator
// should see which one and why without reading the broker's metrics.

// brokerRacks maps each broker in a metadata answer to its declared rack ("": none).
func brokerRacks(brokers kadm.BrokerDetails) map[int32]string {
	racks := make(map[int32]string, len(brokers))
	for _, b := range brokers {
		if b.Rack != nil {
			racks[b.NodeID] = *b.Rack
		}
	}
	return racks
}

// rackList renders each replica's rack in replica order, "-" for a broker without one.
func rackList(replicas []int32, racks map[int32]string) string {
	s := make([]string, len(replicas))
	for i, id := range replicas {
		s[i] = orDash(racks[id])
	}
	return "[" + strings.Join(s, ",") + "]"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// insyncMinimums are a topic's min.insync.replicas and min.insync.racks as its configs
// answer them; known is false when the configs could not be read. A broker that does not
// report min.insync.racks (any but Cairn) has no rack rule: 1.
type insyncMinimums struct {
	replicas, racks int
	known           bool
}

func topicMinimums(rcs kadm.ResourceConfigs, topic string) insyncMinimums {
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		return insyncMinimums{}
	}
	m := insyncMinimums{replicas: 1, racks: 1, known: true}
	for _, c := range rc.Configs {
		if c.Value == nil {
			continue
		}
		v, err := strconv.Atoi(*c.Value)
		if err != nil {
			continue
		}
		switch c.Key {
		case "min.insync.replicas":
			m.replicas = v
		case "min.insync.racks":
			m.racks = v
		}
	}
	return m
}

// minISRCell says whether the ISR meets min.insync.replicas, capped by the replica count
// as the broker caps it: "in-sync/minimum ok" or "... UNDER".
func minISRCell(p kadm.PartitionDetail, m insyncMinimums) string {
	if !m.known {
		return "?"
	}
	need := max(1, min(m.replicas, len(p.Replicas)))
	return shortfallCell(len(p.ISR), need)
}

// minRacksCell says whether the ISR spans min.insync.racks declared racks; "off" at 1.
func minRacksCell(p kadm.PartitionDetail, racks map[int32]string, m insyncMinimums) string {
	switch {
	case !m.known:
		return "?"
	case m.racks <= 1:
		return "off"
	}
	var spanned []string
	for _, id := range p.ISR {
		if r := racks[id]; r != "" && !slices.Contains(spanned, r) {
			spanned = append(spanned, r)
		}
	}
	return shortfallCell(len(spanned), m.racks)
}

func shortfallCell(have, need int) string {
	verdict := "ok"
	if have < need {
		verdict = "UNDER"
	}
	return fmt.Sprintf("%d/%d %s", have, need, verdict)
}
