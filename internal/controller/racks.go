package controller

import (
	"fmt"
	"strings"
)

// RackShortfall is a partition whose replicas span fewer declared racks than a
// min.insync.racks value needs, so that no acks=all write to it could ever be admitted.
type RackShortfall struct {
	Partition int32
	Replicas  []int32
	Racks     []string // Racks[i] is Replicas[i]'s declared rack; "" declares none
	Declared  int      // distinct declared racks among the replicas
}

// RackShortfalls returns the partitions of assignment (assignment[p] is partition p's
// replica list) whose replicas span fewer than need distinct declared racks. rackOf gives a
// broker's declared rack; a broker that is missing or declares "" contributes no rack,
// unlike in placement: asking for two racks where none is declared must fail, not pass.
// need <= 1 always passes, since 1 means the rule is off even where no rack is declared.
// first is the number of the first partition in assignment (CreatePartitions checks only
// the partitions it adds).
func RackShortfalls(rackOf map[int32]string, assignment [][]int32, first int32, need int) []RackShortfall {
	if need <= 1 {
		return nil
	}
	var out []RackShortfall
	for i, replicas := range assignment {
		racks := make([]string, len(replicas))
		distinct := map[string]bool{}
		for j, id := range replicas {
			racks[j] = rackOf[id]
			if racks[j] != "" {
				distinct[racks[j]] = true
			}
		}
		if len(distinct) < need {
			out = append(out, RackShortfall{Partition: first + int32(i), Replicas: replicas, Racks: racks, Declared: len(distinct)})
		}
	}
	return out
}

// Describe says, for an operator, which replicas of topic's partition sit in which racks:
// "partition orders-1: its replicas 1 (rack r1), 2 (rack r1), 4 (no rack) span 1 declared rack".
func (s RackShortfall) Describe(topic string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "partition %s-%d: its replicas ", topic, s.Partition)
	for i, id := range s.Replicas {
		if i > 0 {
			b.WriteString(", ")
		}
		if s.Racks[i] == "" {
			fmt.Fprintf(&b, "%d (no rack)", id)
		} else {
			fmt.Fprintf(&b, "%d (rack %s)", id, s.Racks[i])
		}
	}
	noun := "racks"
	if s.Declared == 1 {
		noun = "rack"
	}
	fmt.Fprintf(&b, " span %d declared %s", s.Declared, noun)
	return b.String()
}
