package main

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The describe cells name the shortfall that makes a partition refuse acks=all: too few
// in-sync replicas, or in-sync replicas on too few racks (a rackless broker spans none).
func TestDescribeCellsShowInsyncShortfalls(t *testing.T) {
	racks := map[int32]string{1: "a", 2: "a", 3: "b"}
	three := []int32{1, 2, 3}
	for _, c := range []struct {
		name              string
		isr               []int32
		m                 insyncMinimums
		wantISR, wantRack string
	}{
		{"all in sync", three, insyncMinimums{replicas: 2, racks: 2, known: true}, "3/2 ok", "2/2 ok"},
		{"one rack left", []int32{1, 2}, insyncMinimums{replicas: 2, racks: 2, known: true}, "2/2 ok", "1/2 UNDER"},
		{"one replica left", []int32{3}, insyncMinimums{replicas: 2, racks: 1, known: true}, "1/2 UNDER", "off"},
		{"min ISR above the replicas is capped", three, insyncMinimums{replicas: 5, racks: 3, known: true}, "3/3 ok", "2/3 UNDER"},
		{"a rackless replica spans no rack", []int32{1, 4}, insyncMinimums{replicas: 1, racks: 2, known: true}, "2/1 ok", "1/2 UNDER"},
		{"configs unread", three, insyncMinimums{}, "?", "?"},
	} {
		p := kadm.PartitionDetail{Replicas: three, ISR: c.isr}
		if got := minISRCell(p, c.m); got != c.wantISR {
			t.Errorf("%s: MIN-ISR %q, want %q", c.name, got, c.wantISR)
		}
		if got := minRacksCell(p, racks, c.m); got != c.wantRack {
			t.Errorf("%s: MIN-RACKS %q, want %q", c.name, got, c.wantRack)
		}
	}
	if got := rackList([]int32{1, 3, 4}, racks); got != "[a,b,-]" {
		t.Errorf("RACKS %q, want [a,b,-]", got)
	}
}
