package faults

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// proxiesOnly is a cluster of n brokers' proxies and racks, with no broker processes:
// enough for the cut and delay bookkeeping.
func proxiesOnly(t *testing.T, racks []string) *Cluster {
	t.Helper()
	c := &Cluster{opts: Options{N: len(racks), Racks: racks}, brokers: make([]*Broker, len(racks))}
	for id := 1; id <= len(racks); id++ {
		p, err := newProxy(int32(id), t.Logf, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.close)
		c.proxies = append(c.proxies, p)
	}
	return c
}

func TestRackDelays(t *testing.T) {
	d := RackDelays([]string{"r1", "r1", "r2"}, 200*time.Microsecond, 2*time.Millisecond)
	for _, tc := range []struct {
		from, to int
		want     time.Duration
	}{{1, 2, 200 * time.Microsecond}, {2, 1, 200 * time.Microsecond}, {1, 3, 2 * time.Millisecond}, {3, 2, 2 * time.Millisecond}} {
		if got := d(tc.from, tc.to); got != tc.want {
			t.Errorf("delay %d -> %d: %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// TestIsolateRack: a rack's brokers are cut off from every other broker, both ways, and
// still reach each other; HealAll undoes it.
func TestIsolateRack(t *testing.T) {
	c := proxiesOnly(t, []string{"r1", "r1", "r2", "r3"})
	if got := c.RackMembers("r1"); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("members of r1: %v", got)
	}
	if got := c.Racks(); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Fatalf("racks: %v", got)
	}
	if err := c.IsolateRack("r1"); err != nil {
		t.Fatal(err)
	}
	for from := 1; from <= 4; from++ {
		for to := 1; to <= 4; to++ {
			if from == to {
				continue
			}
			want := (c.RackOf(from) == "r1") != (c.RackOf(to) == "r1")
			if got := c.IsCut(from, to); got != want {
				t.Errorf("after isolating r1, %d -> %d cut: %v, want %v", from, to, got, want)
			}
		}
	}
	if err := c.IsolateRack("r9"); err == nil {
		t.Error("isolating a rack with no broker succeeded")
	}
	c.HealAll()
	for from := 1; from <= 4; from++ {
		for to := 1; to <= 4; to++ {
			if c.IsCut(from, to) {
				t.Errorf("%d -> %d still cut after HealAll", from, to)
			}
		}
	}
}

// TestStartRefusesBadRacks: a rack list that does not name one rack per broker is refused
// before anything starts.
func TestStartRefusesBadRacks(t *testing.T) {
	for _, racks := range [][]string{{"r1"}, {"r1", ""}} {
		_, err := Start(context.Background(), Options{N: 2, Racks: racks, Binary: "/nonexistent"})
		if err == nil || !strings.Contains(err.Error(), "Options.Racks") {
			t.Errorf("racks %q: %v, want a refusal naming Options.Racks", racks, err)
		}
	}
}
