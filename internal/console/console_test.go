package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/contract"
)

// fakeSource is a three-broker cluster with one topic, "orders" (2 partitions, RF 3), whose
// partition 1 has broker 3 out of its ISR, and one consumer group, "billing".
type fakeSource struct{ silent int32 }

func (fakeSource) NodeID() int32     { return 1 }
func (fakeSource) ClusterID() string { return "c-1" }
func (fakeSource) HealthOverview() broker.HealthOverview {
	return broker.HealthOverview{ControllerID: 2, AllNodes: []int32{1, 2, 3},
		UnderReplicatedPartitions: []broker.PartitionRef{{Topic: "orders", Partition: 1}}}
}
func (fakeSource) BrokerSummaries() []broker.BrokerSummary {
	return []broker.BrokerSummary{
		{NodeID: 1, KafkaAddr: "127.0.0.1:1", Rack: "rack-a", IsAlive: true, MembershipStatus: "active", Leaders: 2, Replicas: 2},
		{NodeID: 2, KafkaAddr: "127.0.0.1:2", Rack: "rack-b", IsAlive: true, MembershipStatus: "active", Replicas: 2},
		{NodeID: 3, KafkaAddr: "127.0.0.1:3", Rack: "rack-c", IsAlive: true, Maintenance: true, MembershipStatus: "draining", Replicas: 2},
	}
}
func (fakeSource) Topics() []broker.TopicInfo {
	return []broker.TopicInfo{{Name: "orders", Partitions: 2, ReplicationFactor: 3}}
}
func (fakeSource) PartitionViews(topic string) []broker.PartitionView {
	if topic != "orders" {
		return nil
	}
	return []broker.PartitionView{
		{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
		{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}},
	}
}
func (f fakeSource) NodeViews(_ context.Context, q broker.NodeViewQuery) []broker.NodeView {
	var out []broker.NodeView
	for id := int32(1); id <= 3; id++ {
		v := broker.NodeView{Broker: id, Answered: id != f.silent}
		if !v.Answered {
			out = append(out, v)
			continue
		}
		if len(q.Topics) > 0 {
			for p := int32(0); p < 2; p++ {
				end := int64(100)
				if id == 3 && p == 1 {
					end = 40 // the follower out of the ISR
				}
				v.Replicas = append(v.Replicas, broker.ReplicaView{Topic: "orders", Partition: p, IsLeader: id == 1,
					LogEnd: end, Flushed: end - 10, MajorityReplicated: min(end, 90), Committed: min(end, 90), LastVisible: min(end, 90)})
			}
		}
		if q.Groups && id == 2 {
			v.Groups = []broker.GroupView{{Group: "billing", State: "Stable", ProtocolType: "consumer", Protocol: "range",
				Members: []broker.GroupMemberView{{MemberID: "m-1", ClientID: "billing-app", ClientHost: "/127.0.0.1",
					Assigned: []broker.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}}}},
				Offsets: []broker.CommittedOffset{{Topic: "orders", Partition: 0, Offset: 85}}}}
		}
		out = append(out, v)
	}
	return out
}
func (fakeSource) Contract(topic string) (contract.Contract, bool) {
	if topic != "orders" {
		return contract.Contract{}, false
	}
	return contract.Explain(contract.Topic{Name: "orders", MinInsyncReplicas: 2, MinInsyncRacks: 1,
		Partitions: []contract.Partition{{ID: 0, Leader: 1, Replicas: []contract.Replica{{ID: 1, Live: true, InSync: true}, {ID: 2, Live: true, InSync: true}, {ID: 3, Live: true, InSync: false}}}}},
		contract.RefusedForDurability()), true
}
func (fakeSource) Reconfigurations() []Reconfiguration {
	return []Reconfiguration{{Topic: "orders", Partition: 0, From: []int32{1, 2, 3}, To: []int32{1, 2, 4}, Adding: []int32{4},
		Removing: []int32{3}, Phase: "catching up", BytesMoved: 300, BytesLeft: 100}}
}

type fakeLab struct {
	st      LabStatus
	started int
}

func (l *fakeLab) Start() error {
	if l.st.Running {
		return errors.New("a lab is already running")
	}
	l.started++
	l.st = LabStatus{Running: true, Started: "now", Output: "step 1 <b>"}
	return nil
}
func (l *fakeLab) Status() LabStatus { return l.st }

func get(t *testing.T, h http.Handler, method, path string, hdr ...string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

func wantAll(t *testing.T, page, body string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Errorf("%s: missing %q in\n%s", page, p, body)
		}
	}
}

