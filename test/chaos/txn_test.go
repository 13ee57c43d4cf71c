package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/test/chaos/history"
)

// TestTxnWorkloadOnKfake runs the txn workload for a few seconds against franz-go's fake
// cluster, which serves transactions (Cairn does not yet), with no faults: the history it
// records must pass the checker, with commits and aborts both, and a read left out of it
// must not.
func TestTxnWorkloadOnKfake(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload for seconds")
	}
	const partitions = 3
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	client := func(_ string, opts ...kgo.Opt) (*kgo.Client, error) {
		return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(kc.ListenAddrs()...)}, opts...)...)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rec := history.NewMemoryRecorder()
	w := startTxn(ctx, config{partitions: partitions, producers: 2, seed: 7}, rec, nil, client)
	time.Sleep(3 * time.Second)
	if err := w.finish(ctx); err != nil {
		t.Fatal(err)
	}
	w.wait()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	final := kfakeFinal(ctx, t, client, partitions)
	opts := history.Options{Mode: history.Txn, ReadCommitted: txnReadCommitted()}
	ops := rec.Ops()
	res := history.Check(ops, final, opts)
	t.Log(res.Summary)
	if !res.Valid() {
		t.Fatalf("the workload's history is not valid:\n%s", strings.Join(res.Violations(), "\n"))
	}
	if s := res.Summary.Txns; s.Committed == 0 || s.Aborted == 0 || s.Ambiguous != 0 {
		t.Errorf("transactions %+v: want commits and aborts, and no fault to make any ambiguous", s)
	}
	for _, c := range txnConsumers {
		n := 0
		for _, op := range ops {
			if op.Kind == history.KindCaughtUp && op.Process == c.name {
				n++
			}
		}
		if n != partitions {
			t.Errorf("%s caught up with %d partitions, want %d", c.name, n, partitions)
		}
	}
	i := slices.IndexFunc(ops, func(op history.Op) bool {
		return op.Process == "rc1" && op.Kind == history.KindPoll && len(op.Records) > 0
	})
	if i < 0 {
		t.Fatal("rc1 read nothing")
	}
	if res := history.Check(slices.Delete(slices.Clone(ops), i, i+1), final, opts); res.Count(history.VTxnMissing) == 0 {
		t.Errorf("a read of rc1 left out: %s, want txn-missing", res.Summary)
	}
}

// kfakeFinal reads every partition whole, read_uncommitted, without the markers.
func kfakeFinal(ctx context.Context, t *testing.T, client func(string, ...kgo.Opt) (*kgo.Client, error), partitions int32) history.Final {
	t.Helper()
	adm, err := client("")
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets: %v %v", err, ends.Error())
	}
	final := history.Final{}
	for p := range partitions {
		e, _ := ends.Lookup(topic, p)
		c, err := client("", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}), kgo.KeepControlRecords())
		if err != nil {
			t.Fatal(err)
		}
		var recs []history.Record
		for last := int64(-1); last < e.Offset-1; {
			fs := c.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("partition %d: read up to %d of %d", p, last, e.Offset)
			}
			for _, r := range fs.Records() {
				last = max(last, r.Offset)
				if !r.Attrs.IsControl() {
					recs = append(recs, history.RecordOf(r))
				}
			}
		}
		c.Close()
		final[history.TP{Topic: topic, Partition: p}] = history.FinalPartition{Records: recs}
	}
	return final
}

func TestTxnSessionError(t *testing.T) {
	none := history.Check(nil, nil, history.Options{Mode: history.Txn})
	if err := txnSessionError(none); err == nil || !strings.Contains(err.Error(), "no transaction committed") {
		t.Errorf("a session with no commit: %v", err)
	}
}
