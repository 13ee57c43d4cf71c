// Package contract states a topic's effective durability contract, in the terms of
// docs/durability.md: for each acks value what a success proves (appended on the leader;
// written, or fsynced, on N replicas in R racks), which failures it survives and what it
// may lose, computed from the topic's settings and from the live placement and ISR of its
// partitions; and where the live state is weaker than the promise, a warning. It owns the
// arithmetic and the wording. It reads no broker state (the admin API hands it a Topic)
// and changes none.
package contract

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Replica is one replica of a partition as the cluster sees it now.
type Replica struct {
	ID     int32  `json:"id"`
	Rack   string `json:"rack,omitempty"` // "": the broker declares none
	Live   bool   `json:"live"`
	InSync bool   `json:"in_sync"`
}

// Partition is one partition's placement and state.
type Partition struct {
	ID       int32     `json:"partition"`
	Leader   int32     `json:"leader"` // -1: none
	Replicas []Replica `json:"replicas"`
}

// Setting is one property the contract depends on, and where its value came from.
type Setting struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"` // "topic", "cluster" or "default"
}

// Topic is what the contract is computed from.
type Topic struct {
	Name              string
	WriteCaching      bool
	MinInsyncReplicas int // as set; the effective value is min(set, replicas)
	MinInsyncRacks    int // 1 is off
	FlushMs           int64
	FlushBytes        int64
	Settings          []Setting
	Partitions        []Partition
}

// Kept is whether a failure keeps an acknowledged write.
type Kept string

const (
	KeptYes    Kept = "kept"
	KeptWindow Kept = "may lose the flush window"
	KeptNo     Kept = "may be lost"
)

// Outcome is one failure and what it does to a write acknowledged under one acks value.
type Outcome struct {
	Failure string `json:"failure"`
	Kept    Kept   `json:"kept"`
	Why     string `json:"why"`
}

// Promise is what a success under one acks value proves.
type Promise struct {
	Acks string `json:"acks"`
	// Stage is the boundary the success waits for: "none", "appended" (on the leader),
	// "written" (on Replicas replicas, maybe not fsynced) or "fsynced".
	Stage string `json:"stage"`
	// Replicas and Racks are the fewest replicas that hold the write at success, and the
	// fewest declared racks they span, on the weakest partition.
	Replicas int       `json:"replicas"`
	Racks    int       `json:"racks"`
	Proves   string    `json:"proves"`
	Survives []Outcome `json:"survives"`
}

// Warning is a partition whose state now is weaker than the topic's promise.
type Warning struct {
	Partition int32  `json:"partition"`
	What      string `json:"what"`
}

// Refused is a Kafka property a migrated runbook may still set, which Cairn refuses.
type Refused struct {
	Name    string `json:"name"`
	Why     string `json:"why"`
	Instead string `json:"instead"`
}

// Contract is a topic's effective durability contract now.
type Contract struct {
	Topic      string    `json:"topic"`
	Partitions int       `json:"partitions"`
	Promises   []Promise `json:"promises"`
	MayLose    string    `json:"may_lose"`
	Warnings   []Warning `json:"warnings"`
	Settings   []Setting `json:"settings"`
	Refused    []Refused `json:"refused"`
}

// Promise returns the promise of an acks value ("0", "1", "all").
func (c Contract) Promise(acks string) (Promise, bool) {
	for _, p := range c.Promises {
		if p.Acks == acks {
			return p, true
		}
	}
	return Promise{}, false
}

// Outcome returns what the named failure does to a write acknowledged under p.
func (p Promise) Outcome(failure string) (Outcome, bool) {
	for _, o := range p.Survives {
		if o.Failure == failure {
			return o, true
		}
	}
	return Outcome{}, false
}

// Failure names, as they appear in Outcome.Failure.
const (
	MinorityCrash     = "minority crash"
	ClusterCrash      = "whole-cluster crash"
	ClusterPowerCut   = "whole-cluster power cut"
	rackLossPrefix    = "loss of rack "
	racksLossPrefix   = "loss of racks "
	stageNone         = "none"
	stageAppended     = "appended"
	stageWritten      = "written"
	stageFsynced      = "fsynced"
	noPartitionsProof = "the topic has no partitions"
)

