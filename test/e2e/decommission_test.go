package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// End-to-end tests of decommission (DESIGN.md §8) on real processes: every replica of a
// broker moves to the others through the admin API, under an idempotent acks=all producer
// whose every acknowledged record must be read back at its offset, and the broker then
// leaves the controller group.

type decommissionStatus struct {
	Finished           bool     `json:"finished"`
	ReplicasLeft       int      `json:"replicas_left"`
	AllocationFailures []string `json:"allocation_failures"`
	Partitions         []struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		MovingTo  []int32 `json:"moving_to"`
	} `json:"partitions"`
}

func decommission(t *testing.T, via *Broker, id int) {
	t.Helper()
	if code, body := adminRequest(t, via, "PUT", fmt.Sprintf("/v1/brokers/%d/decommission", id), ""); code != 200 {
		t.Fatalf("PUT decommission of broker %d: %d %s", id, code, body)
	}
}

func decommissionStatusOf(t *testing.T, via *Broker, id int) (int, decommissionStatus, string) {
	t.Helper()
	code, body := adminRequest(t, via, "GET", fmt.Sprintf("/v1/brokers/%d/decommission", id), "")
	var st decommissionStatus
	if code == 200 {
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("decommission status: %v: %s", err, body)
		}
	}
	return code, st, body
}

// waitDecommissioned waits for the status to say finished, logging its progress.
func waitDecommissioned(t *testing.T, via *Broker, id int, timeout time.Duration) {
	t.Helper()
	var last string
	deadline := time.Now().Add(timeout)
	for {
		code, st, body := decommissionStatusOf(t, via, id)
		if code == 200 && st.Finished && st.ReplicasLeft == 0 {
			return
		}
		if body != last {
			t.Logf("decommission status: %d %s", code, strings.TrimSpace(body))
			last = body
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker %d not decommissioned within %v (last: %s)", id, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// membershipOf reads broker id's membership_status from GET /v1/brokers on via.
func membershipOf(t *testing.T, via *Broker, id int) string {
	t.Helper()
	code, body := adminRequest(t, via, "GET", "/v1/brokers", "")
	var list []struct {
		NodeID           int    `json:"node_id"`
		MembershipStatus string `json:"membership_status"`
		Replicas         int    `json:"replicas"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("GET /v1/brokers: %d %s", code, body)
	}
	for _, b := range list {
		if b.NodeID == id {
			return b.MembershipStatus
		}
	}
	return ""
}

// inControllerGroup reports whether via's controller replica lists id as a voter or learner.
func inControllerGroup(t *testing.T, via *Broker, id int) bool {
	t.Helper()
	code, body := adminRequest(t, via, "GET", "/v1/cluster", "")
	var st struct {
		Controller struct {
			Voters   []int `json:"voters"`
			Learners []int `json:"learners"`
		} `json:"controller"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("GET /v1/cluster: %d %s", code, body)
	}
	return slices.Contains(st.Controller.Voters, id) || slices.Contains(st.Controller.Learners, id)
}

// holdsNoReplica checks in Metadata that no partition of topics lists broker id.
func holdsNoReplica(t *testing.T, adm *kadm.Client, id int32, topics ...string) {
	t.Helper()
	md, err := adm.Metadata(ctxFor(t, 10*time.Second), topics...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range md.Topics {
		for _, p := range tp.Partitions {
			if slices.Contains(p.Replicas, id) || len(p.Replicas) != 3 {
				t.Errorf("%s/%d: replicas %v after decommissioning broker %d", tp.Topic, p.Partition, p.Replicas, id)
			}
		}
	}
}

func TestDecommissionLiveBroker(t *testing.T) {
	bs := startCluster(t, 4)
	cl := bs[1].Client(t)
	createOnReplicas(t, cl, "dlive", []int32{1, 2, 3}, nil)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctxFor(t, 15*time.Second), 6, 3, nil, "dmore"); err != nil {
		t.Fatal(err)
	}
	load := startLoad(t, loadClient(t, bs[1]), "dlive")
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= 2000 })

	decommission(t, bs[2], 1)
	// Broker 3's controller replica applies the committed command on its own
	// schedule, so it may take a moment to show it.
	waitFor(t, 10*time.Second, func() bool {
		m := membershipOf(t, bs[3], 1)
		return m == "draining" || m == "decommissioned"
	})
	// A second decommission of the same broker is refused.
	if code, body := adminRequest(t, bs[1], "PUT", "/v1/brokers/1/decommission", ""); code != 409 || !strings.Contains(body, "already") {
		t.Fatalf("second decommission: %d %s", code, body)
	}
	waitDecommissioned(t, bs[1], 1, 3*time.Minute)
	holdsNoReplica(t, adm, 1, "dlive", "dmore")
	// The configuration change reaches each controller replica in its own time.
	waitFor(t, 10*time.Second, func() bool { return !inControllerGroup(t, bs[3], 1) })
	if m := membershipOf(t, bs[1], 1); m != "decommissioned" {
		t.Fatalf("membership_status %q", m)
	}
	if code, body := adminRequest(t, bs[1], "PUT", "/v1/brokers/1/recommission", ""); code != 409 || !strings.Contains(body, "already decommissioned") {
		t.Fatalf("recommission after the end: %d %s", code, body)
	}
	n := load.log.count()
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= n+500 })
	acked := load.stop()
	checkAckedReadable(t, acked, consumeAll(t, bs[1], "dlive", 1, len(acked)))
}

