package group

import (
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Listing is one group as ListGroups reports it.
type Listing struct {
	Group        string
	ProtocolType string
	State        State
}

// ListGroups lists the groups this node coordinates, optionally only those in the given
// states (matched case-insensitively, as Kafka does). The error is
// COORDINATOR_LOAD_IN_PROGRESS while a partition is still loading (the list then holds the
// groups already loaded).
func (c *Coordinator) ListGroups(states []string) ([]Listing, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.n <= 0 {
		return nil, kerr.CoordinatorNotAvailable
	}
	var err *kerr.Error
	for _, s := range c.shards {
		if s == shardLoading {
			err = kerr.CoordinatorLoadInProgress
		}
	}
	var out []Listing
	for _, g := range c.groups {
		if g.state == Dead {
			continue
		}
		if len(states) > 0 {
			ok := false
			for _, s := range states {
				if strings.EqualFold(s, g.state.String()) {
					ok = true
				}
			}
			if !ok {
				continue
			}
		}
		out = append(out, Listing{Group: g.id, ProtocolType: g.protocolType, State: g.state})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, err
}

// MemberDescription is one member as DescribeGroups reports it.
type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte // the selected protocol's, only while the group is Stable
	Assignment []byte // only while the group is Stable
}

// Description is one group as DescribeGroups reports it. A group that does not exist is
// reported as Dead without an error, as Kafka does.
type Description struct {
	Err          *kerr.Error
	Group        string
	State        State
	ProtocolType string
	Protocol     string // only while the group is Stable
	Members      []MemberDescription
}

// DescribeGroup describes one group.
func (c *Coordinator) DescribeGroup(groupID string) Description {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := Description{Group: groupID, State: Dead}
	if _, err := c.shardLocked(groupID); err != nil {
		d.Err = err
		return d
	}
	g := c.groups[groupID]
	if g == nil {
		return d
	}
	d.State, d.ProtocolType = g.state, g.protocolType
	stable := g.state == Stable
	if stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			Metadata: []byte{}, Assignment: []byte{}}
		if stable {
			md.Metadata = m.metadata(g.protocol)
			md.Assignment = m.assignment
			if md.Metadata == nil {
				md.Metadata = []byte{}
			}
			if md.Assignment == nil {
				md.Assignment = []byte{}
			}
		}
		d.Members = append(d.Members, md)
	}
	return d
}
