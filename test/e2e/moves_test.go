package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// End-to-end tests of partition moves (DESIGN.md §8) on real processes: a move recorded
// through Kafka's AlterPartitionReassignments (kadm), driven by the partition's leader
// through learners and the joint configuration, under an idempotent acks=all producer
// whose every acknowledged record must be read back at its offset, once.

// loadProducer produces keyed records to topic's partition 0 through cl until stop is
// called (flushing every 64 records, so the load is steady rather than one burst), and
// stop returns what was acknowledged.
type loadProducer struct {
	log  ackLog
	stop func() []ackedRecord
}

func startLoad(t *testing.T, cl *kgo.Client, topic string) *loadProducer {
	t.Helper()
	lp := &loadProducer{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(fmt.Sprintf("k-%d", i%97)), Value: []byte(fmt.Sprintf("v-%d", i))}
			cl.Produce(ctx, r, lp.log.callback)
			if i%64 == 63 {
				if err := cl.Flush(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("flushing the load: %v", err)
				}
			}
		}
	}()
	lp.stop = func() []ackedRecord {
		cancel()
		wg.Wait()
		if err := cl.Flush(context.Background()); err != nil {
			t.Errorf("flushing the load: %v", err)
		}
		acked, failed := lp.log.snapshot()
		for _, err := range failed {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("a produce failed during the move: %v", err)
				break
			}
		}
		return acked
	}
	return lp
}

// loadClient is an idempotent acks=all producer pinned to partition 0 that retries
// through leader changes.
func loadClient(t *testing.T, b *Broker) *kgo.Client {
	return b.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.RecordDeliveryTimeout(60*time.Second))
}

// moveTo asks for topic's partition 0 to move to replicas, failing the test unless the
// broker accepts.
func moveTo(t *testing.T, adm *kadm.Client, topic string, replicas []int32) {
	t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, replicas)
	resps, err := adm.AlterPartitionAssignments(ctxFor(t, 30*time.Second), req)
	if err != nil {
		t.Fatalf("AlterPartitionReassignments %s to %v: %v", topic, replicas, err)
	}
	if r := resps[topic][0]; r.Err != nil {
		t.Fatalf("AlterPartitionReassignments %s to %v: %v %s", topic, replicas, r.Err, r.ErrMessage)
	}
}

// cancelMove cancels the move of topic's partition 0.
func cancelMove(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	req.CancelAssign(topic, 0)
	resps, err := adm.AlterPartitionAssignments(ctxFor(t, 30*time.Second), req)
	if err != nil {
		t.Fatalf("cancelling the move of %s: %v", topic, err)
	}
	if r := resps[topic][0]; r.Err != nil {
		t.Fatalf("cancelling the move of %s: %v %s", topic, r.Err, r.ErrMessage)
	}
}

// moving reports whether ListPartitionReassignments lists topic's partition 0.
func moving(t *testing.T, adm *kadm.Client, topic string) (kadm.ListPartitionReassignmentsResponse, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resps, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		return kadm.ListPartitionReassignmentsResponse{}, true // unknown: treat as still moving
	}
	r, ok := resps[topic][0]
	return r, ok
}

