package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A consume-transform-produce chain of three franz-go GroupTransactSession stages (issue
// 16): each stage's members consume their group's input under read_committed, produce every
// record to the next topic and commit the offsets in the same transaction. Members join and
// leave while the chain runs, so the groups rebalance mid-stream. At the end the last topic
// holds every source record exactly once under read_committed: none lost, none doubled.

const (
	chainStages  = 3
	chainParts   = 4
	chainMembers = 2 // per stage; the second joins late and the first leaves early
)

// chainRecords is the source size: the 500,000 by default, CAIRN_TXN_CHAIN_RECORDS
// to change it.
func chainRecords(t *testing.T) int {
	if v := os.Getenv("CAIRN_TXN_CHAIN_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("CAIRN_TXN_CHAIN_RECORDS=%q: not a positive count", v)
		}
		return n
	}
	return 500_000
}

func TestTxnChainRange(t *testing.T) {
	t.Parallel()
	runChain(t, "range", func(stage, member int) []kgo.Opt {
		return []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}
	})
}

func TestTxnChainCooperativeSticky(t *testing.T) {
	t.Parallel()
	runChain(t, "coop", func(stage, member int) []kgo.Opt {
		return []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}
	})
}

func TestTxnChainStatic(t *testing.T) {
	t.Parallel()
	runChain(t, "static", func(stage, member int) []kgo.Opt {
		return []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.InstanceID(fmt.Sprintf("chain-static-%d-%d", stage, member))}
	})
}

func chainTopic(name string, stage int) string { return fmt.Sprintf("chain-%s-%d", name, stage) }