func TestDecommissionDeadBroker(t *testing.T) {
	bs := startCluster(t, 4)
	cl := bs[1].Client(t)
	createOnReplicas(t, cl, "ddead", []int32{1, 2, 3}, nil)
	adm := kadm.NewClient(cl)
	load := startLoad(t, loadClient(t, bs[1]), "ddead")
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= 2000 })

	bs[0].Kill9()
	decommission(t, bs[1], 1)
	waitDecommissioned(t, bs[2], 1, 3*time.Minute)
	holdsNoReplica(t, adm, 1, "ddead")
	// The configuration change reaches each controller replica in its own time.
	waitFor(t, 10*time.Second, func() bool { return !inControllerGroup(t, bs[1], 1) })
	n := load.log.count()
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= n+500 })
	acked := load.stop()
	checkAckedReadable(t, acked, consumeAll(t, bs[3], "ddead", 1, len(acked)))
}

func TestDecommissionRefusedWhenTheOthersCannotHoldTheReplicas(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	cl := bs[0].Client(t)
	createOnReplicas(t, cl, "dfull", []int32{1, 2, 3}, nil)
	for _, c := range []struct {
		path, want string
		code       int
	}{
		{"/v1/brokers/2/decommission", "partition dfull-0 has 3 replicas but only 2 other active brokers", 400},
		{"/v1/brokers/9/decommission", "broker 9 is not registered", 404},
		{"/v1/brokers/x/decommission", "broker id must be a positive whole number", 400},
		{"/v1/brokers/2/recommission", "not being decommissioned", 409},
	} {
		if code, body := adminRequest(t, bs[0], "PUT", c.path, ""); code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("PUT %s: %d %s, want %d %q", c.path, code, body, c.code, c.want)
		}
	}
	if r, code := clusterCLI(t, bs[1], "decommission", "2"); code == 0 || !strings.Contains(r.Stderr, "only 2 other active brokers") {
		t.Errorf("cairn cluster decommission 2: exit %d: %s %s", code, r.Stdout, r.Stderr)
	}
	if code, _, body := decommissionStatusOf(t, bs[1], 9); code != 404 || !strings.Contains(body, "broker 9 is not registered") {
		t.Errorf("status of an unknown broker: %d %s", code, body)
	}
	if code, _, body := decommissionStatusOf(t, bs[1], 2); code != 409 || !strings.Contains(body, "not being decommissioned") {
		t.Errorf("status of a refused decommission: %d %s", code, body)
	}
	if m := membershipOf(t, bs[2], 2); m != "active" {
		t.Errorf("broker 2 is %q after a refused decommission", m)
	}
}