// waitMoved waits until topic's partition 0 no longer moves and its metadata lists
// exactly want as replicas, with a leader among them.
func waitMoved(t *testing.T, adm *kadm.Client, topic string, want []int32, timeout time.Duration) {
	t.Helper()
	var last string
	deadline := time.Now().Add(timeout)
	for {
		_, still := moving(t, adm, topic)
		if !still {
			md, err := adm.Metadata(ctxFor(t, 10*time.Second), topic)
			if err == nil {
				if p, ok := md.Topics[topic].Partitions[0]; ok {
					got := slices.Clone(p.Replicas)
					slices.Sort(got)
					w := slices.Clone(want)
					slices.Sort(w)
					last = fmt.Sprintf("replicas %v leader %d", p.Replicas, p.Leader)
					if slices.Equal(got, w) && slices.Contains(want, p.Leader) {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/0 did not settle on %v within %v (last: %s)", topic, want, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// replicaGone waits until b holds no replica of topic's partition 0 (the admin view
// answers for replicas only).
func replicaGone(t *testing.T, b *Broker, topic string) {
	t.Helper()
	waitFor(t, 30*time.Second, func() bool {
		_, ok := adminPartition(b, topic, 0)
		return !ok
	})
}

func TestMoveToThreeOtherBrokers(t *testing.T) {
	bs := startCluster(t, 6)
	cl := bs[0].Client(t)
	createOnReplicas(t, cl, "mv", []int32{1, 2, 3}, nil)
	adm := kadm.NewClient(cl)
	load := startLoad(t, loadClient(t, bs[0]), "mv")
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= 2000 })

	moveTo(t, adm, "mv", []int32{4, 5, 6})
	if r, ok := moving(t, adm, "mv"); ok {
		t.Logf("while moving: replicas %v adding %v removing %v", r.Replicas, r.AddingReplicas, r.RemovingReplicas)
	}
	waitMoved(t, adm, "mv", []int32{4, 5, 6}, 90*time.Second)
	n := load.log.count()
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= n+1000 }) // writes go on after the move
	acked := load.stop()

	for _, b := range bs[:3] {
		replicaGone(t, b, "mv")
	}
	got := consumeAll(t, bs[3], "mv", 1, len(acked))
	checkAckedReadable(t, acked, got)
}

func TestMoveResumesAfterTheLeaderIsKilled(t *testing.T) {
	bs := startCluster(t, 4)
	cl := bs[1].Client(t)
	createOnReplicas(t, cl, "mvk", []int32{1, 2, 3}, nil)
	adm := kadm.NewClient(cl)
	load := startLoad(t, loadClient(t, bs[1]), "mvk")
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= 2000 })
	leader := leaderOf(t, bs, "mvk", 0)

	// The move takes the leader out, so it must hand leadership over before it leaves;
	// it is killed while the move runs, and the next leader resumes it.
	target := []int32{}
	for _, id := range []int32{1, 2, 3, 4} {
		if id != int32(leader+1) {
			target = append(target, id)
		}
	}
	moveTo(t, adm, "mvk", target)
	bs[leader].Kill9()
	waitMoved(t, adm, "mvk", target, 90*time.Second)
	if err := bs[leader].Launch(context.Background()); err != nil {
		t.Fatalf("restarting the killed broker: %v", err)
	}
	replicaGone(t, bs[leader], "mvk")
	acked := load.stop()
	got := consumeAll(t, bs[target[0]-1], "mvk", 1, len(acked))
	checkAckedReadable(t, acked, got)
}

func TestMoveCancelledWhileALearnerCatchesUp(t *testing.T) {
	bs := startCluster(t, 4)
	cl := bs[0].Client(t)
	createOnReplicas(t, cl, "mvc", []int32{1, 2, 3}, nil)
	adm := kadm.NewClient(cl)
	load := startLoad(t, loadClient(t, bs[0]), "mvc")
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= 1000 })

	// Broker 4 is stopped: as a learner it cannot catch up, so the move waits there until
	// it is cancelled, and returns to 1,2,3.
	bs[3].Stop()
	moveTo(t, adm, "mvc", []int32{2, 3, 4})
	r, ok := moving(t, adm, "mvc")
	if !ok || !slices.Contains(r.AddingReplicas, 4) || !slices.Contains(r.RemovingReplicas, 1) {
		t.Fatalf("ListPartitionReassignments during the move: %+v (listed %v)", r, ok)
	}
	cancelMove(t, adm, "mvc")
	waitMoved(t, adm, "mvc", []int32{1, 2, 3}, 60*time.Second)
	if err := bs[3].Launch(context.Background()); err != nil {
		t.Fatalf("restarting broker 4: %v", err)
	}
	replicaGone(t, bs[3], "mvc")
	acked := load.stop()
	got := consumeAll(t, bs[0], "mvc", 1, len(acked))
	checkAckedReadable(t, acked, got)
}

// controllerLeader returns the id Metadata names as the controller, as b answers it.
func controllerLeader(t *testing.T, b *Broker) int32 {
	t.Helper()
	var id int32 = -1
	waitFor(t, 30*time.Second, func() bool {
		md, err := b.Admin(t).BrokerMetadata(ctxFor(t, 10*time.Second))
		if err == nil {
			id = md.Controller
		}
		return id > 0
	})
	return id
}