// Explain computes t's contract. refused are the Kafka properties Cairn refuses that bear
// on durability (RefusedForDurability gives them).
func Explain(t Topic, refused []Refused) Contract {
	c := Contract{Topic: t.Name, Partitions: len(t.Partitions), Settings: t.Settings, Refused: refused}
	if c.Warnings == nil {
		c.Warnings = []Warning{}
	}
	racks := topicRacks(t)
	c.Promises = []Promise{acks0(racks), acks1(racks), acksAll(t, racks)}
	switch {
	case t.WriteCaching:
		c.MayLose = fmt.Sprintf("under write caching, a power cut of a majority of a partition's replicas at once loses what they had not fsynced: "+
			"the last flush window, at most flush.ms=%d ms or flush.bytes=%d bytes of each partition, as a clean suffix", t.FlushMs, t.FlushBytes)
	default:
		c.MayLose = "nothing acknowledged at acks=all, unless the disks of a majority of a partition's replicas are lost"
	}
	for _, p := range t.Partitions {
		c.Warnings = append(c.Warnings, warnings(t, p, racks)...)
	}
	return c
}

func acks0(racks []string) Promise {
	p := Promise{Acks: "0", Stage: stageNone,
		Proves: "nothing: no response is sent, so the client cannot learn of a failure (the leader still validates and appends it)"}
	for _, f := range failures(racks) {
		p.Survives = append(p.Survives, Outcome{f, KeptNo, "nothing was promised"})
	}
	return p
}

func acks1(racks []string) Promise {
	p := Promise{Acks: "1", Stage: stageAppended, Replicas: 1,
		Proves: "appended on the leader: not fsynced, not on any other replica"}
	why := map[string]string{
		MinorityCrash:   "lost if the leader is among the crashed before a majority has it: the new leader's log replaces it",
		ClusterCrash:    "a replica with a shorter log may win the election and replace it",
		ClusterPowerCut: "lost unless a majority fsynced it first",
	}
	for _, f := range failures(racks) {
		w, ok := why[f]
		if !ok {
			w = "lost if the leader was in the lost racks before a majority had it"
		}
		p.Survives = append(p.Survives, Outcome{f, KeptNo, w})
	}
	return p
}

func acksAll(t Topic, racks []string) Promise {
	p := Promise{Acks: "all", Stage: stageFsynced}
	if t.WriteCaching {
		p.Stage = stageWritten
	}
	if len(t.Partitions) == 0 {
		p.Proves = noPartitionsProof
		return p
	}
	p.Replicas, p.Racks = -1, -1
	for _, part := range t.Partitions {
		n := holders(t, part)
		r := minRacksOf(declaredRacks(part.Replicas), n, t.MinInsyncRacks)
		if p.Replicas < 0 || n < p.Replicas {
			p.Replicas = n
		}
		if p.Racks < 0 || r < p.Racks {
			p.Racks = r
		}
	}
	verb := "fsynced"
	if t.WriteCaching {
		verb = "written (not yet fsynced)"
	}
	p.Proves = fmt.Sprintf("%s on at least %s", verb, plural(p.Replicas, "replica", "replicas"))
	if p.Racks > 0 {
		p.Proves += " in at least " + plural(p.Racks, "declared rack", "declared racks")
	}
	if t.WriteCaching {
		p.Proves += fmt.Sprintf("; fsynced within flush.ms=%d ms or flush.bytes=%d bytes", t.FlushMs, t.FlushBytes)
	}
	p.Proves += ", and visible to consumers"
	p.Survives = []Outcome{
		{MinorityCrash, KeptYes, "a majority of the replicas holds it and any new leader comes from a majority"},
		{ClusterCrash, KeptYes, "the page cache of every machine reaches its disk"},
	}
	if t.WriteCaching {
		p.Survives = append(p.Survives, Outcome{ClusterPowerCut, KeptWindow,
			fmt.Sprintf("what was not fsynced is gone everywhere: up to flush.ms=%d ms or flush.bytes=%d bytes of each partition", t.FlushMs, t.FlushBytes)})
	} else {
		p.Survives = append(p.Survives, Outcome{ClusterPowerCut, KeptYes, "a majority fsynced it before the success"})
	}
	for _, lost := range rackLosses(racks) {
		p.Survives = append(p.Survives, rackLossOutcome(t, lost))
	}
	return p
}

// holders is the fewest replicas of part that hold an acks=all write at its success: a
// majority (Raft's commit, or the majority-replicated boundary), and min.insync.replicas.
func holders(t Topic, part Partition) int {
	rf := len(part.Replicas)
	return max(rf/2+1, min(max(t.MinInsyncReplicas, 1), rf))
}

