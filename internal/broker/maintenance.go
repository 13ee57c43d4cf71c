package broker

import (
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/controller"
)

// Maintenance mode (DESIGN.md §8): the controller records that a broker is in maintenance
// (controller.SetBrokerMaintenance, one broker at a time); that broker then moves every
// leadership it holds, partitions and the controller group alike, to an in-sync replica on
// another live broker not in maintenance, and turns its Raft host's campaign switch off so
// that it wins no election until maintenance ends. A partition whose only live in-sync
// replicas are in maintenance keeps its leader here: the status counts it as failed and says
// why. The status is computed from the leaderships every broker publishes, so any broker
// answers it.
//
// A broker restarted in maintenance turns its switch off once its controller replica has
// caught up, not before: it could win an election in that window only if no other replica
// of the group had a leader, since pre-vote keeps a restarted follower from unseating one.

// maintenanceTick is how often the drain looks again at what this broker leads.
const maintenanceTick = 250 * time.Millisecond

// SetMaintenance turns maintenance mode on or off for broker id. Errors: an unknown broker
// (BROKER_ID_NOT_REGISTERED), another broker already in maintenance (INVALID_REQUEST, the
// message names it).
func (b *Broker) SetMaintenance(id int32, on bool) *Error {
	if _, ok := b.state().Broker(id); !ok {
		return errorf(kerr.BrokerIDNotRegistered, "broker %d is not registered", id)
	}
	if other, ok := b.state().InMaintenance(); ok && on && other != id {
		return errorf(kerr.InvalidRequest, "broker %d is already in maintenance: only one broker may be in maintenance at a time", other)
	}
	_, err := b.propose(controller.SetBrokerMaintenance{ID: id, On: on})
	if err == nil {
		b.lg.Info("maintenance mode", "broker", id, "on", on)
	}
	return err
}

// MaintenanceStatus is a broker's maintenance drain as the admin API reports it.
type MaintenanceStatus struct {
	Draining bool `json:"draining"`
	// Finished: draining, and every leadership that can move has moved.
	Finished bool `json:"finished"`
	// LeadersLeft counts the leaderships the broker still holds (partitions, and the
	// controller group); Failed those of them that have nowhere to go, Errors why.
	LeadersLeft int      `json:"leaders_left"`
	Failed      int      `json:"failed"`
	Errors      []string `json:"errors"`
}

// MaintenanceStatus reports broker id's maintenance drain; ok is false for an unknown
// broker.
func (b *Broker) MaintenanceStatus(id int32) (MaintenanceStatus, bool) {
	br, ok := b.state().Broker(id)
	if !ok {
		return MaintenanceStatus{}, false
	}
	st := MaintenanceStatus{Draining: br.Maintenance, Errors: []string{}}
	for _, led := range b.ledBy(id) {
		st.LeadersLeft++
		if b.transferTarget(led.isr, led.assignment, id) < 0 {
			st.Failed++
			st.Errors = append(st.Errors, fmt.Sprintf("%s: no in-sync replica on another live broker outside maintenance; it keeps its leader", led.name))
		}
	}
	if b.ControllerID() == id {
		st.LeadersLeft++
		if b.controllerTarget(id) < 0 {
			st.Failed++
			st.Errors = append(st.Errors, "controller group: no other live voter outside maintenance; it keeps its leader")
		}
	}
	st.Finished = st.Draining && st.LeadersLeft == st.Failed
	return st, true
}

// ledPartition is one partition and what its leader says of it.
type ledPartition struct {
	name       string // topic/partition
	topic      *controller.Topic
	p          int32
	leader     int32
	isr        []int32
	assignment []int32
}

// partitionLeaders lists every partition with the leadership this broker knows of.
func (b *Broker) partitionLeaders() []ledPartition {
	m := b.topics.Load()
	if m == nil {
		return nil
	}
	var out []ledPartition
	for _, t := range *m {
		for p := int32(0); p < t.Partitions(); p++ {
			v := b.PartitionView(*t, p)
			out = append(out, ledPartition{name: fmt.Sprintf("%s/%d", t.Name, p), topic: t, p: p, leader: v.Leader, isr: v.ISR, assignment: t.Assignment[p]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// ledBy lists the partitions broker id leads.
func (b *Broker) ledBy(id int32) []ledPartition {
	var out []ledPartition
	for _, lp := range b.partitionLeaders() {
		if lp.leader == id {
			out = append(out, lp)
		}
	}
	return out
}

// transferTarget picks where a leadership of from may go: the first replica of the
// assignment (so the preferred leader when it qualifies) that is in the ISR, not from, live
// and not in maintenance; -1 if none.
func (b *Broker) transferTarget(isr, assignment []int32, from int32) int32 {
	for _, id := range assignment {
		if id != from && containsID(isr, id) && b.ineligibleLeader(id) == "" {
			return id
		}
	}
	return -1
}

// controllerTarget picks a voter of the controller group other than from that is live and
// not in maintenance; -1 if none.
func (b *Broker) controllerTarget(from int32) int32 {
	st, err := b.host.Status(0)
	if err != nil {
		return -1
	}
	for _, v := range st.Voters {
		if id := int32(v); id != from && b.ineligibleLeader(id) == "" && b.host.PeerLive(v) {
			return id
		}
	}
	return -1
}

// maintenanceLoop follows this broker's maintenance flag: the campaign switch, and while
// it is on, a drain round every maintenanceTick.
func (b *Broker) maintenanceLoop() {
	tick := time.NewTicker(maintenanceTick)
	defer tick.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-tick.C:
		case <-b.svc.Load().Changed():
		}
		br, ok := b.state().Broker(b.cfg.NodeID)
		on := ok && br.Maintenance
		if b.host.Campaigning() == on {
			b.host.SetCampaigning(!on)
			b.lg.Info("campaign switch", "campaigning", !on)
		}
		if on {
			b.drainRound()
		}
	}
}

// drainRound asks for the transfer of every leadership this broker still holds. raft
// ignores a second request for a transfer already under way.
func (b *Broker) drainRound() {
	b.mu.RLock()
	var moves [][2]uint64
	for _, r := range b.replicas {
		if !r.p.IsLeader() {
			continue
		}
		if to := b.transferTarget(nodeIDs(r.p.ISR()), r.replicas, b.cfg.NodeID); to >= 0 {
			moves = append(moves, [2]uint64{r.group, uint64(to)})
		}
	}
	b.mu.RUnlock()
	for _, m := range moves {
		_ = b.host.TransferLeadership(m[0], m[1])
	}
	if b.ControllerID() == b.cfg.NodeID {
		if to := b.controllerTarget(b.cfg.NodeID); to >= 0 {
			_ = b.host.TransferLeadership(0, uint64(to))
		}
	}
}