func TestRecommissionWhileMovesRun(t *testing.T) {
	bs := startCluster(t, 4)
	cl := bs[1].Client(t)
	assignment := make([][]int32, 12)
	for p := range assignment {
		assignment[p] = []int32{1, int32(2 + p%3)}
	}
	createAssigned(t, cl, "drec", assignment)
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, 60*time.Second)
	for p := range int32(12) {
		for i := range 200 {
			cl.Produce(ctx, &kgo.Record{Topic: "drec", Partition: p, Value: fmt.Appendf(nil, "v-%d", i)}, nil)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	decommission(t, bs[1], 1)
	waitFor(t, 30*time.Second, func() bool {
		_, st, _ := decommissionStatusOf(t, bs[2], 1)
		return len(st.Partitions) > 0
	})
	if code, body := adminRequest(t, bs[1], "PUT", "/v1/brokers/1/recommission", ""); code != 200 {
		t.Fatalf("recommission: %d %s", code, body)
	}
	// Broker 3's controller replica may apply the recommission a moment after broker 2's.
	waitFor(t, 10*time.Second, func() bool { return membershipOf(t, bs[2], 1) == "active" })
	waitFor(t, 90*time.Second, func() bool { return len(reconfigurations(t, bs[1])) == 0 })
	// At most decommissionInFlight moves were started; the rest never left broker 1, and the
	// cancelled ones came back to it.
	md, err := adm.Metadata(ctxFor(t, 10*time.Second), "drec")
	if err != nil {
		t.Fatal(err)
	}
	on1 := 0
	for _, p := range md.Topics["drec"].Partitions {
		if len(p.Replicas) != 2 {
			t.Errorf("drec/%d: replicas %v", p.Partition, p.Replicas)
		}
		if slices.Contains(p.Replicas, 1) {
			on1++
		}
	}
	if on1 < 4 {
		t.Fatalf("only %d partitions kept a replica on broker 1 after recommission", on1)
	}
	if !inControllerGroup(t, bs[2], 1) {
		t.Fatal("a recommissioned broker left the controller group")
	}
	consumeAll(t, bs[2], "drec", 12, 12*200)
}

// controllerVoters reads group 0's voters from GET /v1/cluster on via.
func controllerVoters(t *testing.T, via *Broker) []int {
	t.Helper()
	code, body := adminRequest(t, via, "GET", "/v1/cluster", "")
	var st struct {
		Controller struct {
			Voters []int `json:"voters"`
		} `json:"controller"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("GET /v1/cluster: %d %s", code, body)
	}
	slices.Sort(st.Controller.Voters)
	return st.Controller.Voters
}

// TestReplaceFounderByJoinedBroker follows operations.md's "Replacing a broker": a new
// broker joins (a controller learner), founder 3 is decommissioned, and the joined broker
// takes its replica and its controller vote, so the controller keeps three voters.
func TestReplaceFounderByJoinedBroker(t *testing.T) {
	bs := startCluster(t, 3)
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.RPCAddr)
	}
	b4 := startBroker(t, BrokerOpts{NodeID: 4, Args: []string{"--seeds", strings.Join(seeds, ","), "--rack", "rack-4"}})
	waitFor(t, 30*time.Second, func() bool { return membershipOf(t, bs[0], 4) == "active" })
	cl := bs[0].Client(t)
	createOnReplicas(t, cl, "drep", []int32{1, 2, 3}, nil)
	adm := kadm.NewClient(cl)
	load := startLoad(t, loadClient(t, bs[0]), "drep")
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= 1000 })

	// Through the CLI, as operations.md walks it.
	if r, code := clusterCLI(t, b4, "decommission", "3"); code != 0 || !strings.Contains(r.Stdout, "decommissioning broker 3") {
		t.Fatalf("cairn cluster decommission 3: exit %d: %s %s", code, r.Stdout, r.Stderr)
	}
	if r, code := clusterCLI(t, bs[0], "decommission-status", "3", "--watch", "--interval", "250ms"); code != 0 || !strings.Contains(r.Stdout, "Broker 3: decommissioned") {
		t.Fatalf("cairn cluster decommission-status 3 --watch: exit %d: %s %s", code, r.Stdout, r.Stderr)
	}
	waitDecommissioned(t, bs[0], 3, 3*time.Minute)
	holdsNoReplica(t, adm, 3, "drep")
	if v := controllerVoters(t, bs[0]); !slices.Equal(v, []int{1, 2, 4}) {
		t.Fatalf("controller voters after replacing broker 3 by broker 4: %v", v)
	}
	bs[2].Stop()
	n := load.log.count()
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= n+500 })
	acked := load.stop()
	checkAckedReadable(t, acked, consumeAll(t, b4, "drep", 1, len(acked)))
}

// TestDecommissionRefusedByMinInsyncRacks: broker 3 holds the only replica in rack-3 of a
// partition with min.insync.racks=3; the one other broker is in rack-1, which the partition
// spans already, so the decommission is refused with the reason and nothing changes.
func TestDecommissionRefusedByMinInsyncRacks(t *testing.T) {
	t.Parallel()
	bs := startClusterInRacks(t, []string{"rack-1", "rack-2", "rack-3", "rack-1"})
	createOnReplicas(t, bs[0].Client(t), "dracks", []int32{1, 2, 3}, map[string]string{"min.insync.racks": "3"})
	code, body := adminRequest(t, bs[1], "PUT", "/v1/brokers/3/decommission", "")
	if code != 400 || !strings.Contains(body, "dracks/0: min.insync.racks=3 cannot be met") {
		t.Fatalf("decommission: %d %s", code, body)
	}
	if m := membershipOf(t, bs[0], 3); m != "active" {
		t.Fatalf("broker 3 is %q after a refused decommission", m)
	}
}
