package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Transactions through franz-go (issue 16): what a read_committed and a read_uncommitted
// consumer see of committed and aborted transactions, zombie fencing, and the transaction
// timeout.

// readCommitted is the consumer option of a read_committed consumer.
var readCommitted = kgo.FetchIsolationLevel(kgo.ReadCommitted())

// runTxn produces n records in one transaction of cl, spread over the topic's partitions,
// and commits or aborts it; it returns the values sent.
func runTxn(t testing.TB, cl *kgo.Client, topic, tag string, n int, commit bool) []string {
	t.Helper()
	ctx := ctxFor(t, 60*time.Second)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction %s: %v", tag, err)
	}
	vals := make([]string, n)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		vals[i] = fmt.Sprintf("%s-%d", tag, i)
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(vals[i])}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing in transaction %s: %v", tag, err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("EndTransaction(%v) %s: %v", commit, tag, err)
	}
	return vals
}

// values are the records' values, and whether one was seen twice.
func values(t testing.TB, recs []*kgo.Record) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, r := range recs {
		v := string(r.Value)
		if out[v] {
			t.Errorf("%q read twice", v)
		}
		out[v] = true
	}
	return out
}

func fromStart(parts int32) map[int32]kgo.Offset {
	from := map[int32]kgo.Offset{}
	for p := int32(0); p < parts; p++ {
		from[p] = kgo.NewOffset().AtStart()
	}
	return from
}

// TestTxnAbortEveryThird: a transactional producer aborts every third of 30 transactions.
// A read_committed consumer reads every committed record once and no aborted one; a
// read_uncommitted consumer reads every record, aborted ones included. With no
// transaction open, the read_committed end offset (the last stable offset) equals the
// read_uncommitted one (the high watermark).
func TestTxnAbortEveryThird(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic, parts, perTxn = "txn-abort-third", 3, 40
	createTopic(t, b.Admin(t), topic, parts, nil)
	prod := b.Client(t, kgo.TransactionalID("abort-third"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))

	var committed, aborted []string
	for i := range 30 {
		commit := i%3 != 1 // the last one, 29, commits: its markers follow every aborted record
		vals := runTxn(t, prod, topic, fmt.Sprintf("t%d", i), perTxn, commit)
		if commit {
			committed = append(committed, vals...)
		} else {
			aborted = append(aborted, vals...)
		}
	}
	cl := func(o ...kgo.Opt) *kgo.Client { return b.Client(t, o...) }
	rc := values(t, consumeFrom(t, func(o ...kgo.Opt) *kgo.Client { return cl(append(o, readCommitted)...) }, topic, fromStart(parts), len(committed), 60*time.Second))
	for _, v := range committed {
		if !rc[v] {
			t.Errorf("committed %q not read under read_committed", v)
		}
	}
	for _, v := range aborted {
		if rc[v] {
			t.Errorf("aborted %q read under read_committed", v)
		}
	}
	if len(rc) != len(committed) {
		t.Errorf("read_committed read %d records, want the %d committed", len(rc), len(committed))
	}
	ru := values(t, consumeFrom(t, cl, topic, fromStart(parts), len(committed)+len(aborted), 60*time.Second))
	for _, v := range append(committed, aborted...) {
		if !ru[v] {
			t.Errorf("%q not read under read_uncommitted", v)
		}
	}

	adm := b.Admin(t)
	ctx := ctxFor(t, 15*time.Second)
	hw, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	hw.Each(func(o kadm.ListedOffset) {
		l, _ := lso.Lookup(topic, o.Partition)
		if o.Err != nil || l.Err != nil || l.Offset != o.Offset {
			t.Errorf("partition %d: last stable offset %d (%v), high watermark %d (%v); with no transaction open they are equal", o.Partition, l.Offset, l.Err, o.Offset, o.Err)
		}
		// Each partition holds its share of the records plus one marker per transaction.
		if want := int64(30*perTxn/parts + 30); o.Offset != want {
			t.Errorf("partition %d ends at %d, want %d (records and one marker per transaction)", o.Partition, o.Offset, want)
		}
	})
}

