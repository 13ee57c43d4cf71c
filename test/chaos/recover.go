package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/test/chaos/faults"
	"github.com/cairn-io/cairn/test/chaos/history"
)

// The recover fault (--faults recover) loses a majority of a partition's replicas for
// good and force-recovers it (operations.md, Recovering from a lost majority), as an
// operator would, under the load:
//
//  1. It draws a partition of the topic and a majority of its replicas' brokers (the
//     victims), and cuts the victims off from each other. From then on every commit of a
//     partition the victims hold a majority of needs a survivor, and it waits until each
//     survivor's commit has reached what was committed when the cut began.
//  2. It kills the victims with kill -9 and keeps them down.
//  3. It polls GET /v1/partitions/majority_lost until the controller sees them down and
//     every partition listed has no problem, then POSTs force_recover_from_nodes with each
//     plan's base, until no partition is listed.
//  4. It waits until the base leads each recovered partition of the topic, starts the
//     victims again on their old data, and checks, through GET /v1/partitions/{t}/{p} on
//     each victim, that none of them leads the old replica and that each deletes it.
//  5. It moves each recovered partition back to its replication factor (POST
//     /v1/partitions/{t}/{p}/replicas) and waits for the move to complete.
//
// The checker holds the session to the strict rule: no acknowledged write lost. That is
// the documented guarantee of min.insync.racks equal to the racks a partition spans (RF=3,
// one replica in each of three racks): every acknowledged write was on every replica, so
// the one survivor holds it. Reads need more: a consumer reads what is committed, which a
// majority of replicas hold, maybe the two victims alone; the cut of step 1 is what puts
// every record a consumer could have read on the survivor, so that the checker may demand
// that no read value vanishes.
//
// A step runs alone: the schedule draws faults one after another and every other fault it
// draws (kill, pause, partition, power, rack) is undone before the next is drawn, so none
// is active while a recovery runs. Moves run on in the background, and the session refuses
// recover with move. The controller group (every founder is a voter) must keep its own
// majority with the victims down: with RF=3 that is at least five brokers.
//
// A step that cannot start (the cluster is not settled, a survivor does not catch up, the
// plan never clears) starts the victims again, counts a skip or a failure, and the session
// goes on: nothing was recovered, and raft heals the partition on its own. Once a POST was
// accepted, a failure ends the session with an error: the cluster is not where the checker
// could judge it.

// recoverStats counts what the recover faults did.
type recoverStats struct {
	Steps      int   // recover faults drawn
	Recoveries int   // partitions force-recovered (a step recovers every partition its victims held a majority of)
	Restored   int   // recovered partitions moved back to their replication factor
	MayLose    int64 // the plans' may_lose, summed over the recoveries
	Skipped    int   // steps that did not start: the cluster was not settled, or a survivor did not catch up
	Failures   int   // steps that went wrong (see failures)
	failures   []string
}

func (s recoverStats) String() string {
	return fmt.Sprintf("recoveries: %d steps, %d partitions recovered (may_lose total %d), %d restored to their replication factor, %d skipped, %d failures",
		s.Steps, s.Recoveries, s.MayLose, s.Restored, s.Skipped, s.Failures)
}

// recoverConfigError says why a session cannot run the recover fault with the checker
// expecting no loss, or nil when it can.
func recoverConfigError(cfg config) error {
	if !cfg.faults["recover"] {
		return nil
	}
	rf := min(3, cfg.brokers)
	victims := rf/2 + 1
	switch {
	case cfg.mode != history.Strict:
		return fmt.Errorf("--faults recover needs --mode strict: only there does min.insync.racks put every acknowledged write, fsynced, on every replica, so a recovery from one survivor loses nothing (mode %s does not)", cfg.mode)
	case rf < 3:
		return fmt.Errorf("--faults recover needs a replication factor of 3 (--brokers 5 or more); %d brokers give %d", cfg.brokers, rf)
	case cfg.brokers-victims <= cfg.brokers/2:
		return fmt.Errorf("--faults recover kills %d brokers for a while, and the controller group (every founder is a voter) must keep its majority: it needs --brokers %d or more, not %d", victims, 2*victims+1, cfg.brokers)
	case cfg.minInsyncRacks != rf:
		return fmt.Errorf("--faults recover needs --min-insync-racks %d (the replication factor): with fewer, an acknowledged write may be only on the replicas a recovery loses", rf)
	case cfg.racks != nil && len(slices.Compact(slices.Sorted(slices.Values(cfg.racks)))) != len(cfg.racks):
		return fmt.Errorf("--faults recover needs every broker in a rack of its own (--racks %s shares one), so that every replica of a partition is in its own rack and min.insync.racks=%d reaches each", strings.Join(cfg.racks, ","), rf)
	case cfg.faults["move"]:
		return errors.New("--faults recover runs alone, and moves run on in the background while other faults are drawn: leave move out")
	}
	return nil
}

