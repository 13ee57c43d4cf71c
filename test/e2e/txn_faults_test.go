package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnFaults: on three brokers, kill -9 the transaction coordinator right after a commit
// was decided (PrepareCommit durable, markers under way), then kill -9 the leader of one
// of a transaction's partitions right after its commit, while its marker is being
// written. Each time the commit completes anyway: the next coordinator resumes the
// markers, and a marker refused by a dying leader is written on the next one. At the end
// read_committed reads every committed record exactly once and no aborted one.
func TestTxnFaults(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	const topic, parts = "txn-faults", 3
	admin := kadm.NewClient(clusterClient(t, bs))
	createReplicatedTopic(t, admin, topic, parts, 3)
	waitFor(t, 60*time.Second, func() bool { return allInSync(bs, topic, parts, 3) })
	ctx := ctxFor(t, 3*time.Minute)

	const id = "txn-faults"
	prod := clusterClient(t, bs, kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.TransactionTimeout(60*time.Second))
	var want []string
	want = append(want, runTxn(t, prod, topic, "before", 30, true)...)
	runTxn(t, prod, topic, "aborted", 30, false)

	coordinator := func() int {
		var idx int
		waitFor(t, 30*time.Second, func() bool {
			d, err := admin.DescribeTransactions(ctx, id)
			if err != nil || d[id].Err != nil {
				return false
			}
			idx = int(d[id].Coordinator) - 1
			return idx >= 0 && idx < len(bs)
		})
		return idx
	}

	// The coordinator dies with the commit decided and its markers in flight.
	c := coordinator()
	want = append(want, runTxn(t, prod, topic, "coordinator-killed", 30, true)...)
	bs[c].Kill9()
	bs[c].Restart()

	// A participant's leader (not the coordinator's broker) dies as its marker is written.
	c = coordinator()
	victim := -1
	for p := int32(0); p < parts && victim < 0; p++ {
		if l := leaderOf(t, bs, topic, p); l != c {
			victim = l
		}
	}
	want = append(want, runTxn(t, prod, topic, "leader-killed", 30, true)...)
	if victim >= 0 {
		bs[victim].Kill9()
		bs[victim].Restart()
	}
	want = append(want, runTxn(t, prod, topic, "after", 30, true)...)
	runTxn(t, prod, topic, "aborted-after", 30, false)

	got := values(t, consumeFrom(t, func(o ...kgo.Opt) *kgo.Client { return clusterClient(t, bs, append(o, readCommitted)...) },
		topic, fromStart(parts), len(want), 2*time.Minute))
	for _, v := range want {
		if !got[v] {
			t.Errorf("committed record %q not read under read_committed", v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("read_committed read %d distinct records, want the %d committed", len(got), len(want))
	}
}
