package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/test/chaos/faults"
	"github.com/cairn-io/cairn/test/chaos/history"
)

// The move fault (--faults move) changes the shape of the chaos topic while the load and
// the other faults run: it moves a partition to another replica set (of the same size, or
// one more or one less: a replication factor change), cancels a move under way, or moves a
// partition's leadership (a transfer to a replica, or a preferred election). A move runs
// on in the background once the cluster has recorded it, so the faults drawn after it hit
// it mid-way; its window, printed in the fault log, ends when it completes or is cancelled,
// or when --move-timeout passes. A refusal with a reason is the cluster's right, not a
// failure: it is logged and counted. The checker needs no rule for moves: they are not
// lossy, so their history markers open no fault window.
//
// The mover draws from its own generator, seeded from --seed: what it draws depends on the
// replica sets the cluster reports, and keeping that off the schedule's generator keeps the
// other faults' schedule the seed's.

// moveStats counts what the move faults did; every move request ends under exactly one of
// Completed, Cancelled, Refused and TimedOut.
type moveStats struct {
	Moves, Completed, Cancelled, Refused, TimedOut int
	// WithKill counts the moves with a broker of the old or new set killed before or
	// during them.
	WithKill                                    int
	CancelAsks, CancelsAccepted, CancelsRefused int
	Transfers, TransfersRefused                 int
	Elections, ElectionsRefused                 int
	StillMoving                                 []int32 // partitions listed as moving after the final wait
	refusedReasons, timedOutNames               []string
}

func (s moveStats) String() string {
	still := "none"
	if len(s.StillMoving) > 0 {
		still = fmt.Sprint(s.StillMoving)
	}
	return fmt.Sprintf("moves: %d requested (%d with a broker killed before or during it): %d completed, %d cancelled, %d refused, %d timed out; "+
		"cancels: %d asked, %d accepted, %d refused; leadership: %d transfers (%d refused), %d preferred elections (%d refused); still moving after the final wait: %s",
		s.Moves, s.WithKill, s.Completed, s.Cancelled, s.Refused, s.TimedOut,
		s.CancelAsks, s.CancelsAccepted, s.CancelsRefused, s.Transfers, s.TransfersRefused, s.Elections, s.ElectionsRefused, still)
}

// moveOutcome is how a move's window ended.
type moveOutcome string

const (
	moveCompleted moveOutcome = "completed"
	moveCancelled moveOutcome = "cancelled"
	moveRefused   moveOutcome = "refused"
	moveTimedOut  moveOutcome = "timed out"
	moveOpen      moveOutcome = "" // not decided yet
)

// neverListedGrace is how long a move whose request got no answer may stay unlisted, with
// the partition on its old replicas, before it counts as refused (never recorded).
const neverListedGrace = 10 * time.Second