// rackLossOutcome says whether losing the racks in lost keeps an acks=all write on every
// partition.
func rackLossOutcome(t Topic, lost []string) Outcome {
	name := rackLossName(lost)
	unavailable := []int32{}
	for _, part := range t.Partitions {
		if !keptOnLoss(t, part, inRacks(part.Replicas, lost), nil) {
			return Outcome{name, KeptNo, fmt.Sprintf("partition %d: %s could all be in %s",
				part.ID, plural(holders(t, part), "replica that holds it", "replicas that hold it"), strings.Join(lost, " and "))}
		}
		if survivors := len(part.Replicas) - len(inRacks(part.Replicas, lost)); survivors < len(part.Replicas)/2+1 {
			unavailable = append(unavailable, part.ID)
		}
	}
	why := "every partition keeps a replica that holds it outside " + strings.Join(lost, " and ")
	if len(unavailable) > 0 {
		why += fmt.Sprintf("; partitions %v lose their majority and wait for the racks to return, or for `cairn cluster recover`", unavailable)
	}
	return Outcome{name, KeptYes, why}
}

// keptOnLoss: no set of holders that an acks=all success allows lies wholly among the
// replicas gone, those in the lost racks (inLost) and those down already. The holders are
// at least holders(part) replicas, spanning at least min.insync.racks declared racks when
// that is on.
func keptOnLoss(t Topic, part Partition, inLost, down []Replica) bool {
	gone := inLost
	for _, d := range down {
		if !slices.ContainsFunc(gone, func(r Replica) bool { return r.ID == d.ID }) {
			gone = append(gone, d)
		}
	}
	if len(gone) < holders(t, part) {
		return true
	}
	return t.MinInsyncRacks > 1 && len(declaredRacks(gone)) < t.MinInsyncRacks
}

func inRacks(rs []Replica, racks []string) []Replica {
	var out []Replica
	for _, r := range rs {
		if r.Rack != "" && slices.Contains(racks, r.Rack) {
			out = append(out, r)
		}
	}
	return out
}

// declaredRacks lists the replicas' racks, one entry per replica ("" for none).
func declaredRacks(rs []Replica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Rack)
	}
	return out
}

// minRacksOf is the fewest distinct declared racks that n of the replicas whose racks are
// given can span, raised to minRacks when that is on: the replicas without a rack are
// taken first (they count for none), then the fullest racks.
func minRacksOf(replicaRacks []string, n, minRacks int) int {
	count := map[string]int{}
	for _, r := range replicaRacks {
		count[r]++
	}
	n -= count[""]
	delete(count, "")
	sizes := make([]int, 0, len(count))
	for _, c := range count {
		sizes = append(sizes, c)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(sizes)))
	spanned := 0
	for _, s := range sizes {
		if n <= 0 {
			break
		}
		n -= s
		spanned++
	}
	if minRacks > 1 {
		spanned = max(spanned, minRacks)
	}
	return spanned
}

// topicRacks lists the declared racks of the topic's replicas, sorted.
func topicRacks(t Topic) []string {
	var out []string
	for _, p := range t.Partitions {
		for _, r := range p.Replicas {
			if r.Rack != "" && !slices.Contains(out, r.Rack) {
				out = append(out, r.Rack)
			}
		}
	}
	sort.Strings(out)
	return out
}

// rackLosses are the rack failures worth stating: each rack, and each pair when three or
// more racks hold replicas (losing both of two racks is losing everything).
func rackLosses(racks []string) [][]string {
	var out [][]string
	if len(racks) < 2 {
		return nil // one rack, or none declared: a rack loss is a whole-cluster failure
	}
	for _, r := range racks {
		out = append(out, []string{r})
	}
	if len(racks) >= 3 {
		for i := range racks {
			for j := i + 1; j < len(racks); j++ {
				out = append(out, []string{racks[i], racks[j]})
			}
		}
	}
	return out
}

func failures(racks []string) []string {
	out := []string{MinorityCrash, ClusterCrash, ClusterPowerCut}
	for _, lost := range rackLosses(racks) {
		out = append(out, rackLossName(lost))
	}
	return out
}

// RackLoss names the failure of losing the racks in lost, as the contract's outcomes do.
func RackLoss(lost ...string) string { return rackLossName(lost) }

// rackLossName is the failure of losing the racks in lost: "loss of rack a", "loss of
// racks a and b".
func rackLossName(lost []string) string {
	if len(lost) == 1 {
		return rackLossPrefix + lost[0]
	}
	return racksLossPrefix + strings.Join(lost, " and ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