// drawVictims draws a majority of replicas, in ascending order, and returns them with the
// survivors (the rest, in the replicas' order).
func drawVictims(rng *rand.Rand, replicas []int32) (victims, survivors []int32) {
	k := len(replicas)/2 + 1
	perm := rng.Perm(len(replicas))
	for i, j := range perm {
		if i < k {
			victims = append(victims, replicas[j])
		}
	}
	slices.Sort(victims)
	for _, r := range replicas {
		if !slices.Contains(victims, r) {
			survivors = append(survivors, r)
		}
	}
	return victims, survivors
}

// lostMajority reports whether dead holds a majority of replicas.
func lostMajority(replicas, dead []int32) bool {
	n := 0
	for _, r := range replicas {
		if slices.Contains(dead, r) {
			n++
		}
	}
	return n > len(replicas)/2
}

// drawRestore draws the replica set a recovered partition goes back to: the base first
// (it leads already, so the move starts from a preferred leader), then others drawn from
// brokers 1..n, each in a rack none of the set has yet where there are enough racks.
func drawRestore(rng *rand.Rand, base int32, size, n int, racks []string) []int32 {
	out := []int32{base}
	used := []string{racks[base-1]}
	for _, spread := range []bool{true, false} {
		for _, b := range rng.Perm(n) {
			id := int32(b + 1)
			if len(out) == size {
				return out
			}
			if slices.Contains(out, id) || (spread && slices.Contains(used, racks[b])) {
				continue
			}
			out = append(out, id)
			used = append(used, racks[b])
		}
	}
	return out
}

// lostPlan is the part of one GET /v1/partitions/majority_lost entry the fault reads.
type lostPlan struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Base      int32   `json:"base"`
	MayLose   int64   `json:"may_lose"`
	Problem   string  `json:"problem"`
}

// recoverPartition and recoverResult are POST /v1/partitions/force_recover_from_nodes's.
type recoverPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Base      int32  `json:"base"`
}

type recoverResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Base      int32  `json:"base"`
	MayLose   int64  `json:"may_lose"`
	Error     string `json:"error"`
}

// recovered is one partition a step recovered.
type recovered struct {
	topic     string
	p         int32
	base      int32
	replicas  []int32 // before the recovery
	recoverAt time.Time
}

func (r recovered) String() string { return fmt.Sprintf("%s/%d", r.topic, r.p) }

// recoverer injects the recover faults.
type recoverer struct {
	cl         *faults.Cluster
	kc         *kgo.Client
	adm        *kadm.Client
	hc         *http.Client
	rec        *history.Recorder
	rng        *rand.Rand
	partitions int
	racks      []string
	moveWait   time.Duration
	stats      recoverStats
}

// newRecoverer returns the recoverer of a session; Close closes its client. It draws from
// its own generator, as the mover does, so the other faults' schedule stays the seed's.
func newRecoverer(cl *faults.Cluster, rec *history.Recorder, cfg config) (*recoverer, error) {
	kc, err := cfg.sec.client(cl, adminUser, kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		return nil, err
	}
	r := &recoverer{cl: cl, kc: kc, adm: kadm.NewClient(kc), hc: cfg.sec.adminHTTP(20 * time.Second), rec: rec,
		rng: rand.New(rand.NewPCG(cfg.seed^0x7265636f76, cfg.seed)), partitions: cfg.partitions, moveWait: cfg.moveTimeout}
	for id := 1; id <= cl.N(); id++ {
		r.racks = append(r.racks, cl.RackOf(id))
	}
	return r, nil
}

func (r *recoverer) Close() { r.kc.Close() }