// classifyMove decides a move's outcome from one look at the partition while no move of
// it is listed: replicas as Metadata reports them, whether a cancel was accepted or a move
// was ever listed, whether the move request was accepted, and how long ago it was made.
// Replica sets compare as sets: a move to a reordering of the same brokers is complete as
// soon as it is recorded.
func classifyMove(original, target, replicas []int32, cancelAccepted, seen, accepted bool, elapsed time.Duration) moveOutcome {
	back := sameSet(replicas, original)
	switch {
	case sameSet(replicas, target) && !(back && cancelAccepted):
		return moveCompleted
	case back && (cancelAccepted || seen):
		return moveCancelled
	case back && !accepted && elapsed > neverListedGrace:
		return moveRefused
	}
	return moveOpen
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// rackCount is how many distinct racks the brokers ids span (racks[i] is broker i+1's).
func rackCount(ids []int32, racks []string) int {
	var seen []string
	for _, id := range ids {
		if id >= 1 && int(id) <= len(racks) && !slices.Contains(seen, racks[id-1]) {
			seen = append(seen, racks[id-1])
		}
	}
	return len(seen)
}

// drawTarget draws a new replica set for a partition on current: of the same size, one
// more or one less, within [max(1, minRF), brokers], in a random order (the first is the
// preferred leader). It spans at least minRacks racks, unless stray asks for one that
// does not (to see the cluster refuse it), when such a set exists. It differs from current
// where any other set is allowed.
func drawTarget(rng *rand.Rand, current []int32, brokers int, racks []string, minRacks, minRF int, stray bool) []int32 {
	lo := max(1, minRF)
	now := min(max(len(current), lo), brokers)
	sizes := []int{now}
	if s := now + rng.IntN(3) - 1; s != now && s >= lo && s <= brokers {
		sizes = []int{s, now}
	}
	for _, size := range sizes {
		for range 64 {
			perm := rng.Perm(brokers)[:size]
			ids := make([]int32, size)
			for i, b := range perm {
				ids[i] = int32(b + 1)
			}
			if (rackCount(ids, racks) >= minRacks) == stray || slices.Equal(ids, current) {
				continue
			}
			return ids
		}
	}
	if stray {
		return drawTarget(rng, current, brokers, racks, minRacks, minRF, false)
	}
	return slices.Clone(current)
}

// drawOther draws one of ids other than not, or not itself when it is the only one.
func drawOther(rng *rand.Rand, ids []int32, not int32) int32 {
	others := slices.DeleteFunc(slices.Clone(ids), func(id int32) bool { return id == not })
	if len(others) == 0 {
		return not
	}
	return others[rng.IntN(len(others))]
}

// moveRun is one move the mover follows until its window ends.
type moveRun struct {
	name             string
	through          via // how the move was asked for, and so how the tracker lists moves
	p                int32
	original, target []int32
	began            time.Time
	accepted         bool          // the request was accepted (else it got no answer)
	cancelAfter      time.Duration // a cancel the tracker sends once this passes; < 0: none
	cancelVia        via

	mu             sync.Mutex
	cancelAccepted bool
	ended          bool
}

// mover injects the move faults and follows the moves it started.
type mover struct {
	cl         *faults.Cluster
	kc         *kgo.Client
	adm        *kadm.Client
	hc         *http.Client
	rec        *history.Recorder
	rng        *rand.Rand
	partitions int
	racks      []string // each broker's rack, broker 1 first
	minRacks   int      // the topic's min.insync.racks (1: off)
	minRF      int      // the smallest replica set a move may draw
	window     time.Duration

	ctx  context.Context // ends the trackers
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu    sync.Mutex
	stats moveStats
	runs  []*moveRun // moves whose window is open
}

// newMover returns the mover of a session; Close stops its trackers.
func newMover(cl *faults.Cluster, rec *history.Recorder, cfg config) (*mover, error) {
	kc, err := cfg.sec.client(cl, adminUser, kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		return nil, err
	}
	m := &mover{cl: cl, kc: kc, adm: kadm.NewClient(kc), hc: cfg.sec.adminHTTP(20 * time.Second), rec: rec,
		rng:        rand.New(rand.NewPCG(cfg.seed^0x6d6f7665, cfg.seed)),
		partitions: cfg.partitions, minRacks: max(1, cfg.minInsyncRacks), minRF: 1, window: cfg.moveTimeout}
	for id := 1; id <= cl.N(); id++ {
		m.racks = append(m.racks, cl.RackOf(id))
	}
	if cfg.mode == history.WriteCaching {
		// A write-caching write is acknowledged once a majority of its replicas have it
		// unflushed, and the schedule marks a power cut lossy by the share of brokers it
		// takes down. A smaller set would let a cut the schedule calls harmless take a
		// majority of a partition's replicas.
		m.minRF = min(3, cfg.brokers)
	}
	m.ctx, m.stop = context.WithCancel(context.Background())
	return m, nil
}

func (m *mover) logf(format string, args ...any) {
	fmt.Printf("chaos: %s: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// adminAddr returns the admin address of a running broker, starting from a drawn one.
func (m *mover) adminAddr(from int) string {
	n := m.cl.N()
	for i := range n {
		if b := m.cl.Broker((from+i)%n + 1); b.Running() {
			return b.AdminAddr
		}
	}
	return m.cl.Broker(from%n + 1).AdminAddr
}

// fault injects one move fault drawn from the mover's generator. It returns an error only
// when the harness fails (a broker it stopped does not start); the cluster's refusals are
// logged and counted.
func (m *mover) fault(ctx context.Context) error {
	rng := m.rng
	p := int32(rng.IntN(m.partitions))
	through := viaKafka
	if rng.IntN(2) == 0 {
		through = viaHTTP
	}
	from := rng.IntN(m.cl.N())
	switch r := rng.IntN(10); {
	case r < 5:
		return m.move(ctx, p, through, from, killPlan(max(0, rng.IntN(6)-3)), -1, through)
	case r < 7:
		cancelVia := viaKafka
		if rng.IntN(2) == 0 {
			cancelVia = viaHTTP
		}
		delay := time.Duration(0)
		if rng.IntN(2) == 0 {
			delay = time.Duration(200+rng.IntN(4800)) * time.Millisecond
		}
		if run := m.openRun(rng.IntN(1 << 20)); run != nil && rng.IntN(2) == 0 {
			m.logf("cancel (%s) of %s in %v", cancelVia, run.name, delay)
			m.rec.Fault(fmt.Sprintf("cancel %s", run.name), false)
			sleepCtx(ctx, delay)
			m.cancel(ctx, run, cancelVia, from)
			return nil
		}
		return m.move(ctx, p, through, from, noKill, delay, cancelVia)
	default:
		return m.leadership(ctx, p, through, from, rng)
	}
}

// openRun returns one of the moves whose window is open, chosen by pick, or nil.
func (m *mover) openRun(pick int) *moveRun {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.runs) == 0 {
		return nil
	}
	return m.runs[pick%len(m.runs)]
}

// killPlan is whether a move fault also kills a broker, and when.
type killPlan int

const (
	noKill     killPlan = iota
	killBefore          // a broker of the old or new set is down when the move is asked for
	killDuring          // the leader, or a broker of the old or new set, dies mid-move
)

// move moves partition p to a drawn set through the given interface and follows it in the
// background. kill also kills a broker of the old or new set (killDuring: the leader, by
// turns) before the request or a moment after it, and starts it again a moment later.
// cancelAfter >= 0 cancels the move (through cancelVia) that long after it was asked for:
// at once when 0.
func (m *mover) move(ctx context.Context, p int32, through via, from int, kill killPlan, cancelAfter time.Duration, cancelVia via) error {
	current, leader, err := replicasOf(ctx, m.adm, topic, p)
	if err != nil {
		m.logf("move %s/%d skipped: %v", topic, p, err)
		return nil
	}
	stray := m.minRacks > 1 && m.rng.IntN(8) == 0
	target := drawTarget(m.rng, current, m.cl.N(), m.racks, m.minRacks, m.minRF, stray)
	name := fmt.Sprintf("move %s/%d %v -> %v (%s)", topic, p, current, target, through)
	victim := 0
	if kill != noKill && m.cl.N() >= 3 {
		union := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(current), target...))))
		victim = int(union[m.rng.IntN(len(union))])
		if kill == killDuring && leader > 0 && m.rng.IntN(2) == 0 {
			victim = int(leader)
		}
		if !m.cl.Broker(victim).Running() {
			victim = 0
		}
	}
	killAfter := time.Duration(50+m.rng.IntN(750)) * time.Millisecond
	killIt := func(why string) error {
		if err := m.cl.Kill9(victim); err != nil {
			return fmt.Errorf("killing broker %d %s: %w", victim, why, err)
		}
		name := fmt.Sprintf("kill [%d] (%s)", victim, why)
		m.logf("%s", name)
		m.rec.Fault(name, false)
		return nil
	}
	if victim != 0 && kill == killBefore {
		if err := killIt("before a move"); err != nil {
			return err
		}
		name += fmt.Sprintf(" with broker %d down", victim)
	}
	m.rec.Fault(name, false)
	var v verdict
	reqCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	if through == viaHTTP {
		v = httpMove(reqCtx, m.hc, m.adminAddr(from), topic, p, target)
	} else {
		v = kafkaMove(reqCtx, m.adm, topic, p, target)
	}
	cancel()
	m.logf("%s: %s", name, v)
	m.mu.Lock()
	m.stats.Moves++
	if victim != 0 {
		m.stats.WithKill++
	}
	if v.answer == refused {
		m.stats.Refused++
		m.stats.refusedReasons = append(m.stats.refusedReasons, name+": "+v.reason)
	}
	m.mu.Unlock()
	if v.answer != refused {
		run := &moveRun{name: name, through: through, p: p, original: current, target: target, began: time.Now(),
			accepted: v.answer == accepted, cancelAfter: -1, cancelVia: cancelVia}
		if cancelAfter > 0 {
			run.cancelAfter = cancelAfter
		}
		m.mu.Lock()
		m.runs = append(m.runs, run)
		m.mu.Unlock()
		m.wg.Add(1)
		go m.track(run, from)
		if cancelAfter == 0 {
			m.cancel(ctx, run, cancelVia, from)
		}
	}
	if victim != 0 && kill == killDuring {
		sleepCtx(ctx, killAfter)
		if err := killIt("during a move"); err != nil {
			return err
		}
	}
	if victim != 0 {
		sleepCtx(ctx, time.Duration(1000+m.rng.IntN(3000))*time.Millisecond)
		if err := m.cl.StartAll(ctx, victim); err != nil {
			return fmt.Errorf("restarting broker %d after a move: %w", victim, err)
		}
	}
	return nil
}