func runChain(t *testing.T, name string, groupOpts func(stage, member int) []kgo.Opt) {
	n := chainRecords(t)
	b := groupBroker(t)
	adm := b.Admin(t)
	for s := 0; s <= chainStages; s++ {
		createTopic(t, adm, chainTopic(name, s), chainParts, nil)
	}
	src := b.Client(t, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	ctx := ctxFor(t, 10*time.Minute)
	for i := 0; i < n; i += 10_000 {
		recs := make([]*kgo.Record, 0, 10_000)
		for j := i; j < min(n, i+10_000); j++ {
			recs = append(recs, &kgo.Record{Topic: chainTopic(name, 0), Value: []byte(strconv.Itoa(j))})
		}
		if err := src.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing the source: %v", err)
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, chainStages*chainMembers)
	member := func(stage, m int, until <-chan struct{}) {
		defer wg.Done()
		opts := append([]kgo.Opt{
			kgo.SeedBrokers(b.KafkaAddr),
			kgo.TransactionalID(fmt.Sprintf("chain-%s-%d-%d", name, stage, m)),
			kgo.ConsumerGroup(fmt.Sprintf("chain-%s-g%d", name, stage)),
			kgo.ConsumeTopics(chainTopic(name, stage-1)),
			readCommitted,
			kgo.RequireStableFetchOffsets(),
			kgo.FetchMaxWait(200 * time.Millisecond),
			// Each record goes to the next topic's partition of the same number, so a
			// transaction aborted by a rebalance and done again writes where it wrote
			// before: every input partition then ends with a commit marker, which
			// waitChainSettled counts on. With a sticky partitioner the retry could land
			// elsewhere and leave an abort marker last, past which a consumer commits no
			// offset, and the wait below would never end.
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
		}, groupOpts(stage, m)...)
		s, err := kgo.NewGroupTransactSession(opts...)
		if err != nil {
			errs <- err
			return
		}
		defer s.Close()
		for runCtx.Err() == nil {
			select {
			case <-until:
				return
			default:
			}
			fs := s.PollRecords(runCtx, 2000)
			if runCtx.Err() != nil {
				return
			}
			if err := fs.Err0(); err != nil {
				errs <- fmt.Errorf("stage %d member %d polling: %w", stage, m, err)
				return
			}
			if fs.Empty() {
				continue
			}
			if err := s.Begin(); err != nil {
				errs <- fmt.Errorf("stage %d member %d beginning: %w", stage, m, err)
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				s.Produce(runCtx, &kgo.Record{Topic: chainTopic(name, stage), Partition: r.Partition, Value: r.Value}, nil)
			})
			if _, err := s.End(runCtx, kgo.TryCommit); err != nil && runCtx.Err() == nil {
				// A failed commit is aborted and the records are consumed again: exactly
				// once still holds. Keep going, as an application would.
				t.Logf("stage %d member %d: transaction not committed: %v", stage, m, err)
			}
		}
	}
	leaveEarly := make(chan struct{})
	never := make(chan struct{})
	for stage := 1; stage <= chainStages; stage++ {
		wg.Add(1)
		go member(stage, 0, leaveEarly)
	}
	out := chainTopic(name, chainStages)
	rc := b.Client(t, kgo.ConsumeTopics(out), readCommitted, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := make(map[string]int, n)
	read := func(until func() bool) {
		for !until() {
			fs := rc.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("the chain delivered %d of %d records in time", len(seen), n)
			}
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		}
	}
	// The second members join once a tenth has gone through, and the first members leave
	// at half: every group rebalances twice with transactions in flight.
	read(func() bool { return len(seen) >= n/10 })
	for stage := 1; stage <= chainStages; stage++ {
		wg.Add(1)
		go member(stage, 1, never)
	}
	read(func() bool { return len(seen) >= n/2 })
	close(leaveEarly)
	read(func() bool { return len(seen) >= n })
	// Wait until the groups have committed all their input, so a late duplicate would be
	// in the output by now, then read the output once more.
	waitChainSettled(t, adm, name)
	stop()
	wg.Wait()
	// A plain record after the chain's last transaction on each partition: once it is read
	// under read_committed, everything before it was.
	sentinels := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < chainParts; p++ {
		if err := sentinels.ProduceSync(ctx, &kgo.Record{Topic: out, Partition: p, Value: []byte("end")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	read(func() bool { return seen["end"] == chainParts })
	delete(seen, "end")
	var dups, lost int
	for i := 0; i < n; i++ {
		switch c := seen[strconv.Itoa(i)]; {
		case c == 0:
			lost++
		case c > 1:
			dups++
		}
	}
	if lost > 0 || dups > 0 || len(seen) != n {
		t.Fatalf("the chain's output under read_committed: %d lost, %d doubled, %d distinct of %d", lost, dups, len(seen), n)
	}
}

// waitChainSettled waits until each stage's group has committed offsets at the
// read_committed end of its input (an empty partition needs no commit). On a timeout it
// names what was still behind.
func waitChainSettled(t *testing.T, adm *kadm.Client, name string) {
	t.Helper()
	var behind string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if behind = chainBehind(t, adm, name); behind == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chain's groups had not committed their input within 2m0s: %s", behind)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chainBehind says which stage's group has not committed up to its input's end, or "".
func chainBehind(t *testing.T, adm *kadm.Client, name string) string {
	ctx := ctxFor(t, 15*time.Second)
	for stage := 1; stage <= chainStages; stage++ {
		in := chainTopic(name, stage-1)
		ends, err := adm.ListCommittedOffsets(ctx, in)
		if err != nil {
			return fmt.Sprintf("listing the end of %s: %v", in, err)
		}
		group := fmt.Sprintf("chain-%s-g%d", name, stage)
		got, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return fmt.Sprintf("fetching the offsets of %s: %v", group, err)
		}
		var lag []string
		ends.Each(func(o kadm.ListedOffset) {
			c, ok := got.Lookup(in, o.Partition)
			end := o.Offset
			if stage > 1 && end > 0 {
				// A transactional input ends with its last commit marker, which a
				// consumer reads past but commits no offset after.
				end--
			}
			if (!ok && end > 0) || (ok && c.At < end) {
				lag = append(lag, fmt.Sprintf("%s/%d committed %d (found %v), end %d", in, o.Partition, c.At, ok, end))
			}
		})
		if len(lag) > 0 {
			return fmt.Sprintf("group %s: %v", group, lag)
		}
	}
	return ""
}