// TestTxnZombieFenced: a second producer with the same transactional id fences the first.
// The first producer's open transaction is aborted, its commit fails with a fencing error,
// and a read_committed consumer reads only the second producer's records.
func TestTxnZombieFenced(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "txn-zombie"
	createTopic(t, b.Admin(t), topic, 2, nil)
	ctx := ctxFor(t, 60*time.Second)

	zombie := b.Client(t, kgo.TransactionalID("zombie"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := zombie.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "zombie-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	successor := b.Client(t, kgo.TransactionalID("zombie"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	want := runTxn(t, successor, topic, "successor", 10, true)

	err := zombie.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("the fenced producer's commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	got := values(t, consumeFrom(t, func(o ...kgo.Opt) *kgo.Client { return b.Client(t, append(o, readCommitted)...) }, topic, fromStart(2), len(want), 60*time.Second))
	for _, v := range want {
		if !got[v] {
			t.Errorf("successor's %q not read", v)
		}
	}
	for v := range got {
		if len(v) > 6 && v[:6] == "zombie" {
			t.Errorf("the fenced producer's %q read under read_committed", v)
		}
	}
}

// TestTxnTimeoutAborts: a transaction left open past its timeout is aborted by the
// coordinator. Until then the last stable offset holds read_committed consumers before
// the transaction's first record; after it they read past it, and the abandoned records
// are never read. The producer's late commit fails.
func TestTxnTimeoutAborts(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "txn-timeout"
	adm := b.Admin(t)
	createTopic(t, adm, topic, 1, nil)
	setCluster(t, adm, "transaction.abort.timed.out.transaction.cleanup.interval.ms", "100")
	ctx := ctxFor(t, 60*time.Second)
	abandoned := b.Client(t, kgo.TransactionalID("abandoned"), kgo.TransactionTimeout(2*time.Second))
	if err := abandoned.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := abandoned.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("abandoned")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	plain := b.Client(t)
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lso := func() int64 {
		o, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := o.Lookup(topic, 0)
		return l.Offset
	}
	if got := lso(); got != 0 {
		t.Fatalf("last stable offset %d with the transaction open at offset 0, want 0", got)
	}
	dp, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	open := 0
	for _, pr := range dp.SortedProducers() {
		if pr.CurrentTxnStartOffset == 0 {
			open++
		}
	}
	if open != 1 {
		t.Errorf("DescribeProducers shows %d producers with a transaction open at offset 0, want 1: %+v", open, dp.SortedProducers())
	}
	if lag, ok := b.Metric(t, "cairn_partition_lso_lag", `{partition="0",topic="`+topic+`"}`); !ok || lag != 2 {
		t.Errorf("cairn_partition_lso_lag = %v (%v) with two records behind the open transaction, want 2", lag, ok)
	}
	// The abort marker follows the plain record: offsets 0 abandoned, 1 plain, 2 marker.
	waitFor(t, 30*time.Second, func() bool { return lso() == 3 })
	waitFor(t, 10*time.Second, func() bool {
		n, ok := b.Metric(t, "cairn_txn_aborted_by_timeout_total", "")
		return ok && n == 1
	})
	got := values(t, consumeFrom(t, func(o ...kgo.Opt) *kgo.Client { return b.Client(t, append(o, readCommitted)...) }, topic, fromStart(1), 1, 30*time.Second))
	if !got["plain"] || got["abandoned"] {
		t.Errorf("read_committed read %v, want only the plain record", got)
	}
	if err := abandoned.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("a commit after the coordinator aborted the transaction succeeded")
	}
}

// TestTxnCLI: `cairn txn list` and `cairn txn describe` show an open transaction, with
// its partitions, and its state once committed.
func TestTxnCLI(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "txn-cli"
	createTopic(t, b.Admin(t), topic, 2, nil)
	ctx := ctxFor(t, 60*time.Second)
	p := b.Client(t, kgo.TransactionalID("cli-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := cairnCLI(t, b, "", "txn", "list", "--state", "Ongoing")
	if !strings.Contains(r.Stdout, "cli-txn") || !strings.Contains(r.Stdout, "Ongoing") {
		t.Errorf("txn list --state Ongoing does not show the open transaction:\n%s", r.Stdout)
	}
	r = cairnCLI(t, b, "", "txn", "describe", "cli-txn")
	if !strings.Contains(r.Stdout, "Ongoing") || !strings.Contains(r.Stdout, topic+"/1") {
		t.Errorf("txn describe of an open transaction lacks its state or partition:\n%s", r.Stdout)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool {
		return strings.Contains(cairnCLI(t, b, "", "txn", "describe", "cli-txn").Stdout, "CompleteCommit")
	})
	if r := cairnCLI(t, b, "", "txn", "list", "--state", "Ongoing"); strings.Contains(r.Stdout, "cli-txn") {
		t.Errorf("a committed transaction is listed as Ongoing:\n%s", r.Stdout)
	}
	if r := run(t, 30*time.Second, "", cairnBin, "txn", "describe", "nobody", "--brokers", b.KafkaAddr); r.Err == nil {
		t.Errorf("describing an unknown transactional id succeeded:\n%s", r)
	}
}