// cancel asks the cluster to cancel run's move.
func (m *mover) cancel(ctx context.Context, run *moveRun, through via, from int) {
	ctx, done := context.WithTimeout(ctx, 20*time.Second)
	defer done()
	var v verdict
	if through == viaHTTP {
		v = httpCancel(ctx, m.hc, m.adminAddr(from), topic, run.p)
	} else {
		v = kafkaMove(ctx, m.adm, topic, run.p, nil)
	}
	m.logf("cancel (%s) of %s: %s", through, run.name, v)
	m.mu.Lock()
	m.stats.CancelAsks++
	switch v.answer {
	case accepted:
		m.stats.CancelsAccepted++
	case refused:
		m.stats.CancelsRefused++
	}
	m.mu.Unlock()
	if v.answer == accepted {
		run.mu.Lock()
		run.cancelAccepted = true
		run.mu.Unlock()
	}
}

// leadership moves partition p's leadership: a transfer to one of its replicas over HTTP,
// or a preferred election through kadm.
func (m *mover) leadership(ctx context.Context, p int32, through via, from int, rng *rand.Rand) error {
	replicas, leader, err := replicasOf(ctx, m.adm, topic, p)
	if err != nil || len(replicas) == 0 {
		m.logf("leadership of %s/%d skipped: %v", topic, p, err)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if through == viaHTTP {
		target := drawOther(rng, replicas, leader)
		name := fmt.Sprintf("transfer %s/%d leader %d -> %d (http)", topic, p, leader, target)
		m.rec.Fault(name, false)
		v := httpTransfer(ctx, m.hc, m.adminAddr(from), topic, p, target)
		m.logf("%s: %s", name, v)
		m.mu.Lock()
		m.stats.Transfers++
		if v.answer != accepted {
			m.stats.TransfersRefused++
		}
		m.mu.Unlock()
		return nil
	}
	name := fmt.Sprintf("elect preferred %s/%d leader %d, preferred %d (kadm)", topic, p, leader, replicas[0])
	m.rec.Fault(name, false)
	v := kafkaElectPreferred(ctx, m.adm, topic, p)
	m.logf("%s: %s", name, v)
	m.mu.Lock()
	m.stats.Elections++
	if v.answer != accepted {
		m.stats.ElectionsRefused++
	}
	m.mu.Unlock()
	return nil
}

// track follows run until its window ends: it polls the moves listed (see moving), and once
// no move of the partition is listed, Metadata, until the same outcome shows twice in a
// row (the two may come from brokers that have applied the controller's log to different
// points), or the window passes. It sends run's delayed cancel on the way.
func (m *mover) track(run *moveRun, from int) {
	defer m.wg.Done()
	deadline := run.began.Add(m.window)
	var cancelAt time.Time
	if run.cancelAfter > 0 {
		cancelAt = run.began.Add(run.cancelAfter)
	}
	seen := false
	last := moveOpen
	for m.ctx.Err() == nil {
		if !cancelAt.IsZero() && time.Now().After(cancelAt) {
			cancelAt = time.Time{}
			m.cancel(m.ctx, run, run.cancelVia, from)
		}
		outcome := moveOpen
		if moving, err := m.moving(run, from); err == nil && moving {
			seen = true
		} else if err == nil {
			if replicas, _, err := replicasOf(m.ctx, m.adm, topic, run.p); err == nil {
				run.mu.Lock()
				cancelled := run.cancelAccepted
				run.mu.Unlock()
				outcome = classifyMove(run.original, run.target, replicas, cancelled, seen, run.accepted, time.Since(run.began))
			}
		}
		if outcome != moveOpen && outcome == last {
			m.end(run, outcome)
			return
		}
		last = outcome
		if time.Now().After(deadline) {
			m.end(run, moveTimedOut)
			return
		}
		sleepCtx(m.ctx, 250*time.Millisecond)
	}
	m.end(run, moveTimedOut) // the session ended first
}

// moving reports whether run's partition has a move listed, asking through the interface
// the move was asked through: ListPartitionReassignments, or GET
// /v1/partitions/reconfigurations of a running broker.
func (m *mover) moving(run *moveRun, from int) (bool, error) {
	if run.through == viaKafka {
		return kafkaMoving(m.ctx, m.adm, topic, run.p)
	}
	ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	defer cancel()
	list, v := httpReconfigurations(ctx, m.hc, m.adminAddr(from))
	if v.answer != accepted {
		return false, fmt.Errorf("listing moves: %v", v)
	}
	return slices.ContainsFunc(list, func(r reconfiguration) bool { return r.Topic == topic && r.Partition == run.p }), nil
}

// end closes run's window with outcome.
func (m *mover) end(run *moveRun, outcome moveOutcome) {
	run.mu.Lock()
	run.ended = true
	run.mu.Unlock()
	m.logf("%s: %s after %v", run.name, outcome, time.Since(run.began).Round(time.Millisecond))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs = slices.DeleteFunc(m.runs, func(r *moveRun) bool { return r == run })
	switch outcome {
	case moveCompleted:
		m.stats.Completed++
	case moveCancelled:
		m.stats.Cancelled++
	case moveRefused:
		m.stats.Refused++
		m.stats.refusedReasons = append(m.stats.refusedReasons, run.name+": never recorded")
	case moveTimedOut:
		m.stats.TimedOut++
		m.stats.timedOutNames = append(m.stats.timedOutNames, run.name)
	}
}

// finish waits, within bound, for the moves whose window is open and then for every move
// the cluster lists to end, prints where each partition is, and stops the trackers.
func (m *mover) finish(ctx context.Context, bound time.Duration) moveStats {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for ctx.Err() == nil {
		m.mu.Lock()
		open := len(m.runs)
		m.mu.Unlock()
		if open == 0 {
			break
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
	var still []int32
	for {
		moving, err := kafkaMovingAll(ctx, m.adm, topic, m.partitions)
		if err == nil {
			still = moving
			if len(moving) == 0 {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
	m.stop()
	m.wg.Wait()
	slices.Sort(still)
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer pcancel()
	m.logf("after the moves: %s", m.placement(pctx))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.StillMoving = still
	return m.stats
}

// placement describes where each partition is, as Metadata reports it, once every one has
// a leader there (a broker hears of leaders through the others' reports, a moment after a
// move or an election), or ctx ends.
func (m *mover) placement(ctx context.Context) string {
	for {
		var where []string
		leaderless := false
		for p := range m.partitions {
			replicas, leader, err := replicasOf(context.Background(), m.adm, topic, int32(p))
			if err != nil {
				where = append(where, fmt.Sprintf("%s/%d: %v", topic, p, err))
				leaderless = true
				continue
			}
			leaderless = leaderless || leader < 0
			where = append(where, fmt.Sprintf("%s/%d on %v led by %d", topic, p, replicas, leader))
		}
		if !leaderless || ctx.Err() != nil {
			return strings.Join(where, "; ")
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
}

// Close stops the trackers and closes the mover's client.
func (m *mover) Close() {
	m.stop()
	m.wg.Wait()
	m.kc.Close()
}
