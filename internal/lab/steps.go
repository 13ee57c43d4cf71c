package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/internal/contract"
	"github.com/cairn-io/cairn/test/harness"
)

// The steps. Each stops one write at a boundary, shows the replicas' boundaries, removes
// brokers, reads the topic back, and checks what it observed against the topic's contract:
// a write the contract says is kept must be there (else the lab fails: the broker broke
// its promise), and each step must show what it sets out to show (else the lab fails: the
// demonstration did not happen, and printing it anyway would be a lie).

// observation is what a step saw of its write after the failure.
type observation struct {
	acknowledged bool
	kept         bool
}

type step struct {
	title   string
	explain string
	topic   string
	configs map[string]string
	// acks and failure name the contract's promise and the failure the step inflicts.
	acks, failure string
	run           func(ctx context.Context, c *cluster, s *step) (observation, error)
	// refusedWhen is, for runRefusedWhileDown, the words of the contract's warning that
	// acks=all is refused now.
	refusedWhen string
	// want is what the step demonstrates.
	want observation
}

func steps() []*step {
	return []*step{
		{
			title: "acks=1: appended on the leader only",
			explain: "Both followers lose power (kill -9), so only the leader has the record when it answers acks=1. " +
				"Then the leader is killed too, and the followers come back first: one of them becomes leader without the " +
				"record, and the old leader, back, truncates its copy to match. The leader was among a minority that crashed.",
			topic: "lab-acks1", acks: "1", failure: contract.MinorityCrash,
			run: runAppendedOnly, want: observation{acknowledged: true, kept: false},
		},
		{
			title: "acks=all with write caching: written on a majority, not fsynced",
			explain: "Every broker's fsyncs are held. With write.caching=true, acks=all answers once a majority has written " +
				"the record, before any fsync, and consumers may read it. Then every broker loses power at once.",
			topic: "lab-cached", configs: map[string]string{"write.caching": "true"}, acks: "all", failure: contract.ClusterPowerCut,
			run: runWrittenNotFsynced, want: observation{acknowledged: true, kept: false},
		},
		{
			title: "acks=all, strict: not acknowledged before a majority fsynced it",
			explain: "Every broker's fsyncs are held again, now on a strict topic (write.caching=false): the record is " +
				"written everywhere but committed nowhere, so acks=all does not answer. Then every broker loses power.",
			topic: "lab-strict", acks: "all", failure: contract.ClusterPowerCut,
			run: runNotAcknowledged, want: observation{acknowledged: false, kept: false},
		},
		{
			title: "acks=all, strict: fsynced on a majority, committed, visible",
			explain: "One follower is paused; the leader and the other follower fsync the record, which commits it, makes it " +
				"visible and answers acks=all. Then every broker loses power, the paused one too.",
			topic: "lab-strict-2", acks: "all", failure: contract.ClusterPowerCut,
			run: runFsyncedOnMajority, want: observation{acknowledged: true, kept: true},
		},
		{
			title: "min.insync.replicas=3: what the contract says now, and what the broker does",
			explain: "A topic that asks for all three replicas in sync. One follower is killed: once the leader drops it " +
				"from the ISR, `cairn topic explain` warns that acks=all is refused, and a produce is refused with " +
				"NOT_ENOUGH_REPLICAS, appending nothing. The follower comes back, the warning goes, and the write succeeds.",
			topic: "lab-min-isr", configs: map[string]string{"min.insync.replicas": "3"}, acks: "all", failure: contract.MinorityCrash,
			refusedWhen: "below min.insync.replicas", run: runRefusedWhileDown, want: observation{acknowledged: true, kept: true},
		},
		{
			title: "min.insync.racks=3: a write held in every rack, or refused",
			explain: "A topic whose writes must be held in all three racks before acks=all succeeds (min.insync.replicas stays 2). " +
				"One follower is killed, and its rack with it: once the leader drops it from the ISR, `cairn topic explain` " +
				"warns that the ISR spans two racks only, and a produce is refused (NOT_ENOUGH_REPLICAS, its message says " +
				"NOT_ENOUGH_RACKS), appending nothing. The follower comes back, the warning goes, and the write succeeds.",
			topic: "lab-min-racks", configs: map[string]string{"min.insync.racks": "3"}, acks: "all", failure: contract.MinorityCrash,
			refusedWhen: "below min.insync.racks", run: runRefusedWhileDown, want: observation{acknowledged: true, kept: true},
		},
	}
}

