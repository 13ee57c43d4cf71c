package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests cover the record of a move and the interfaces that start, list and cancel
// it. Each moves a partition to a set that includes a stopped broker, whose learner cannot
// catch up, so the move stays listed until it is cancelled (moves_test.go drives moves to
// their end).

// adminRequest sends one admin API request with a body and returns the status and body.
func adminRequest(t *testing.T, b *Broker, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t, 20*time.Second), method, "http://"+b.AdminAddr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// reconfiguration is one entry of GET /v1/partitions/reconfigurations.
type reconfiguration struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Original  []int32 `json:"original"`
	Target    []int32 `json:"target"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
	Cancelled bool    `json:"cancelled"`
	Final     bool    `json:"final"`
}

func reconfigurations(t *testing.T, b *Broker) []reconfiguration {
	t.Helper()
	var out []reconfiguration
	getAdminJSON(t, b, "/v1/partitions/reconfigurations", &out)
	return out
}

// getAdminJSON GETs path from b's admin API and decodes its answer into out, failing the
// test unless it is a 200 with JSON.
func getAdminJSON(t *testing.T, b *Broker, path string, out any) {
	t.Helper()
	code, body := adminRequest(t, b, "GET", path, "")
	if code != 200 || json.Unmarshal([]byte(body), out) != nil {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
}

// TestReassignAPIsKadm: on four brokers, kadm records a move of an RF=1 partition on
// broker 1 to brokers 2 and 3, with broker 3 stopped so that its learner cannot catch up
// and the move stays listed; ListPartitionReassignments (through another broker) and
// Metadata show it with its adding and removing replicas; a second move and bad targets
// are refused and change nothing; a kadm cancel lists the target's replicas as the ones
// to remove, and the partition goes back to broker 1 with its records.
func TestReassignAPIsKadm(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 4)
	const topic = "moving"
	adm := bs[0].Admin(t)
	createAssigned(t, bs[0].Client(t), topic, [][]int32{{1}, {2}})
	from, to := []int32{1}, []int32{2, 3}
	bs[2].Stop()

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, to)
	resps, err := adm.AlterPartitionAssignments(ctxFor(t, 20*time.Second), req)
	if err != nil || resps.Error() != nil {
		t.Fatalf("AlterPartitionAssignments: %v %v", err, resps.Error())
	}
	// Any broker lists it, once its controller replica has applied it.
	adm2 := bs[1].Admin(t)
	var got kadm.ListPartitionReassignmentsResponse
	waitFor(t, 10*time.Second, func() bool {
		listed, err := adm2.ListPartitionReassignments(ctxFor(t, 10*time.Second), kadm.TopicsSet{topic: {0: {}, 1: {}}})
		if err != nil {
			t.Fatal(err)
		}
		got = listed[topic][0]
		return len(listed[topic]) == 1 && got.Partition == 0
	})
	if !slices.Equal(got.AddingReplicas, to) || !slices.Equal(got.RemovingReplicas, from) || !slices.Equal(got.Replicas, append(slices.Clone(to), from...)) {
		t.Fatalf("listed %+v, want adding %v removing %v", got, to, from)
	}
	md, err := adm2.Metadata(ctxFor(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	if p := md.Topics[topic].Partitions[0]; !slices.Equal(p.Replicas, got.Replicas) || !slices.Equal(p.ISR, from) {
		t.Errorf("metadata while moving: replicas %v isr %v, want replicas %v isr %v", p.Replicas, p.ISR, got.Replicas, from)
	}

	// The partition still takes writes while its move is recorded.
	cl := clusterClient(t, bs, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := cl.ProduceSync(ctxFor(t, 20*time.Second), &kgo.Record{Value: []byte("during"), Partition: 0}).FirstErr(); err != nil {
		t.Fatalf("produce during the move: %v", err)
	}

	// Refused, each with its reason: a second move, an unknown broker, a repeated one, an
	// empty set, an unknown topic, and a cancel of a partition that does not move.
	req = nil
	req.Assign(topic, 0, from)
	req.Assign(topic, 1, []int32{1, 9})
	req.Assign("nope", 0, []int32{1})
	resps, err = adm.AlterPartitionAssignments(ctxFor(t, 20*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	wantAlterErr(t, resps, topic, 0, kerr.ReassignmentInProgress, "already being reassigned")
	wantAlterErr(t, resps, topic, 1, kerr.InvalidReplicaAssignment, "broker 9 is not registered")
	wantAlterErr(t, resps, "nope", 0, kerr.UnknownTopicOrPartition, "does not exist")
	req = nil
	req.Assign(topic, 1, []int32{2, 2})
	resps, _ = adm.AlterPartitionAssignments(ctxFor(t, 20*time.Second), req)
	wantAlterErr(t, resps, topic, 1, kerr.InvalidReplicaAssignment, "broker 2 is named twice")
	req = nil
	req.Assign(topic, 1, []int32{})
	resps, _ = adm.AlterPartitionAssignments(ctxFor(t, 20*time.Second), req)
	wantAlterErr(t, resps, topic, 1, kerr.InvalidReplicaAssignment, "empty")
	req = nil
	req.CancelAssign(topic, 1)
	resps, _ = adm.AlterPartitionAssignments(ctxFor(t, 20*time.Second), req)
	wantAlterErr(t, resps, topic, 1, kerr.NoReassignmentInProgress, "not being reassigned")
	listed, err := adm.ListPartitionReassignments(ctxFor(t, 10*time.Second), kadm.TopicsSet{topic: {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed[topic]) != 1 || !slices.Equal(listed[topic][0].AddingReplicas, to) {
		t.Fatalf("refused requests changed the moves: %+v", listed)
	}

	// Cancel: the move goes back; what it added is now what it removes.
	req = nil
	req.CancelAssign(topic, 0)
	resps, err = adm.AlterPartitionAssignments(ctxFor(t, 20*time.Second), req)
	if err != nil || resps.Error() != nil {
		t.Fatalf("cancel: %v %v", err, resps.Error())
	}
	listed, err = adm.ListPartitionReassignments(ctxFor(t, 10*time.Second), kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	c := listed[topic][0]
	if len(c.AddingReplicas) != 0 || !slices.Equal(c.RemovingReplicas, to) || !slices.Equal(c.Replicas, append(slices.Clone(from), to...)) {
		t.Fatalf("after cancel %+v, want nothing adding, removing %v", c, to)
	}
	waitMoved(t, adm, topic, from, 30*time.Second)
	if got := consumeAll(t, bs[0], topic, 2, 1); string(got[0].Value) != "during" {
		t.Fatalf("after the cancel the topic holds %q", got[0].Value)
	}
}

// createAssigned creates a topic with the replicas of each partition given.
func createAssigned(t *testing.T, cl *kgo.Client, topic string, assignment [][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(t, 40*time.Second), cl)
	if err != nil {
		t.Fatalf("CreateTopics %s on %v: %v", topic, assignment, err)
	}
	if r := resp.Topics[0]; r.ErrorCode != 0 {
		t.Fatalf("CreateTopics %s on %v: %s %v", topic, assignment, kerrName(r.ErrorCode), deref(r.ErrorMessage))
	}
}

func wantAlterErr(t *testing.T, resps kadm.AlterPartitionAssignmentsResponses, topic string, p int32, want error, msg string) {
	t.Helper()
	r, ok := resps[topic][p]
	if !ok {
		t.Errorf("no answer for %s-%d", topic, p)
		return
	}
	if !errors.Is(r.Err, want) || !strings.Contains(r.ErrMessage, msg) {
		t.Errorf("%s-%d: %v %q, want %v with %q", topic, p, r.Err, r.ErrMessage, want, msg)
	}
}

// TestReassignAPIsHTTP: the admin API records a move (Redpanda's body shape) of an RF=1
// partition on broker 1 to brokers 2 and 3 (3 stopped: the move waits for its learner),
// lists it on every running broker, refuses a second move (409), a bad target (400) and an
// unknown partition (404), and cancels it; a second cancel is accepted, a cancel with no
// move is 409, and the cancelled move ends back on broker 1.
func TestReassignAPIsHTTP(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 4)
	const topic = "httpmove"
	createAssigned(t, bs[0].Client(t), topic, [][]int32{{1}})
	from, to := []int32{1}, []int32{2, 3}
	bs[2].Stop()
	live := []*Broker{bs[0], bs[1], bs[3]}
	path := "/v1/partitions/" + topic + "/0"

	if code, body := adminRequest(t, bs[3], "POST", path+"/cancel_reconfiguration", ""); code != 409 || !strings.Contains(body, "not being reassigned") {
		t.Fatalf("cancel with no move: %d %s", code, body)
	}
	body := fmt.Sprintf(`[{"node_id":%d,"core":0},{"node_id":%d,"core":0}]`, to[0], to[1])
	if code, resp := adminRequest(t, bs[1], "POST", path+"/replicas", body); code != 200 || strings.TrimSpace(resp) != "{}" {
		t.Fatalf("move: %d %s", code, resp)
	}
	want := reconfiguration{Topic: topic, Partition: 0, Original: from, Target: to, Adding: to, Removing: from}
	for _, b := range live {
		var got []reconfiguration
		waitFor(t, 10*time.Second, func() bool { got = reconfigurations(t, b); return len(got) == 1 })
		if fmt.Sprint(got[0]) != fmt.Sprint(want) {
			t.Fatalf("broker %d lists %+v, want %+v", b.opts.NodeID, got[0], want)
		}
	}
	for _, tc := range []struct {
		path, body string
		code       int
		msg        string
	}{
		{path + "/replicas", fmt.Sprintf("[%d]", from[0]), 409, "already being reassigned"},
		{path + "/replicas", `[1,77]`, 400, "broker 77 is not registered"},
		{path + "/replicas", `[3,3]`, 400, "named twice"},
		{path + "/replicas", `[]`, 400, "empty"},
		{path + "/replicas", `not json`, 400, "JSON array"},
		{"/v1/partitions/" + topic + "/5/replicas", `[1]`, 404, "no partition 5"},
		{"/v1/partitions/nope/0/cancel_reconfiguration", ``, 404, "does not exist"},
	} {
		code, resp := adminRequest(t, bs[0], "POST", tc.path, tc.body)
		var e struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		}
		if code != tc.code || json.Unmarshal([]byte(resp), &e) != nil || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("POST %s %s: %d %s, want %d with %q", tc.path, tc.body, code, resp, tc.code, tc.msg)
		}
	}
	if got := reconfigurations(t, bs[0]); len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(want) {
		t.Fatalf("refused requests changed the move: %+v", got)
	}

	for range 2 {
		if code, resp := adminRequest(t, bs[3], "POST", path+"/cancel_reconfiguration", ""); code != 200 {
			t.Fatalf("cancel: %d %s", code, resp)
		}
	}
	want.Cancelled, want.Adding, want.Removing = true, []int32{}, to
	got := reconfigurations(t, bs[3])
	if len(got) == 1 && fmt.Sprint(got[0]) != fmt.Sprint(want) { // or already back
		t.Fatalf("after cancel %+v, want %+v", got, want)
	}
	waitFor(t, 30*time.Second, func() bool { return len(reconfigurations(t, bs[1])) == 0 })
	waitMoved(t, bs[1].Admin(t), topic, from, 30*time.Second)
}
