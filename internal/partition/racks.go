package partition

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// min.insync.racks (DESIGN.md §3): the distinct declared racks the ISR must span to admit
// an acks=all batch, and that the replicas holding it must span before it is acknowledged.
// 1 (the default) is off: then nothing here runs on the produce path, so it allocates,
// locks and reads the clock no more than it did before racks existed.

// Racks is the rack each broker declared, by Raft id (the same numbers as broker ids). A
// broker that declared none is absent, or maps to "": it contributes no rack to
// min.insync.racks (unlike placement, where it is a rack of its own). A Racks handed to a
// partition is never changed afterwards: a new declaration comes as a new map.
type Racks map[uint64]string

// rackRecheck is how often a waiter that min.insync.racks holds back re-reads the ISR. The
// ISR shrinks when time passes with no event (a voter's lag window ends, its broker falls
// silent), and a waiter must see that to fail once the racks it waits for cannot hold the
// batch; so an answer comes at most this late after that moment.
const rackRecheck = time.Second

// SetRacks applies a change of the brokers' declared racks at run time (a broker
// re-registered with another rack). Waiters re-count the racks holding their batch at once.
func (p *Partition) SetRacks(r Racks) {
	p.racks.Store(&r)
	p.mu.Lock()
	p.advanceLocked(func(*Boundaries) {})
	p.mu.Unlock()
}

// Racks is the brokers' declared racks as this replica knows them.
func (p *Partition) Racks() Racks {
	if r := p.racks.Load(); r != nil {
		return *r
	}
	return nil
}

// RackState is what the metrics and the admin API report of min.insync.racks on a leader.
type RackState struct {
	// ISRRacks are the distinct declared racks the in-sync replicas span, sorted.
	ISRRacks []string
	// MinRacks is the topic's min.insync.racks (1: off).
	MinRacks int
	// Under: the ISR spans fewer racks than MinRacks, so acks=all is refused; At: exactly
	// MinRacks, so one more rack lost refuses it. Both false while the rule is off, or a
	// rackless cluster would show every partition under.
	Under, At bool
}

// RackState reports the ISR's racks against min.insync.racks; ok is false on a replica
// that does not lead (only the leader knows the ISR).
func (p *Partition) RackState() (RackState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.bounds.IsLeader {
		return RackState{}, false
	}
	st := RackState{ISRRacks: p.racksOfLocked(p.isrLocked(p.now())), MinRacks: p.cfg.Load().MinInsyncRacks}
	if st.MinRacks > 1 {
		st.Under = len(st.ISRRacks) < st.MinRacks
		st.At = len(st.ISRRacks) == st.MinRacks
	}
	return st, true
}

// racksOfLocked returns the distinct declared racks of replicas, sorted.
func (p *Partition) racksOfLocked(replicas []uint64) []string {
	return SpannedRacks(p.Racks(), replicas)
}

// SpannedRacks is the rule min.insync.racks counts by, for every place that shows it: the
// distinct declared racks the brokers ids span, sorted; a broker without a rack adds none.
// Never nil, so that it encodes as an empty list.
func SpannedRacks[ID ~int32 | ~uint64](racks Racks, ids []ID) []string {
	out := []string{}
	for _, id := range ids {
		if r := racks[uint64(id)]; r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// holderRacksLocked returns the distinct declared racks of the voters that hold the entry
// at index: flushed, or written under write caching.
func (p *Partition) holderRacksLocked(index uint64) []string {
	writeCaching := p.cfg.Load().WriteCaching
	holders := make([]uint64, 0, len(p.voters))
	for _, v := range p.voters {
		if heldBy(p.progress[v], writeCaching) >= index {
			holders = append(holders, v)
		}
	}
	return p.racksOfLocked(holders)
}

// isrRackShortfallLocked is admission's rack rule for an acks=all batch, given the ISR: the
// refusal's message if min.insync.racks is on and the ISR spans fewer racks, else "".
func (p *Partition) isrRackShortfallLocked(isr []uint64) string {
	need := p.cfg.Load().MinInsyncRacks
	if need <= 1 {
		return ""
	}
	if racks := p.racksOfLocked(isr); len(racks) < need {
		return fmt.Sprintf("NOT_ENOUGH_RACKS: the in-sync replicas span %s; min.insync.racks needs %d", spanned(racks), need)
	}
	return ""
}

// rackVerdict is completion's rack rule for a batch already held by min.insync.replicas
// voters: met, impossible (the ISR no longer spans the racks, so it fails at once) or still
// waiting.
type rackVerdict struct {
	met    bool
	failed *ProduceResult // set when the rule can no longer be met
	held   []string       // the racks holding the batch, for a timeout's message
	need   int
}

// rackVerdictLocked decides the rack rule for the entry at index (need > 1). Success is
// checked before impossibility: a batch the racks hold is acknowledged even if the ISR
// shrank since.
func (p *Partition) rackVerdictLocked(index uint64, need int) rackVerdict {
	v := rackVerdict{held: p.holderRacksLocked(index), need: need}
	if len(v.held) >= need {
		v.met = true
		return v
	}
	if isrRacks := p.racksOfLocked(p.isrLocked(p.now())); len(isrRacks) < need {
		r := failed(kerr.NotEnoughReplicasAfterAppend, fmt.Sprintf(
			"NOT_ENOUGH_RACKS: the batch was appended but the in-sync replicas now span %s; min.insync.racks needs %d", spanned(isrRacks), need))
		v.failed = &r
	}
	return v
}

// timedOut is the answer of a waiter whose timeout came while the rack rule still held it
// back: the batch is committed (majority replicated under write caching) and will be held
// in enough racks once a replica there catches up, so it is REQUEST_TIMED_OUT, not a
// refusal.
func (v rackVerdict) timedOut(writeCaching bool) ProduceResult {
	stage, held := "committed", "flushed"
	if writeCaching {
		stage, held = "majority replicated", "written"
	}
	return failed(kerr.RequestTimedOut, fmt.Sprintf("the batch is %s, but the replicas holding it (%s) span only %s; min.insync.racks needs %d",
		stage, held, spanned(v.held), v.need))
}

// spanned names a set of racks for a message: "2 declared racks [a b]".
func spanned(racks []string) string {
	noun := "racks"
	if len(racks) == 1 {
		noun = "rack"
	}
	return fmt.Sprintf("%d declared %s %v", len(racks), noun, racks)
}
