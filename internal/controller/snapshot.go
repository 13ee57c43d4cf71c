package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"

	"github.com/cairn-io/cairn/internal/security"
)

// SnapshotVersion is the encoding version of snapshots. Version 2 added the partitions'
// Raft group ids (Topic.Groups and next_group); a version-1 snapshot, which has neither, is
// still read, and its partitions are given group ids in snapshot order (topics by name,
// partitions in order, from 1), the same on every replica that decodes it. Commands are
// unchanged and stay at Version. Version 3 added the partition moves (Topic.Reassigning and
// Topic.Moved); a version-1 or -2 snapshot has none and must not carry them.
// Version 4 added the brokers' membership (Broker.Membership, decommission); version 5 the
// partitions' force recoveries (Topic.Recovered); version 6 the SCRAM users; version 7 the
// ACLs.
const SnapshotVersion = 7

// snapshot is the encoded form of a whole State. Brokers are sorted by id and topics by
// name, and map keys are written sorted, so equal states encode to equal bytes.
type snapshot struct {
	V              int               `json:"v"`
	Applied        uint64            `json:"applied"`
	ClusterID      string            `json:"cluster_id"`
	Brokers        []Broker          `json:"brokers"`
	Topics         []Topic           `json:"topics"`
	ClusterConfig  map[string]string `json:"cluster_config"`
	NextProducerID int64             `json:"next_producer_id"`
	NextGroup      uint64            `json:"next_group,omitempty"`
	Users          []User            `json:"users,omitempty"`
	ACLs           []security.ACL    `json:"acls,omitempty"`
}

// Snapshot encodes the whole state, including the applied index, for a Raft snapshot.
func (s *State) Snapshot() ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	snap := snapshot{V: SnapshotVersion, Applied: s.applied, ClusterID: s.clusterID, ClusterConfig: s.clusterConfig,
		NextProducerID: s.nextProducerID, NextGroup: s.nextGroup}
	if len(s.users) > 0 {
		snap.Users = s.userList()
	}
	if len(s.acls) > 0 {
		snap.ACLs = s.acls
	}
	for _, b := range s.brokers {
		snap.Brokers = append(snap.Brokers, *b)
	}
	for _, t := range s.topics {
		snap.Topics = append(snap.Topics, *t)
	}
	sort.Slice(snap.Brokers, func(i, j int) bool { return snap.Brokers[i].ID < snap.Brokers[j].ID })
	sort.Slice(snap.Topics, func(i, j int) bool { return snap.Topics[i].Name < snap.Topics[j].Name })
	return json.Marshal(snap)
}