func TestMoveSurvivesKillingTheControllerLeaderAndALearner(t *testing.T) {
	bs := startCluster(t, 5)
	cl := bs[0].Client(t)
	createOnReplicas(t, cl, "mvq", []int32{1, 2, 3}, nil)
	adm := kadm.NewClient(cl)
	load := startLoad(t, loadClient(t, bs[0]), "mvq")
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= 2000 })

	// The controller records the move, the point of no cancel and the completion: its
	// leader dies as the move starts, and broker 5, one of the learners, with it (or just
	// after). The move needs both learners caught up, so it waits for broker 5 to be back,
	// and every step it takes goes through whichever broker leads the controller then.
	ctl := controllerLeader(t, bs[1])
	moveTo(t, adm, "mvq", []int32{3, 4, 5})
	bs[ctl-1].Kill9()
	if ctl != 5 {
		bs[4].Kill9()
	}
	if r, ok := moving(t, kadm.NewClient(bs[1].Client(t)), "mvq"); ok {
		t.Logf("with brokers %d and 5 down: replicas %v adding %v removing %v", ctl, r.Replicas, r.AddingReplicas, r.RemovingReplicas)
	}
	for _, id := range []int32{ctl, 5} {
		if !bs[id-1].Running() {
			if err := bs[id-1].Launch(context.Background()); err != nil {
				t.Fatalf("restarting broker %d: %v", id, err)
			}
		}
	}
	waitMoved(t, kadm.NewClient(bs[2].Client(t)), "mvq", []int32{3, 4, 5}, 90*time.Second)
	acked := load.stop()
	got := consumeAll(t, bs[2], "mvq", 1, len(acked))
	checkAckedReadable(t, acked, got)
}

func TestReplicationFactorChangeIsAMove(t *testing.T) {
	bs := startCluster(t, 5)
	cl := bs[0].Client(t)
	createOnReplicas(t, cl, "rf", []int32{1, 2, 3}, nil)
	adm := kadm.NewClient(cl)
	load := startLoad(t, loadClient(t, bs[0]), "rf")
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= 1000 })

	moveTo(t, adm, "rf", []int32{1, 2, 3, 4, 5}) // RF 3 -> 5
	waitMoved(t, adm, "rf", []int32{1, 2, 3, 4, 5}, 90*time.Second)
	n := load.log.count()
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= n+500 })
	moveTo(t, adm, "rf", []int32{4}) // RF 5 -> 1, on a broker that joined in the first move
	waitMoved(t, adm, "rf", []int32{4}, 90*time.Second)
	n = load.log.count()
	waitFor(t, 30*time.Second, func() bool { return load.log.count() >= n+500 })
	acked := load.stop()
	for _, b := range []*Broker{bs[0], bs[1], bs[2], bs[4]} {
		replicaGone(t, b, "rf")
	}
	got := consumeAll(t, bs[3], "rf", 1, len(acked))
	checkAckedReadable(t, acked, got)
}

// TestLearnerRecoveryRateBoundsACatchUp: with learner.recovery.rate at 1 KiB/s a new
// replica cannot take a 4 MB log, so the move stays catching up, every broker reports its
// phase and the bytes left; with the bound lifted (0) it completes.
func TestLearnerRecoveryRateBoundsACatchUp(t *testing.T) {
	bs := startCluster(t, 4)
	cl := bs[0].Client(t, kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	createOnReplicas(t, cl, "paced", []int32{1, 2, 3}, nil)
	adm := kadm.NewClient(cl)
	var recs []*kgo.Record
	for range 1000 {
		value := make([]byte, 4096)
		rand.Read(value) // incompressible: the log holds 4 MB
		recs = append(recs, &kgo.Record{Topic: "paced", Value: value})
	}
	if err := cl.ProduceSync(ctxFor(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	setCluster(t, adm, "learner.recovery.rate", "1024")
	moveTo(t, adm, "paced", []int32{1, 2, 4})
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("last listed: %s", last)
		}
	}()
	waitFor(t, 30*time.Second, func() bool {
		code, body := adminRequest(t, bs[3], "GET", "/v1/partitions/reconfigurations", "")
		var got []struct {
			Phase     string `json:"phase"`
			BytesLeft int64  `json:"bytes_left"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &got) != nil {
			t.Fatalf("GET /v1/partitions/reconfigurations: %d %s", code, body)
		}
		last = body
		return len(got) == 1 && got[0].Phase == "catching_up" && got[0].BytesLeft > 1<<20
	})
	if _, still := moving(t, adm, "paced"); !still {
		t.Fatal("the move completed under a 1 KiB/s bound")
	}
	setCluster(t, adm, "learner.recovery.rate", "0")
	waitMoved(t, adm, "paced", []int32{1, 2, 4}, 60*time.Second)
	got := consumeFrom(t, func(o ...kgo.Opt) *kgo.Client { return bs[3].Client(t, o...) }, "paced",
		map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}, len(recs), 60*time.Second)
	if len(got) != len(recs) {
		t.Fatalf("read %d records from the moved partition, want %d", len(got), len(recs))
	}
}
