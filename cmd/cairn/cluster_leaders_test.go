package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestMaintenanceEnableDisableStatus(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("PUT /v1/brokers/{id}/maintenance", 200, `{}`)
	f.answer("DELETE /v1/brokers/{id}/maintenance", 200, `{}`)
	f.answer("GET /v1/brokers/{id}/maintenance", 200,
		`{"draining":true,"finished":false,"leaders_left":3,"failed":1,"errors":["t/0: broker 2 is not in sync"]}`)
	base := []string{"cluster", "--admin-url", f.srv.URL, "maintenance"}
	if out := mustRun(t, "", append(base, "enable", "2")...); !strings.Contains(out, "maintenance mode on for broker 2") {
		t.Errorf("enable: %s", out)
	}
	if out := mustRun(t, "", append(base, "disable", "2")...); !strings.Contains(out, "maintenance mode off for broker 2") {
		t.Errorf("disable: %s", out)
	}
	out := mustRun(t, "", append(base, "status", "2")...)
	want := "Broker 2: in maintenance, draining\nLeaderships left: 3\nFailed transfers: 1\n  error: t/0: broker 2 is not in sync\n"
	if out != want {
		t.Errorf("status:\n%s\nwant\n%s", out, want)
	}
	if want := []string{"PUT /v1/brokers/2/maintenance", "DELETE /v1/brokers/2/maintenance", "GET /v1/brokers/2/maintenance"}; !slices.Equal(f.asked(), want) {
		t.Errorf("asked %q, want %q", f.asked(), want)
	}
}

func TestMaintenanceRefusal(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("PUT /v1/brokers/{id}/maintenance", 409, `{"message":"broker 1 is in maintenance already: one at a time","code":409}`)
	f.answer("PUT /v1/brokers/9/maintenance", 404, `{"message":"no broker 9","code":404}`)
	wantErr(t, "", []string{"cluster", "--admin-url", f.srv.URL, "maintenance", "enable", "2"}, "broker 1 is in maintenance already: one at a time")
	wantErr(t, "", []string{"cluster", "--admin-url", f.srv.URL, "maintenance", "enable", "9"}, "no broker 9 (HTTP 404)")
}

func TestLeadersTransfer(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("POST /v1/partitions/orders/0/transfer_leadership", 200, `{}`)
	f.answer("POST /v1/partitions/orders/1/transfer_leadership", 400, `{"message":"broker 7 is not a replica of orders/1","code":400}`)
	out := mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "leaders", "transfer", "orders/0", "--to", "3")
	if !strings.Contains(out, "leadership of orders/0 handed to broker 3") {
		t.Errorf("output: %s", out)
	}
	wantErr(t, "", []string{"cluster", "--admin-url", f.srv.URL, "leaders", "transfer", "orders/1", "--to", "7"},
		"broker 7 is not a replica of orders/1", "HTTP 400")
	if want := []string{"POST /v1/partitions/orders/0/transfer_leadership?target=3", "POST /v1/partitions/orders/1/transfer_leadership?target=7"}; !slices.Equal(f.asked(), want) {
		t.Errorf("asked %q, want %q", f.asked(), want)
	}
}

// balance asks for a preferred election of every partition and prints what moved; the
// fake cluster hands each partition's leadership to the next broker on every election.
func TestLeadersBalance(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	seeds := strings.Join(c.ListenAddrs(), ",")
	out := mustRun(t, "", "cluster", "-b", seeds, "leaders", "balance")
	for _, w := range []string{"PARTITION  FROM  TO  RESULT", "orders/0", "orders/1", "moved",
		"2 leaderships moved to their preferred replica, 0 already there, 0 not moved"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	out = mustRun(t, "", "cluster", "-b", seeds, "leaders", "balance", "--json")
	if !strings.HasPrefix(out, `[{"topic":"orders","partition":0,"from":`) || !strings.Contains(out, `"moved":true`) {
		t.Errorf("--json: %s", out)
	}
}

func TestLeadersBalanceReportsRefusals(t *testing.T) {
	md := kadm.Metadata{Topics: kadm.TopicDetails{"t": {Topic: "t", Partitions: kadm.PartitionDetails{
		0: {Partition: 0, Leader: 2, Replicas: []int32{1, 2}},
		1: {Partition: 1, Leader: 1, Replicas: []int32{1, 2}},
		2: {Partition: 2, Leader: 2, Replicas: []int32{3, 2}},
	}}}}
	res := kadm.ElectLeadersResults{"t": {
		0: {Topic: "t", Partition: 0},
		1: {Topic: "t", Partition: 1, Err: kerr.ElectionNotNeeded},
		2: {Topic: "t", Partition: 2, Err: kerr.PreferredLeaderNotAvailable, ErrMessage: "broker 3 is down"},
	}}
	root := newTestRoot()
	var out strings.Builder
	root.SetOut(&out)
	err := printElections(root, false, electionOutcomes(md, res))
	if err == nil || err.Error() != "1 of 3 partitions could not move to their preferred replica" {
		t.Errorf("error: %v", err)
	}
	want := "PARTITION  FROM  TO  RESULT\n" +
		"t/0        2     1   moved\n" +
		"t/2        2     3   not moved: " + brokerError(kerr.PreferredLeaderNotAvailable, "broker 3 is down").Error() + "\n" +
		"1 leaderships moved to their preferred replica, 1 already there, 1 not moved\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant\n%s", out.String(), want)
	}
}

func TestDecommissionCommands(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("PUT /v1/brokers/{id}/decommission", 200, `{}`)
	f.answer("PUT /v1/brokers/{id}/recommission", 200, `{}`)
	f.answer("GET /v1/brokers/{id}/decommission", 200,
		`{"finished":false,"replicas_left":2,"allocation_failures":["t/1: min.insync.racks=3 cannot be met"],"partitions":[{"topic":"t","partition":0,"moving_to":[4],"bytes_moved":100,"bytes_left":50}]}`)
	base := []string{"cluster", "--admin-url", f.srv.URL}
	if out := mustRun(t, "", append(base, "decommission", "2")...); !strings.Contains(out, "decommissioning broker 2") {
		t.Errorf("decommission: %s", out)
	}
	out := mustRun(t, "", append(base, "decommission-status", "2")...)
	for _, want := range []string{"Broker 2: draining", "Replicas left: 2", "t/0", "100 B", "cannot place: t/1: min.insync.racks=3"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if out := mustRun(t, "", append(base, "recommission", "2")...); !strings.Contains(out, "broker 2 recommissioned") {
		t.Errorf("recommission: %s", out)
	}
	if want := []string{"PUT /v1/brokers/2/decommission", "GET /v1/brokers/2/decommission", "PUT /v1/brokers/2/recommission"}; !slices.Equal(f.asked(), want) {
		t.Errorf("asked %q, want %q", f.asked(), want)
	}
}

func TestDecommissionRefusal(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("PUT /v1/brokers/{id}/decommission", 400, `{"message":"partition t-0 has 3 replicas but only 2 other active brokers could hold them","code":400}`)
	wantErr(t, "", []string{"cluster", "--admin-url", f.srv.URL, "decommission", "2"}, "only 2 other active brokers", "HTTP 400")
	wantErr(t, "", []string{"cluster", "--admin-url", f.srv.URL, "decommission", "x"}, "broker")
	wantErr(t, "", []string{"cluster", "--admin-url", f.srv.URL, "decommission-status", "2", "--watch", "--json"}, "--watch and --json")
}
