package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Force recovery of a partition that lost a majority of its replicas for good
// (`cairn cluster partitions force-recover`), on real processes.

// recoveryPlan is the part of GET /v1/partitions/majority_lost the tests read.
type recoveryPlan struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Base      int32  `json:"base"`
	MayLose   int64  `json:"may_lose"`
	Problem   string `json:"problem"`
}

// TestForceRecoverFromOneSurvivingRack: a partition on brokers 1, 4 and 5, each in its own
// rack, with min.insync.racks=3, so that every acknowledged write was on all three racks.
// Brokers 4 and 5 are killed for good under an idempotent acks=all load: the partition has
// lost its majority and raft cannot go on. The operator force-recovers it from broker 1:
// the plan says nothing is lost, a refused confirmation changes nothing, and after the
// recovery every acknowledged record reads back at its offset and the partition takes
// writes again. The dead brokers then come back with their old data: they must neither
// lead nor keep a replica of it.
func TestForceRecoverFromOneSurvivingRack(t *testing.T) {
	bs := startCluster(t, 5)
	cl := bs[0].Client(t)
	createOnReplicas(t, cl, "fr", []int32{1, 4, 5}, map[string]string{"min.insync.racks": "3"})
	// A load whose unfinished produces are abandoned at the kill: with the majority gone
	// they can only fail, and only the acknowledged ones are checked.
	prod := bs[0].Client(t, kgo.DefaultProduceTopic("fr"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(100))
	log := &ackLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%17)), Value: []byte(fmt.Sprintf("v-%07d", i))}, log.callback)
		}
	}()
	waitFor(t, 30*time.Second, func() bool { return log.count() >= 3000 })
	bs[3].Kill9()
	bs[4].Kill9()
	cancel()
	<-done
	acked, _ := log.snapshot()
	if len(acked) < 3000 {
		t.Fatalf("only %d acknowledged", len(acked))
	}

	// The plan: once the controller sees 4 and 5 down, broker 1 is the base and the
	// recovery loses nothing.
	var plan []recoveryPlan
	waitFor(t, 60*time.Second, func() bool {
		code, body := adminCall(t, bs[1], "GET", "/v1/partitions/majority_lost?dead_nodes=4,5")
		plan = nil
		return code == 200 && json.Unmarshal(body, &plan) == nil && len(plan) == 1 && plan[0].Problem == "" && plan[0].Base == 1
	})
	if plan[0].Topic != "fr" || plan[0].MayLose != 0 {
		t.Fatalf("plan: %+v, want fr/0 rebuilt from broker 1 losing nothing", plan)
	}
	adminExpect(t, bs[1], "GET", "/v1/partitions/majority_lost?dead_nodes=4,x", 400, "not a broker id")

	r, code := clusterCLIInput(t, bs[1], "no\n", "partitions", "force-recover", "--from-nodes", "4,5")
	if code == 0 || !strings.Contains(r.Stderr+r.Stdout, "not confirmed") || !strings.Contains(r.Stdout, "fr/0") || !strings.Contains(r.Stdout, "0 offsets") {
		t.Fatalf("declined force-recover: exit %d\n%s", code, r)
	}
	adm := kadm.NewClient(cl)
	if md, err := adm.Metadata(ctxFor(t, 10*time.Second), "fr"); err != nil || !slices.Equal(md.Topics["fr"].Partitions[0].Replicas, []int32{1, 4, 5}) {
		t.Fatalf("a declined recovery changed the partition: %v %+v", err, md.Topics["fr"].Partitions[0])
	}
	r, code = clusterCLIInput(t, bs[1], "yes\n", "partitions", "force-recover", "--from-nodes", "4,5")
	if code != 0 || !strings.Contains(r.Stdout, "fr/0: rebuilding from broker 1") {
		t.Fatalf("force-recover: exit %d\n%s", code, r)
	}
	waitMoved(t, adm, "fr", []int32{1}, 60*time.Second)

	got := consumeAll(t, bs[0], "fr", 1, len(acked))
	checkAckedReadable(t, acked, got)

	// Writes resume once the topic asks for no more racks than it has replicas in.
	setTopicConfig(t, adm, "fr", "min.insync.racks", "1")
	prod = bs[2].Client(t, kgo.DefaultProduceTopic("fr"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30*time.Second))
	if err := prod.ProduceSync(ctxFor(t, 40*time.Second), &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("producing after the recovery: %v", err)
	}

	// The dead come back with the old group's data: they take no part.
	bs[3].Restart()
	bs[4].Restart()
	replicaGone(t, bs[3], "fr")
	replicaGone(t, bs[4], "fr")
	if l := leaderOf(t, bs[:3], "fr", 0); l != 0 {
		t.Fatalf("leader after the dead came back: broker %d, want 1", l+1)
	}
	got = consumeAll(t, bs[3], "fr", 1, len(acked)+1)
	checkAckedReadable(t, acked, got)
}