func TestPagesShowTheCluster(t *testing.T) {
	h := New(fakeSource{}, nil, nil)
	code, body := get(t, h, "GET", "/console/")
	if code != 200 {
		t.Fatalf("cluster page: %d", code)
	}
	wantAll(t, "cluster", body, "Not healthy", "Under-replicated", "orders</a>/1", "rack-c", "in maintenance", "draining", "controller</span>", "this broker")

	_, body = get(t, h, "GET", "/console/topics")
	wantAll(t, "topics", body, `href="/console/topics/orders"`, "<td>2</td><td>3</td>", "fsynced on 2 replicas</td>")

	_, body = get(t, h, "GET", "/console/topics/orders")
	wantAll(t, "topic", body, "out of ISR", "Partition 1", "majority replicated", "width: 40.0%", "width: 90.0%",
		"acks=all", "whole-cluster power cut", "flush.messages", `data-refresh="/console/topics/orders/boundaries"`)

	code, frag := get(t, h, "GET", "/console/topics/orders/boundaries")
	if code != 200 || strings.Contains(frag, "<html") || !strings.Contains(frag, "width: 40.0%") {
		t.Errorf("boundaries fragment: %d\n%s", code, frag)
	}

	_, body = get(t, h, "GET", "/console/groups")
	// Partition 0: end 90 (the leader's visible), committed 85; partition 1: no commit.
	wantAll(t, "groups", body, "billing", "Stable", "billing-app", "orders/0 orders/1", "<td>85</td>", "<td>90</td>", "<td>5</td>",
		`<strong class="total-lag">5</strong>`, "coordinator broker 2")

	_, body = get(t, h, "GET", "/console/reconfigurations")
	wantAll(t, "reconfigurations", body, "1, 2, 3", "1, 2, 4", "catching up", "75.0%")
	if code, frag := get(t, h, "GET", "/console/reconfigurations/table"); code != 200 || strings.Contains(frag, "<html") || !strings.Contains(frag, "75.0%") {
		t.Errorf("reconfigurations fragment: %d\n%s", code, frag)
	}
}

func TestGroupsPageNamesSilentBrokers(t *testing.T) {
	_, body := get(t, New(fakeSource{silent: 2}, nil, nil), "GET", "/console/groups")
	wantAll(t, "groups", body, "Brokers 2 did not answer", "No consumer groups")
}

func TestBadPathsAnswerNotFound(t *testing.T) {
	h := New(fakeSource{}, nil, nil)
	for _, path := range []string{"/console/topics/nope", "/console/topics/nope/boundaries", "/console/nothing", "/console/lab/output"} {
		if code, body := get(t, h, "GET", path); code != http.StatusNotFound || body == "" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	if code, body := get(t, h, "POST", "/console/lab"); code != http.StatusNotFound || !strings.Contains(body, "--simulate-power-loss") {
		t.Errorf("lab without a lab: %d %s", code, body)
	}
	if code, _ := get(t, h, "POST", "/console/topics"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST to a page: %d", code)
	}
	_, body := get(t, h, "GET", "/console/lab")
	wantAll(t, "lab page without a lab", body, "was not started with --simulate-power-loss", "cairn lab")
}

func TestLabRunsFromThePageOnlyFromItsOwnOrigin(t *testing.T) {
	lab := &fakeLab{}
	h := New(fakeSource{}, lab, nil)
	_, body := get(t, h, "GET", "/console/lab")
	wantAll(t, "lab", body, `id="run-lab"`)
	if code, _ := get(t, h, "POST", "/console/lab", "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden || lab.started != 0 {
		t.Fatalf("a cross-site POST: %d, started %d", code, lab.started)
	}
	if code, _ := get(t, h, "POST", "/console/lab", "Sec-Fetch-Site", "same-origin"); code != http.StatusSeeOther || lab.started != 1 {
		t.Fatalf("a same-origin POST: %d, started %d", code, lab.started)
	}
	if code, body := get(t, h, "POST", "/console/lab", "Sec-Fetch-Site", "same-origin"); code != http.StatusConflict || !strings.Contains(body, "already running") {
		t.Fatalf("a second run: %d %s", code, body)
	}
	_, body = get(t, h, "GET", "/console/lab")
	wantAll(t, "lab running", body, "Running", "step 1 &lt;b&gt;", `data-refresh="/console/lab/output"`)
	if strings.Contains(body, `id="run-lab"`) {
		t.Error("the run button is offered while a lab runs")
	}
}
