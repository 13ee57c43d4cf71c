package controller

import (
	"reflect"
	"testing"
)

func TestRackShortfalls(t *testing.T) {
	racks := map[int32]string{1: "r1", 2: "r1", 3: "r2", 4: "", 5: "r3"} // 6 is unregistered
	tests := []struct {
		name       string
		assignment [][]int32
		first      int32
		need       int
		want       []RackShortfall
	}{
		{name: "1 is off even without racks", assignment: [][]int32{{4, 6}}, need: 1},
		{name: "0 and below are off", assignment: [][]int32{{4}}, need: 0},
		{name: "met exactly", assignment: [][]int32{{1, 3, 5}}, need: 3},
		{name: "met with room", assignment: [][]int32{{1, 2, 3, 5}}, need: 2},
		{name: "same rack twice counts once", assignment: [][]int32{{1, 2, 4}}, need: 2,
			want: []RackShortfall{{Partition: 0, Replicas: []int32{1, 2, 4}, Racks: []string{"r1", "r1", ""}, Declared: 1}}},
		{name: "no rack and unregistered count for none", assignment: [][]int32{{4, 6}}, need: 2,
			want: []RackShortfall{{Partition: 0, Replicas: []int32{4, 6}, Racks: []string{"", ""}, Declared: 0}}},
		{name: "only the short partitions, numbered from first", first: 7, need: 2,
			assignment: [][]int32{{1, 3}, {2, 1}, {5, 1}, {4, 2}},
			want: []RackShortfall{
				{Partition: 8, Replicas: []int32{2, 1}, Racks: []string{"r1", "r1"}, Declared: 1},
				{Partition: 10, Replicas: []int32{4, 2}, Racks: []string{"", "r1"}, Declared: 1},
			}},
		{name: "above the replication factor", assignment: [][]int32{{1, 3}}, need: 3,
			want: []RackShortfall{{Partition: 0, Replicas: []int32{1, 3}, Racks: []string{"r1", "r2"}, Declared: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RackShortfalls(racks, tt.assignment, tt.first, tt.need)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRackShortfallDescribe(t *testing.T) {
	tests := []struct {
		s    RackShortfall
		want string
	}{
		{RackShortfall{Partition: 1, Replicas: []int32{1, 2, 4}, Racks: []string{"r1", "r1", ""}, Declared: 1},
			"partition orders-1: its replicas 1 (rack r1), 2 (rack r1), 4 (no rack) span 1 declared rack"},
		{RackShortfall{Partition: 0, Replicas: []int32{1, 2}, Racks: []string{"", ""}, Declared: 0},
			"partition orders-0: its replicas 1 (no rack), 2 (no rack) span 0 declared racks"},
		{RackShortfall{Partition: 3, Replicas: []int32{5, 3}, Racks: []string{"r3", "r2"}, Declared: 2},
			"partition orders-3: its replicas 5 (rack r3), 3 (rack r2) span 2 declared racks"},
	}
	for _, tt := range tests {
		if got := tt.s.Describe("orders"); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}
