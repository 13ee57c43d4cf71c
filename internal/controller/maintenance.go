package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// SetBrokerMaintenance turns a broker's maintenance mode on or off (DESIGN.md §8): while it
// is on, the broker's leaderships are moved to other brokers and it wins no election. At
// most one broker is in maintenance at a time, as in Redpanda: draining two brokers of a
// three-broker cluster would leave partitions whose every live voter refuses to lead.
// Maintenance outlives a restart of the broker: it is cleared only by this command.
type SetBrokerMaintenance struct {
	ID int32 `json:"id"`
	On bool  `json:"on"`
}

func (SetBrokerMaintenance) op() string { return "set_broker_maintenance" }

func (s *State) setBrokerMaintenance(c *SetBrokerMaintenance) *applyErr {
	b, ok := s.brokers[c.ID]
	if !ok {
		return reject(kerr.BrokerIDNotRegistered, "broker %d is not registered", c.ID)
	}
	if c.On {
		if other := maintenanceBroker(s.brokers); other >= 0 && other != c.ID {
			return reject(kerr.InvalidRequest, "broker %d is already in maintenance: only one broker may be in maintenance at a time", other)
		}
	}
	b.Maintenance = c.On
	return nil
}

// maintenanceBroker returns the lowest id of a broker in maintenance, or -1.
func maintenanceBroker(brokers map[int32]*Broker) int32 {
	found := int32(-1)
	for _, b := range brokers {
		if b.Maintenance && (found < 0 || b.ID < found) {
			found = b.ID
		}
	}
	return found
}

// InMaintenance returns the broker in maintenance mode, if any.
func (s *State) InMaintenance() (int32, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	id := maintenanceBroker(s.brokers)
	return id, id >= 0
}

func countMaintenance(brokers map[int32]*Broker) int {
	n := 0
	for _, b := range brokers {
		if b.Maintenance {
			n++
		}
	}
	return n
}
