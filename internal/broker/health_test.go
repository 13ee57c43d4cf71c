package broker

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-io/cairn/internal/controller"
)

// refs renders partition refs as "topic/partition" for comparison.
func refs(rs []PartitionRef) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Topic+"/"+strconv.Itoa(int(r.Partition)))
	}
	return out
}

func TestHealthOverviewClassifiesPartitions(t *testing.T) {
	brokers := []controller.Broker{
		{ID: 1, Rack: "a", Live: true}, {ID: 2, Rack: "b", Live: true}, {ID: 3, Rack: "c", Live: false},
	}
	topics := []controller.Topic{
		// Listed out of order: the overview sorts by topic.
		{Name: "racked", Configs: map[string]string{"min.insync.racks": "2"}, Assignment: [][]int32{{1, 2}, {1, 2}}},
		{Name: "t", Configs: map[string]string{"min.insync.replicas": "2"}, Assignment: [][]int32{
			{1, 2, 3}, // leader 3 is down: leaderless
			{1, 2, 3}, // full ISR, but replica 3 is down: under-replicated only
			{1, 2},    // ISR [1]: under-replicated and under min ISR
			{1, 2},    // healthy
			{2, 1},    // no leader known
			{1, 2},    // leader known, ISR not yet: left out until it is
		}},
	}
	views := map[string][]healthView{
		"racked": {{leader: 1, isr: []int32{1, 2}, isrKnown: true}, {leader: 1, isr: []int32{1}, isrKnown: true}},
		"t": {
			{leader: 3, isr: []int32{3, 1, 2}, isrKnown: true},
			{leader: 1, isr: []int32{1, 2, 3}, isrKnown: true},
			{leader: 1, isr: []int32{1}, isrKnown: true},
			{leader: 2, isr: []int32{2, 1}, isrKnown: true},
			{leader: -1},
			{leader: 1},
		},
	}
	h := computeHealth(1, brokers, topics, nil, func(t controller.Topic, p int32) healthView { return views[t.Name][p] })
	if h.Healthy {
		t.Error("healthy with a broker down")
	}
	if h.ControllerID != 1 || !slices.Equal(h.AllNodes, []int32{1, 2, 3}) || !slices.Equal(h.NodesDown, []int32{3}) {
		t.Errorf("controller %d, nodes %v, down %v; want 1, [1 2 3], [3]", h.ControllerID, h.AllNodes, h.NodesDown)
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"leaderless", refs(h.LeaderlessPartitions), []string{"t/0", "t/4"}},
		{"under-replicated", refs(h.UnderReplicatedPartitions), []string{"racked/1", "t/1", "t/2"}},
		// racked/1's ISR of one meets the default min.insync.replicas of 1.
		{"under min ISR", refs(h.UnderMinISRPartitions), []string{"t/2"}},
		{"under min racks", refs(h.UnderMinRacksPartitions), []string{"racked/1"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestHealthOverviewHealthyAndEmptyListsAreArrays(t *testing.T) {
	brokers := []controller.Broker{{ID: 1, Live: true}}
	topics := []controller.Topic{{Name: "t", Assignment: [][]int32{{1}}}}
	view := func(controller.Topic, int32) healthView {
		return healthView{leader: 1, isr: []int32{1}, isrKnown: true}
	}
	h := computeHealth(1, brokers, topics, nil, view)
	if !h.Healthy {
		t.Fatalf("not healthy: %+v", h)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"healthy":true,"controller_id":1,"all_nodes":[1],"nodes_down":[],"leaderless_partitions":[],` +
		`"under_replicated_partitions":[],"under_min_isr_partitions":[],"under_min_racks_partitions":[]}`
	if string(b) != want {
		t.Errorf("JSON\n %s\nwant\n %s", b, want)
	}
	if h := computeHealth(-1, brokers, topics, nil, view); h.Healthy {
		t.Error("healthy without a controller leader")
	}
}

// A one-broker node reports its own topic's partition led and healthy once it leads it.
func TestHealthOverviewOfARunningBroker(t *testing.T) {
	b := openInRack(t, "")
	if _, err := b.CreateTopic("t", 2, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h := b.HealthOverview()
		if h.Healthy && slices.Equal(h.AllNodes, []int32{1}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not healthy within 10s: %+v", h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