// check compares what the step saw with what the contract's promise for the step's acks
// says of its failure, and with what the step set out to show; it returns that outcome.
func (s *step) check(c contract.Contract, got observation) (contract.Outcome, error) {
	p, _ := c.Promise(s.acks)
	o, ok := p.Outcome(s.failure)
	switch {
	case !ok:
		return o, fmt.Errorf("the contract of %s says nothing of acks=%s under a %s", s.topic, s.acks, s.failure)
	case got.acknowledged && !got.kept && o.Kept == contract.KeptYes:
		return o, fmt.Errorf("CONTRACT BROKEN: an acknowledged acks=%s write was lost to a %s, which the contract says it survives", s.acks, s.failure)
	case got != s.want:
		return o, fmt.Errorf("the step did not show what it sets out to: acknowledged %v, kept %v; want %v, %v",
			got.acknowledged, got.kept, s.want.acknowledged, s.want.kept)
	}
	return o, nil
}

const labValue = "the lab's record"

func produce(ctx context.Context, c *cluster, topic string, acks kgo.Acks, within time.Duration, opts ...kgo.Opt) error {
	cl, err := c.client(append([]kgo.Opt{kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic(topic),
		kgo.RecordDeliveryTimeout(within), kgo.ProduceRequestTimeout(within)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return cl.ProduceSync(pctx, kgo.StringRecord(labValue)).FirstErr()
}

// read reports whether a consumer finds the lab's record in topic.
func read(ctx context.Context, c *cluster, topic string) (bool, error) {
	cl, err := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return false, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// Right after a power cut or a leader change the partition may have no leader yet.
	var end kadm.ListedOffset
	for {
		ends, err := kadm.NewClient(cl).ListEndOffsets(rctx, topic)
		var ok bool
		if err == nil {
			end, ok = ends.Lookup(topic, 0)
		}
		if err == nil && ok && end.Err == nil {
			break
		}
		if rctx.Err() != nil {
			return false, fmt.Errorf("end offset of %s: %v %v", topic, err, end.Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if end.Offset == 0 {
		return false, nil
	}
	for {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return false, fmt.Errorf("reading %s: nothing by offset %d", topic, end.Offset)
		}
		var found bool
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == labValue })
		if found {
			return true, nil
		}
	}
}

func runAppendedOnly(ctx context.Context, c *cluster, s *step) (observation, error) {
	l := c.leader(s.topic)
	if l < 0 {
		return observation{}, errors.New("no leader")
	}
	// The followers lose power: a paused one would still find the leader's appends in its
	// socket buffer when it resumed.
	var followers []*harness.Broker
	for i, b := range c.bs {
		if i != l {
			followers = append(followers, b)
		}
	}
	if err := harness.Kill(followers...); err != nil {
		return observation{}, err
	}
	err := produce(ctx, c, s.topic, kgo.LeaderAck(), 10*time.Second)
	fmt.Fprintf(c.out, "\nBoth followers lost power; acks=1 produce to the leader: %s\n", outcome(err))
	c.boundaries(s.topic)
	if err := c.bs[l].Kill(); err != nil {
		return observation{}, err
	}
	if err := c.restart(ctx, followers...); err != nil {
		return observation{}, err
	}
	if err := c.waitUntil(ctx, "a new leader", func() bool { return c.leader(s.topic) >= 0 }); err != nil {
		return observation{}, err
	}
	if err := c.restart(ctx, c.bs[l]); err != nil {
		return observation{}, err
	}
	if err := c.waitUntil(ctx, "the old leader back in sync, its copy truncated", func() bool { return c.converged(s.topic) }); err != nil {
		return observation{}, err
	}
	fmt.Fprintf(c.out, "\nThe leader (broker %d) was killed too; the followers came back first and broker %d leads; the old leader is back:\n", l+1, c.leader(s.topic)+1)
	c.boundaries(s.topic)
	kept, rerr := read(ctx, c, s.topic)
	return observation{acknowledged: err == nil, kept: kept}, rerr
}

func runWrittenNotFsynced(ctx context.Context, c *cluster, s *step) (observation, error) {
	if err := c.holdAllFsyncs(); err != nil {
		return observation{}, err
	}
	err := produce(ctx, c, s.topic, kgo.AllISRAcks(), 10*time.Second)
	fmt.Fprintf(c.out, "\nacks=all produce: %s\n", outcome(err))
	c.boundaries(s.topic)
	if err == nil {
		// Shown, not checked: with every fsync held the brokers' liveness lapses within
		// seconds, and the read may find no leader.
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		seen, rerr := read(rctx, c, s.topic)
		cancel()
		if rerr == nil {
			fmt.Fprintf(c.out, "A consumer reads it before the power cut: %v\n", seen)
		}
	}
	return powerCutAndRead(ctx, c, s, err == nil)
}

func runNotAcknowledged(ctx context.Context, c *cluster, s *step) (observation, error) {
	if err := c.holdAllFsyncs(); err != nil {
		return observation{}, err
	}
	err := produce(ctx, c, s.topic, kgo.AllISRAcks(), 4*time.Second)
	fmt.Fprintf(c.out, "\nacks=all produce (waited 4 s): %s\n", outcome(err))
	c.boundaries(s.topic)
	return powerCutAndRead(ctx, c, s, err == nil)
}

func runFsyncedOnMajority(ctx context.Context, c *cluster, s *step) (observation, error) {
	l := c.leader(s.topic)
	if l < 0 {
		return observation{}, errors.New("no leader")
	}
	f := (l + 1) % len(c.bs)
	if err := c.pause(f); err != nil {
		return observation{}, err
	}
	err := produce(ctx, c, s.topic, kgo.AllISRAcks(), 10*time.Second)
	fmt.Fprintf(c.out, "\nacks=all produce with broker %d paused: %s\n", f+1, outcome(err))
	c.boundaries(s.topic)
	return powerCutAndRead(ctx, c, s, err == nil)
}

func powerCutAndRead(ctx context.Context, c *cluster, s *step, acknowledged bool) (observation, error) {
	if err := c.powerCut(ctx); err != nil {
		return observation{}, err
	}
	if err := c.waitUntil(ctx, "a leader after the power cut", func() bool { return c.leader(s.topic) >= 0 }); err != nil {
		return observation{}, err
	}
	fmt.Fprintln(c.out, "\nEvery broker lost power and started again:")
	c.boundaries(s.topic)
	kept, err := read(ctx, c, s.topic)
	return observation{acknowledged: acknowledged, kept: kept}, err
}

func outcome(err error) string {
	if err == nil {
		return "acknowledged"
	}
	return "not acknowledged (" + err.Error() + ")"
}

// runRefusedWhileDown checks the contract's warning of now against the broker's answer:
// refused while the ISR is short (of replicas, or of racks), acknowledged once it is whole
// again.
func runRefusedWhileDown(ctx context.Context, c *cluster, s *step) (observation, error) {
	l := c.leader(s.topic)
	if l < 0 {
		return observation{}, errors.New("no leader")
	}
	f := (l + 1) % len(c.bs)
	if err := c.bs[f].Kill(); err != nil {
		return observation{}, err
	}
	if err := c.waitUntil(ctx, "the leader to drop the killed follower from the ISR", func() bool {
		st, ok := c.leaderStatus(s.topic)
		return ok && len(st.ISR) == 2
	}); err != nil {
		return observation{}, err
	}
	refusal := ""
	if err := c.waitUntil(ctx, "the contract to warn of the short ISR", func() bool {
		ct, err := c.contractOf(s.topic)
		for _, w := range ct.Warnings {
			if err == nil && strings.Contains(w.What, s.refusedWhen) {
				refusal = w.What
			}
		}
		return refusal != ""
	}); err != nil {
		return observation{}, err
	}
	fmt.Fprintf(c.out, "\nBroker %d was killed. cairn topic explain now warns: %s\n", f+1, refusal)
	// One try: franz-go would retry the retriable refusal until its deadline and report that.
	err := produce(ctx, c, s.topic, kgo.AllISRAcks(), 5*time.Second, kgo.RecordRetries(0))
	fmt.Fprintf(c.out, "acks=all produce: %s\n", outcome(err))
	c.boundaries(s.topic)
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		return observation{}, fmt.Errorf("the contract warned %q, but the produce was %s", refusal, outcome(err))
	}
	if st, ok := c.leaderStatus(s.topic); !ok || st.LogEnd != 0 {
		return observation{}, fmt.Errorf("the refused produce appended something: %+v", st)
	}
	if err := c.restart(ctx, c.bs[f]); err != nil {
		return observation{}, err
	}
	if err := c.waitUntil(ctx, "the follower back in sync and the warning gone", func() bool {
		ct, err := c.contractOf(s.topic)
		return err == nil && len(ct.Warnings) == 0 && c.converged(s.topic)
	}); err != nil {
		return observation{}, err
	}
	err = produce(ctx, c, s.topic, kgo.AllISRAcks(), 10*time.Second)
	fmt.Fprintf(c.out, "\nBroker %d is back and the contract has no warning; acks=all produce: %s\n", f+1, outcome(err))
	c.boundaries(s.topic)
	kept, rerr := read(ctx, c, s.topic)
	return observation{acknowledged: err == nil, kept: kept}, rerr
}