// TestForceRecoverRebuildsTheOtherSurvivors: a partition on five brokers loses three of
// them. The recovery rebuilds it from the more up-to-date survivor, and the other survivor
// drops what it held and copies the base's log as a learner of the new group: afterwards
// both hold the same records, the partition takes writes at acks=all, and the dead take no
// part when they come back.
func TestForceRecoverRebuildsTheOtherSurvivors(t *testing.T) {
	bs := startCluster(t, 7)
	cl := bs[0].Client(t)
	createOnReplicas(t, cl, "fr5", []int32{1, 2, 3, 4, 5}, nil)
	prod := bs[5].Client(t, kgo.DefaultProduceTopic("fr5"), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := 0; i < 500; i++ {
		prod.Produce(ctxFor(t, 30*time.Second), &kgo.Record{Value: []byte(fmt.Sprintf("v-%d", i))}, nil)
	}
	if err := prod.Flush(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, b := range bs[2:5] {
		b.Kill9()
	}
	var plan []recoveryPlan
	waitFor(t, 60*time.Second, func() bool {
		code, body := adminCall(t, bs[6], "GET", "/v1/partitions/majority_lost?dead_nodes=3,4,5")
		plan = nil
		return code == 200 && json.Unmarshal(body, &plan) == nil && len(plan) == 1 && plan[0].Problem == ""
	})
	r, code := clusterCLI(t, bs[6], "partitions", "force-recover", "--from-nodes", "3,4,5", "--yes")
	if code != 0 || !strings.Contains(r.Stdout, fmt.Sprintf("fr5/0: rebuilding from broker %d", plan[0].Base)) {
		t.Fatalf("force-recover: exit %d\n%s", code, r)
	}
	adm := kadm.NewClient(cl)
	waitMoved(t, adm, "fr5", []int32{1, 2}, 60*time.Second)
	if err := prod.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("producing after the recovery: %v", err)
	}
	// The other survivor copied the base's log: both end at the same committed offset.
	var end int64
	waitFor(t, 60*time.Second, func() bool {
		s1, ok1 := adminPartition(bs[0], "fr5", 0)
		s2, ok2 := adminPartition(bs[1], "fr5", 0)
		end = s1.LogEnd
		return ok1 && ok2 && s1.LogEnd == s2.LogEnd && s1.Committed == s1.LogEnd && s2.Committed == s2.LogEnd && (len(s1.ISR) == 2 || len(s2.ISR) == 2)
	})
	got := consumeAll(t, bs[6], "fr5", 1, int(end))
	if int64(len(got)) != end || end < 501 || string(got[len(got)-1].Value) != "after" {
		t.Fatalf("read %d records of %d, the last %q", len(got), end, got[len(got)-1].Value)
	}
	for _, b := range bs[2:5] {
		b.Restart()
	}
	for _, b := range bs[2:5] {
		replicaGone(t, b, "fr5")
	}
}

// TestForceRecoverSeveralPartitionsFromOneBase: one confirmation recovers two partitions
// whose base is the same broker. The base rebuilds the first while the controller records
// the second, and nothing else changes in the cluster afterwards: it must still lead both
// (the chaos recover fault, seed 101, once left the second leaderless until a dead broker
// came back, 61 s later).
func TestForceRecoverSeveralPartitionsFromOneBase(t *testing.T) {
	bs := startCluster(t, 5)
	cl := bs[0].Client(t)
	topics := []string{"fra", "frb", "frc"}
	prod := bs[0].Client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
	for _, name := range topics {
		createOnReplicas(t, cl, name, []int32{1, 4, 5}, nil)
		for i := range 200 {
			prod.Produce(ctxFor(t, 30*time.Second), &kgo.Record{Topic: name, Value: []byte(fmt.Sprintf("v-%d", i))}, nil)
		}
	}
	if err := prod.Flush(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	bs[3].Kill9()
	bs[4].Kill9()
	waitFor(t, 60*time.Second, func() bool {
		code, body := adminCall(t, bs[1], "GET", "/v1/partitions/majority_lost?dead_nodes=4,5")
		var plan []recoveryPlan
		if code != 200 || json.Unmarshal(body, &plan) != nil || len(plan) != len(topics) {
			return false
		}
		for _, pl := range plan {
			if pl.Problem != "" || pl.Base != 1 {
				return false
			}
		}
		return true
	})
	r, code := clusterCLI(t, bs[1], "partitions", "force-recover", "--from-nodes", "4,5", "--yes")
	if code != 0 {
		t.Fatalf("force-recover: exit %d\n%s", code, r)
	}
	for _, name := range topics {
		var st PartitionStatus
		waitFor(t, 20*time.Second, func() bool {
			var ok bool
			st, ok = adminPartition(bs[0], name, 0)
			return ok && st.IsLeader && slices.Equal(st.Replicas, []int32{1})
		})
		if st.LogEnd < 200 {
			t.Errorf("%s/0 after the recovery ends at %d, want the 200 records written", name, st.LogEnd)
		}
	}
}
