package broker

import (
	"strconv"
	"sync"
	"time"
)

// The leader balancer. Elections leave leaderships wherever they fell: after a broker
// restarts it leads nothing until something moves leaders back. The balancer runs on the
// controller leader only, every leader.imbalance.check.interval.seconds while
// auto.leader.rebalance.enable is on, and follows Kafka's rule: a broker whose share of
// "preferred but led elsewhere" partitions is above leader.imbalance.per.broker.percentage
// gets them back. It moves a leadership only by Raft leadership transfer (DESIGN.md §8), only
// to the preferred replica (the first of the assignment), only when that replica is live,
// in the ISR and not in maintenance, never off a broker in maintenance (that broker's drain
// owns its leaderships), never for a partition being moved, and at most
// maxBalancerMoves per round.

// maxBalancerMoves bounds the transfers one round starts: a returning broker takes its
// leaderships back over a few rounds rather than in one burst of elections.
const maxBalancerMoves = 64

// balancerPoll is how often the loop looks at the clock and the configuration; a round
// runs when the configured interval has passed since the last one.
const balancerPoll = time.Second

// BalancerStatus is the leader balancer's state as the admin API reports it. LastRun and
// Moves are this broker's: they are the balancer's own only on the controller leader.
type BalancerStatus struct {
	Enabled         bool   `json:"enabled"`
	IntervalSeconds int64  `json:"interval_seconds"`
	LastRun         string `json:"last_run"` // RFC 3339, or "" before the first round here
	Moves           int64  `json:"moves"`
	// Leaders counts the partitions each live broker leads; Imbalance is each live
	// broker's percentage of the partitions it is preferred for that another broker leads.
	Leaders   map[string]int     `json:"leaders"`
	Imbalance map[string]float64 `json:"imbalance"`
}

type balancerState struct {
	mu      sync.Mutex
	lastRun time.Time
	moves   int64
}

// balancerLoop runs a round on the controller leader whenever the interval has passed.
func (b *Broker) balancerLoop() {
	tick := time.NewTicker(balancerPoll)
	defer tick.Stop()
	var last time.Time
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-tick.C:
		}
		cc := b.clusterConfig()
		if !cc.AutoLeaderRebalance || b.ControllerID() != b.cfg.NodeID {
			last = time.Time{}
			continue
		}
		if last.IsZero() {
			// Newly the controller leader (or newly enabled): give elections an interval to
			// settle before moving anything.
			last = time.Now()
			continue
		}
		if time.Since(last) < time.Duration(cc.LeaderImbalanceCheckSeconds)*time.Second {
			continue
		}
		last = time.Now()
		b.BalanceLeaders()
	}
}

// balancePlan is what one look at the leaderships finds.
type balancePlan struct {
	leaders   map[int32]int
	imbalance map[int32]float64
	moves     []ledPartition // to their preferred replica, in order
}

// planBalance looks at every partition's leadership: per live broker, how many it leads
// and its imbalance, and the transfers a round would ask for.
func (b *Broker) planBalance(pct int) balancePlan {
	plan := balancePlan{leaders: map[int32]int{}, imbalance: map[int32]float64{}}
	for _, br := range b.state().LiveBrokers() {
		plan.leaders[br.ID] = 0
	}
	preferred := map[int32]int{}
	elsewhere := map[int32]int{}
	candidates := map[int32][]ledPartition{}
	for _, lp := range b.partitionLeaders() {
		if lp.leader >= 0 {
			plan.leaders[lp.leader]++
		}
		if len(lp.assignment) == 0 {
			continue
		}
		pref := lp.assignment[0]
		preferred[pref]++
		if lp.leader == pref {
			continue
		}
		elsewhere[pref]++
		if lp.leader < 0 || partitionMoving(lp) || b.ineligibleLeader(pref) != "" || !containsID(lp.isr, pref) {
			continue
		}
		if br, ok := b.state().Broker(lp.leader); ok && br.Maintenance {
			continue
		}
		candidates[pref] = append(candidates[pref], lp)
	}
	for id := range plan.leaders {
		if preferred[id] > 0 {
			plan.imbalance[id] = 100 * float64(elsewhere[id]) / float64(preferred[id])
		} else {
			plan.imbalance[id] = 0
		}
	}
	for id, list := range candidates {
		if preferred[id] > 0 && 100*elsewhere[id] > pct*preferred[id] {
			plan.moves = append(plan.moves, list...)
		}
	}
	return plan
}

// partitionMoving reports whether a partition is being moved to other replicas, which the
// balancer leaves alone (the move's driver decides its leadership).
func partitionMoving(lp ledPartition) bool {
	_, moving := lp.topic.Reassigning[lp.p]
	return moving
}

// BalanceLeaders runs one balancer round now, on whichever broker it is called, whether or
// not the balancer is enabled, and returns how many transfers it started.
func (b *Broker) BalanceLeaders() int {
	plan := b.planBalance(b.clusterConfig().LeaderImbalancePerBrokerPct)
	moved := 0
	for _, lp := range plan.moves {
		if moved == maxBalancerMoves {
			break
		}
		if t, _, _ := b.requestTransfer(lp.topic.Name, lp.p, lp.assignment[0]); t != nil {
			moved++
		}
	}
	b.balancer.mu.Lock()
	b.balancer.lastRun = time.Now()
	b.balancer.moves += int64(moved)
	b.balancer.mu.Unlock()
	if moved > 0 {
		b.lg.Info("leader balancer moved leaderships to their preferred replicas", "transfers", moved, "movable", len(plan.moves))
	}
	return moved
}

// LeaderBalancerStatus reports the balancer's configuration, this broker's record of its
// rounds, and the leaderships as this broker knows them.
func (b *Broker) LeaderBalancerStatus() BalancerStatus {
	cc := b.clusterConfig()
	plan := b.planBalance(cc.LeaderImbalancePerBrokerPct)
	st := BalancerStatus{Enabled: cc.AutoLeaderRebalance, IntervalSeconds: cc.LeaderImbalanceCheckSeconds,
		Leaders: map[string]int{}, Imbalance: map[string]float64{}}
	for id, n := range plan.leaders {
		st.Leaders[itoa(id)] = n
	}
	for id, v := range plan.imbalance {
		st.Imbalance[itoa(id)] = v
	}
	b.balancer.mu.Lock()
	if !b.balancer.lastRun.IsZero() {
		st.LastRun = b.balancer.lastRun.UTC().Format(time.RFC3339)
	}
	st.Moves = b.balancer.moves
	b.balancer.mu.Unlock()
	return st
}

func itoa(id int32) string { return strconv.Itoa(int(id)) }