// DecodeSnapshot decodes and validates a snapshot into a new State. It checks every
// invariant Apply keeps (unique ids and names, assignments naming registered, distinct
// brokers, RF replicas per partition that has never moved, moves consistent with the
// assignment), so a corrupt snapshot is refused rather than served.
// It never panics.
func DecodeSnapshot(b []byte) (*State, error) {
	var snap snapshot
	if err := strictUnmarshal(b, &snap); err != nil {
		return nil, fmt.Errorf("%w: snapshot: %v", ErrMalformed, err)
	}
	if err := checkSnapshotVersion(snap.V); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	bad := func(format string, args ...any) (*State, error) {
		return nil, fmt.Errorf("%w: snapshot: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
	s := New()
	s.applied = snap.Applied
	s.clusterID = snap.ClusterID
	if s.clusterID == "" && (len(snap.Brokers) > 0 || len(snap.Topics) > 0 || len(snap.ClusterConfig) > 0 || snap.NextProducerID != 0) {
		return bad("state without a cluster id")
	}
	if snap.NextProducerID < 0 {
		return bad("negative next producer id")
	}
	s.nextProducerID = snap.NextProducerID
	if snap.V < 6 && snap.Users != nil {
		return bad("version %d snapshot with users", snap.V)
	}
	if s.clusterID == "" && len(snap.Users) > 0 {
		return bad("users without a cluster id")
	}
	users, err := decodeUsers(snap.Users)
	if err != nil {
		return bad("%v", err)
	}
	s.users = users
	if snap.V < 7 && snap.ACLs != nil {
		return bad("version %d snapshot with ACLs", snap.V)
	}
	if s.clusterID == "" && len(snap.ACLs) > 0 {
		return bad("ACLs without a cluster id")
	}
	if s.acls, s.aclSet, err = decodeACLs(snap.ACLs); err != nil {
		return bad("%v", err)
	}
	if e := checkConfigKeys(snap.ClusterConfig, nil); e != nil {
		return bad("cluster config: %s", e.msg)
	}
	if snap.ClusterConfig != nil {
		s.clusterConfig = maps.Clone(snap.ClusterConfig)
	}
	for _, br := range snap.Brokers {
		if br.ID < 0 {
			return bad("negative broker id %d", br.ID)
		}
		if _, dup := s.brokers[br.ID]; dup {
			return bad("broker %d listed twice", br.ID)
		}
		if br.KafkaAddr == "" || br.RPCAddr == "" {
			return bad("broker %d has no Kafka or RPC address", br.ID)
		}
		switch br.Membership {
		case "", MembershipDraining, MembershipDecommissioned:
		default:
			return bad("broker %d has membership %q", br.ID, br.Membership)
		}
		if br.Membership != "" && snap.V < 4 {
			return bad("broker %d has a membership in a version %d snapshot", br.ID, snap.V)
		}
		b := br
		s.brokers[b.ID] = &b
	}
	if n := countMaintenance(s.brokers); n > 1 {
		return bad("%d brokers in maintenance; at most one may be", n)
	}
	for _, b := range s.brokers {
		if other := addrConflict(s.brokers, b.ID, b.KafkaAddr, b.RPCAddr); b.Live && other >= 0 {
			return bad("live brokers %d and %d share an address", b.ID, other)
		}
	}
	if snap.V >= 2 && snap.NextGroup < 1 {
		return bad("next group id %d is below 1", snap.NextGroup)
	}
	if snap.V < 2 && snap.NextGroup != 0 {
		return bad("version %d snapshot with a next group id", snap.V)
	}
	s.nextGroup = max(snap.NextGroup, 1)
	metricNames := map[string]string{}
	for _, tp := range snap.Topics {
		if e := checkTopicName(tp.Name); e != nil {
			return bad("%s", e.msg)
		}
		if _, dup := s.topics[tp.Name]; dup {
			return bad("topic %q listed twice", tp.Name)
		}
		if tp.ID.IsZero() {
			return bad("topic %q has the zero id", tp.Name)
		}
		if _, dup := s.topicIDs[tp.ID]; dup {
			return bad("topic id %s listed twice", tp.ID)
		}
		if tp.RF < 1 {
			return bad("topic %q has replication factor %d", tp.Name, tp.RF)
		}
		if len(tp.Assignment) < 1 {
			return bad("topic %q has no partitions", tp.Name)
		}
		if snap.V < 3 && (tp.Reassigning != nil || tp.Moved != nil) {
			return bad("version %d snapshot with partition moves", snap.V)
		}
		for p, r := range tp.Assignment {
			rf := int(tp.RF)
			if tp.HasMoved(int32(p)) {
				rf = max(1, len(r)) // a completed move may have changed its replica count
			}
			if e := checkReplicas(s.brokers, p, r, rf); e != nil {
				return bad("topic %q: %s", tp.Name, e.msg)
			}
		}
		if e := checkMoves(s.brokers, &tp); e != nil {
			return bad("%s", e.msg)
		}
		if snap.V < 5 && tp.Recovered != nil {
			return bad("version %d snapshot with force recoveries", snap.V)
		}
		if e := checkRecoveries(&tp, max(snap.NextGroup, 1)); e != nil {
			return bad("%s", e.msg)
		}
		if e := checkConfigKeys(tp.Configs, nil); e != nil {
			return bad("topic %q: %s", tp.Name, e.msg)
		}
		if other, ok := metricNames[metricName(tp.Name)]; ok {
			return bad("topics %q and %q collide", tp.Name, other)
		}
		metricNames[metricName(tp.Name)] = tp.Name
		t := tp.clone()
		if snap.V < 2 {
			if t.Groups != nil {
				return bad("version %d snapshot with group ids", snap.V)
			}
			s.assignGroups(&t, 0)
		} else {
			if len(t.Groups) != len(t.Assignment) {
				return bad("topic %q has %d partitions but %d group ids", t.Name, len(t.Assignment), len(t.Groups))
			}
			for p, g := range t.Groups {
				if g < 1 || g >= s.nextGroup {
					return bad("topic %q partition %d has group id %d outside [1, %d)", t.Name, p, g, s.nextGroup)
				}
				if _, dup := s.groups[g]; dup {
					return bad("group id %d used twice", g)
				}
				s.groups[g] = groupRef{topic: t.Name, partition: int32(p)}
			}
		}
		s.topics[t.Name] = &t
		s.topicIDs[t.ID] = t.Name
	}
	return s, nil
}

// checkSnapshotVersion accepts versions 1 through SnapshotVersion, as checkVersion does
// commands.
func checkSnapshotVersion(v int) error {
	switch {
	case v < 1:
		return fmt.Errorf("%w: version %d", ErrMalformed, v)
	case v > SnapshotVersion:
		return fmt.Errorf("%w: version %d, this build knows %d", ErrUnsupportedVersion, v, SnapshotVersion)
	}
	return nil
}

// Restore replaces the state with a decoded snapshot. On error the state is unchanged.
func (s *State) Restore(b []byte) error {
	n, err := DecodeSnapshot(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied, s.clusterID, s.brokers, s.topics, s.topicIDs, s.clusterConfig, s.nextProducerID, s.nextGroup, s.groups, s.users =
		n.applied, n.clusterID, n.brokers, n.topics, n.topicIDs, n.clusterConfig, n.nextProducerID, n.nextGroup, n.groups, n.users
	s.acls, s.aclSet = n.acls, n.aclSet
	s.authzGen.Add(1)
	return nil
}