func (r *recoverer) logf(format string, args ...any) {
	fmt.Printf("chaos: %s: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (r *recoverer) failf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.logf("recover failed: %s", msg)
	r.stats.Failures++
	r.stats.failures = append(r.stats.failures, msg)
}

// admin returns the admin address of a running broker not in avoid.
func (r *recoverer) admin(avoid []int32) string {
	for id := 1; id <= r.cl.N(); id++ {
		if b := r.cl.Broker(id); b.Running() && !slices.Contains(avoid, int32(id)) {
			return b.AdminAddr
		}
	}
	return r.cl.Broker(1).AdminAddr
}

// poll calls f every interval until it reports done, returns an error, or d passes (the
// last error, or errTimeout).
func poll(ctx context.Context, d, interval time.Duration, f func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	began := time.Now()
	var last error
	for {
		done, err := f()
		if done {
			return nil
		}
		var fatal fatalError
		if errors.As(err, &fatal) {
			return err
		}
		// An error the deadline itself caused says less than the one before it.
		if err != nil && (ctx.Err() == nil || last == nil) {
			last = err
		}
		if ctx.Err() != nil {
			if last == nil {
				last = errTimeout
			}
			return fmt.Errorf("after %v: %w", time.Since(began).Round(time.Millisecond), last)
		}
		sleepCtx(ctx, interval)
	}
}

var errTimeout = errors.New("timed out")

// fatalError ends a poll at once.
type fatalError struct{ error }

// fault runs one recover step. It returns an error only when the session must end: the
// harness failed, or a step went wrong after a recovery was recorded.
func (r *recoverer) fault(ctx context.Context) error {
	r.stats.Steps++
	p := int32(r.rng.IntN(r.partitions))
	// Settled: every broker up (the other faults are undone) and the partition led.
	var replicas []int32
	err := poll(ctx, 60*time.Second, 250*time.Millisecond, func() (bool, error) {
		for id := 1; id <= r.cl.N(); id++ {
			if !r.cl.Broker(id).Running() {
				return false, fmt.Errorf("broker %d is down", id)
			}
		}
		reps, leader, err := replicasOf(ctx, r.adm, topic, p)
		if err != nil || leader < 0 {
			return false, fmt.Errorf("%s/%d has no leader (%v)", topic, p, err)
		}
		moving, err := kafkaMoving(ctx, r.adm, topic, p)
		if err != nil || moving {
			return false, fmt.Errorf("%s/%d is moving (%v)", topic, p, err)
		}
		replicas = reps
		return true, nil
	})
	if err != nil || len(replicas) < 3 {
		r.stats.Skipped++
		r.logf("recover %s/%d skipped: not settled: %v (replicas %v)", topic, p, err, replicas)
		return nil
	}
	victims, survivors := drawVictims(r.rng, replicas)
	if n := r.cl.N(); n-len(victims) <= n/2 {
		r.stats.Skipped++
		r.logf("recover %s/%d skipped: killing %v would take the controller's majority", topic, p, victims)
		return nil
	}
	name := fmt.Sprintf("recover %s/%d on %v: lose %v for good, keep %v", topic, p, replicas, victims, survivors)
	r.logf("%s", name)
	r.rec.Fault(name, false)

	if err := r.cutAndCatchUp(ctx, victims); err != nil {
		r.cl.HealAll()
		r.stats.Skipped++
		r.logf("recover %s/%d skipped: %v", topic, p, err)
		return nil
	}
	for _, v := range victims {
		if err := r.cl.Kill9(int(v)); err != nil {
			return fmt.Errorf("%s: killing broker %d: %w", name, v, err)
		}
	}
	r.cl.HealAll() // the victims are down: their cut has done its work
	r.logf("recover: killed %v", victims)

	done, err := r.recoverAll(ctx, func() string { return r.admin(victims) }, victims)
	if err != nil {
		if len(done) > 0 {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.failf("%s: %v", name, err)
		if err := r.cl.StartAll(ctx, int32sToInts(victims)...); err != nil {
			return fmt.Errorf("%s: restarting %v after a failed recovery: %w", name, victims, err)
		}
		return nil
	}
	if err := r.afterRecovery(ctx, victims, done); err != nil {
		r.failf("%s: %v", name, err)
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// cutAndCatchUp cuts the victims off from each other and waits until, in every partition
// of the topic they hold a majority of, every survivor has committed what any replica had
// committed once the cut was in place. From then on a commit there needs a survivor.
func (r *recoverer) cutAndCatchUp(ctx context.Context, victims []int32) error {
	for i, a := range victims {
		for _, b := range victims[i+1:] {
			if err := r.cl.Partition(int(a), int(b)); err != nil {
				return err
			}
		}
	}
	for p := range int32(r.partitions) {
		replicas, _, err := replicasOf(ctx, r.adm, topic, p)
		if err != nil {
			return err
		}
		if !lostMajority(replicas, victims) {
			continue
		}
		var committed int64 = -1
		for _, id := range replicas {
			if st, err := r.cl.PartitionStatus(ctx, int(id), topic, p); err == nil {
				committed = max(committed, st.Committed)
			}
		}
		if committed < 0 {
			return fmt.Errorf("no replica of %s/%d tells its commit", topic, p)
		}
		for _, id := range replicas {
			if slices.Contains(victims, id) {
				continue
			}
			began := time.Now()
			err := poll(ctx, 20*time.Second, 50*time.Millisecond, func() (bool, error) {
				st, err := r.cl.PartitionStatus(ctx, int(id), topic, p)
				return err == nil && st.Committed >= committed, err
			})
			if err != nil {
				return fmt.Errorf("survivor %d of %s/%d did not commit up to %d: %w", id, topic, p, committed, err)
			}
			r.logf("recover: survivor %d of %s/%d committed up to %d in %v", id, topic, p, committed, time.Since(began).Round(time.Millisecond))
		}
	}
	return nil
}

// recoverAll plans and force-recovers, through the admin API of the broker addr names,
// until no partition is left without a majority, and returns the partitions recovered (the
// plan lists every topic's, not only the chaos topic's).
func (r *recoverer) recoverAll(ctx context.Context, addr func() string, victims []int32) ([]recovered, error) {
	dead := make([]string, len(victims))
	for i, v := range victims {
		dead[i] = fmt.Sprint(v)
	}
	var done []recovered
	lastPlan := ""
	err := poll(ctx, 90*time.Second, 500*time.Millisecond, func() (bool, error) {
		var plan []lostPlan
		v := adminCall(ctx, r.hc, http.MethodGet, addr(), "/v1/partitions/majority_lost?dead_nodes="+url.QueryEscape(strings.Join(dead, ",")), nil, &plan)
		if v.answer != accepted {
			return false, fmt.Errorf("GET majority_lost: %v", v)
		}
		if len(plan) == 0 {
			return len(done) > 0, errors.New("the plan lists no partition")
		}
		var body struct {
			DeadNodes  []int32            `json:"dead_nodes"`
			Partitions []recoverPartition `json:"partitions"`
		}
		body.DeadNodes = victims
		for _, pl := range plan {
			if pl.Problem != "" {
				if s := fmt.Sprintf("%s/%d: %s", pl.Topic, pl.Partition, pl.Problem); s != lastPlan {
					lastPlan = s
					r.logf("recover: plan: %s", s)
				}
				return false, fmt.Errorf("plan: %s", lastPlan)
			}
			body.Partitions = append(body.Partitions, recoverPartition{Topic: pl.Topic, Partition: pl.Partition, Base: pl.Base})
		}
		var results []recoverResult
		v = adminCall(ctx, r.hc, http.MethodPost, addr(), "/v1/partitions/force_recover_from_nodes", body, &results)
		if v.answer != accepted {
			return false, fmt.Errorf("POST force_recover_from_nodes: %v", v)
		}
		var refused []string
		for _, res := range results {
			if res.Error != "" {
				refused = append(refused, fmt.Sprintf("%s/%d: %s", res.Topic, res.Partition, res.Error))
				continue
			}
			i := slices.IndexFunc(plan, func(pl lostPlan) bool { return pl.Topic == res.Topic && pl.Partition == res.Partition })
			if i < 0 {
				return false, fatalError{fmt.Errorf("the recovery answered for %s/%d, which the plan did not list", res.Topic, res.Partition)}
			}
			done = append(done, recovered{topic: res.Topic, p: res.Partition, base: res.Base, replicas: plan[i].Replicas, recoverAt: time.Now()})
			r.stats.Recoveries++
			r.stats.MayLose += res.MayLose
			r.logf("recover: %s/%d on %v rebuilt from broker %d (may lose %d)", res.Topic, res.Partition, plan[i].Replicas, res.Base, res.MayLose)
		}
		if len(refused) > 0 {
			r.logf("recover: refused: %s", strings.Join(refused, "; "))
			return false, fmt.Errorf("refused: %s", strings.Join(refused, "; "))
		}
		return false, nil // plan again: it must now list nothing
	})
	return done, err
}

// afterRecovery waits until each recovered partition is led by its base, starts the
// victims again on their old data and checks that they neither lead nor keep their old
// replicas, then moves each partition back to its replication factor.
func (r *recoverer) afterRecovery(ctx context.Context, victims []int32, done []recovered) error {
	for _, d := range done {
		err := poll(ctx, 60*time.Second, 100*time.Millisecond, func() (bool, error) {
			st, err := r.cl.PartitionStatus(ctx, int(d.base), d.topic, d.p)
			if err == nil && !(st.IsLeader && slices.Equal(st.Replicas, []int32{d.base})) {
				err = fmt.Errorf("broker %d reports leader %d, replicas %v", d.base, st.Leader, st.Replicas)
			}
			return err == nil, err
		})
		if err != nil {
			return fmt.Errorf("%s is not led by its base %d on its own: %w", d, d.base, err)
		}
		r.logf("recover: %s led by broker %d %v after the recovery", d, d.base, time.Since(d.recoverAt).Round(time.Millisecond))
	}
	// The victims start together: both hold the old group, and would be its majority if
	// either opened it.
	startErr := make(chan error, 1)
	go func() { startErr <- r.cl.StartAll(ctx, int32sToInts(victims)...) }()
	gone := map[string]bool{}
	err := poll(ctx, 90*time.Second, 50*time.Millisecond, func() (bool, error) {
		for _, v := range victims {
			if !r.cl.Broker(int(v)).Running() {
				return false, fmt.Errorf("broker %d is not up yet", v)
			}
			for _, d := range done {
				if !slices.Contains(d.replicas, v) || gone[fmt.Sprint(d, v)] {
					continue
				}
				st, err := r.cl.PartitionStatus(ctx, int(v), d.topic, d.p)
				switch {
				case errors.Is(err, faults.ErrNoReplica):
					gone[fmt.Sprint(d, v)] = true
				case err != nil:
					return false, err
				case st.IsLeader:
					return false, fatalError{fmt.Errorf("broker %d came back leading its stale replica of %s (%+v)", v, d, st)}
				default:
					return false, fmt.Errorf("broker %d still holds its stale replica of %s", v, d)
				}
			}
		}
		return true, nil
	})
	if serr := <-startErr; serr != nil {
		return fmt.Errorf("restarting %v: %w", victims, serr)
	}
	if err != nil {
		return err
	}
	r.logf("recover: %v back on their old data, their stale replicas deleted", victims)
	for _, d := range done {
		if st, err := r.cl.PartitionStatus(ctx, int(d.base), d.topic, d.p); err != nil || !st.IsLeader {
			return fmt.Errorf("%s lost its leader %d once the dead came back (%v, %+v)", d, d.base, err, st)
		}
	}
	for _, d := range done {
		if err := r.restore(ctx, d); err != nil {
			return err
		}
		r.stats.Restored++
	}
	return nil
}

// restore moves recovered partition d back to as many replicas as it had, and waits until
// the move is complete.
func (r *recoverer) restore(ctx context.Context, d recovered) error {
	target := drawRestore(r.rng, d.base, len(d.replicas), r.cl.N(), r.racks)
	began := time.Now()
	reqCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	v := httpMove(reqCtx, r.hc, r.admin(nil), d.topic, d.p, target)
	cancel()
	r.logf("recover: move %s [%d] -> %v: %s", d, d.base, target, v)
	if v.answer == refused {
		return fmt.Errorf("moving %s back to %v: %v", d, target, v)
	}
	seen := 0 // moved and no move listed, looked at twice in a row (brokers may lag the controller)
	err := poll(ctx, r.moveWait, 250*time.Millisecond, func() (bool, error) {
		moving, err := kafkaMoving(ctx, r.adm, d.topic, d.p)
		if err != nil {
			return false, err
		}
		replicas, leader, err := replicasOf(ctx, r.adm, d.topic, d.p)
		if err != nil {
			return false, err
		}
		if moving || !sameSet(replicas, target) || leader < 0 {
			seen = 0
			return false, fmt.Errorf("on %v led by %d, moving %v", replicas, leader, moving)
		}
		seen++
		return seen >= 2, nil
	})
	if err != nil {
		return fmt.Errorf("moving %s back to %v: %w", d, target, err)
	}
	r.logf("recover: %s back on %v after %v", d, target, time.Since(began).Round(time.Millisecond))
	return nil
}

func int32sToInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}
