package controller

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/security"
)

// Broker is a registered broker as the controller knows it.
type Broker struct {
	ID          int32  `json:"id"`
	KafkaAddr   string `json:"kafka_addr"`
	RPCAddr     string `json:"rpc_addr"`
	Rack        string `json:"rack,omitempty"`
	Incarnation uint64 `json:"incarnation"`
	Live        bool   `json:"live"`
	// Maintenance is set while the broker is in maintenance mode (SetBrokerMaintenance).
	Maintenance bool `json:"maintenance,omitempty"`
	// Membership is "" while the broker is active, MembershipDraining while it is being
	// decommissioned and MembershipDecommissioned once it has left (decommission.go).
	Membership string `json:"membership,omitempty"`
	// Listeners are the advertised address of each of the broker's named Kafka listeners;
	// empty for a broker with only KafkaAddr, which is then its PLAINTEXT listener.
	Listeners map[string]string `json:"listeners,omitempty"`
}

// PlaintextListener is the name under which a broker registered without listeners serves
// KafkaAddr.
const PlaintextListener = "PLAINTEXT"

// ListenerAddr is the address clients of listener name are told for b, and false when b
// has no such listener.
func (b Broker) ListenerAddr(name string) (string, bool) {
	if len(b.Listeners) == 0 {
		return b.KafkaAddr, name == PlaintextListener
	}
	addr, ok := b.Listeners[name]
	return addr, ok
}

// Topic is a topic as the controller knows it. Assignment[p] is partition p's replica
// list; its first entry is the preferred leader. Groups[p] is partition p's Raft group id,
// handed out at apply time from a cluster-wide counter (from 1; 0 is the controller's own
// group) and never reused, so a broker that still holds a deleted topic's group cannot
// mistake it for a new partition's.
//
// RF is the replication factor new partitions get. A completed reassignment may leave a
// partition with another count of replicas (a replication factor change); Assignment[p]
// then has its own length. Reassigning holds the moves in progress (reassign.go), and
// Moved[p] is set once partition p has completed one (HasMoved): it is nil until a
// partition's first move completes, then has one flag per partition.
type Topic struct {
	Name        string                 `json:"name"`
	ID          TopicID                `json:"id"`
	RF          int16                  `json:"rf"`
	Configs     map[string]string      `json:"configs"`
	Assignment  [][]int32              `json:"assignment"`
	Groups      []uint64               `json:"groups"`
	Reassigning map[int32]Reassignment `json:"reassigning,omitempty"`
	Moved       []bool                 `json:"moved,omitempty"`
	// Recovered[p] is partition p's last force recovery (recover.go).
	Recovered map[int32]Recovery `json:"recovered,omitempty"`
}

// Internal reports whether the topic is internal (its name starts with "__", as
// __consumer_offsets).
func (t Topic) Internal() bool { return strings.HasPrefix(t.Name, "__") }

// Partitions returns the topic's partition count.
func (t Topic) Partitions() int32 { return int32(len(t.Assignment)) }

func (t *Topic) clone() Topic {
	c := *t
	c.Configs = maps.Clone(t.Configs)
	if c.Configs == nil {
		c.Configs = map[string]string{}
	}
	c.Assignment = cloneAssignment(t.Assignment)
	c.Groups = slices.Clone(t.Groups)
	c.Moved = slices.Clone(t.Moved)
	c.Recovered = maps.Clone(t.Recovered)
	c.Reassigning = nil
	for p, r := range t.Reassigning {
		if c.Reassigning == nil {
			c.Reassigning = make(map[int32]Reassignment, len(t.Reassigning))
		}
		c.Reassigning[p] = r.clone()
	}
	return c
}

func cloneAssignment(a [][]int32) [][]int32 {
	out := make([][]int32, len(a))
	for i, r := range a {
		out[i] = slices.Clone(r)
	}
	return out
}

// ProducerIDBlock is a range of producer ids [First, First+Size) owned by one broker.
type ProducerIDBlock struct {
	Broker int32 `json:"broker"`
	First  int64 `json:"first"`
	Size   int32 `json:"size"`
}

// Result is the outcome of applying one command. Err is nil on success, or the Kafka error
// the proposer answers its client with (Msg says why). A rejected command leaves the state
// unchanged but still counts as applied at its index.
type Result struct {
	Index uint64
	// Skipped is set when the index was applied before: nothing happened.
	Skipped bool
	Err     *kerr.Error
	Msg     string
	// ProducerIDs is the block an AllocateProducerIDBlock handed out.
	ProducerIDs *ProducerIDBlock
	// DeletedACLs is, for each filter of a DeleteACLs, the ACLs it matched (acls.go).
	DeletedACLs [][]security.ACL
}

// MaxProducerIDBlock bounds one AllocateProducerIDBlock.
const MaxProducerIDBlock = 1 << 20

// State is the cluster metadata. Apply changes it; the read methods return copies. It is
// safe for concurrent use: one goroutine applies committed entries while others read.
type State struct {
	mu             sync.RWMutex
	applied        uint64
	clusterID      string
	brokers        map[int32]*Broker
	topics         map[string]*Topic
	topicIDs       map[TopicID]string
	clusterConfig  map[string]string
	nextProducerID int64
	nextGroup      uint64              // the Raft group id the next partition gets
	groups         map[uint64]groupRef // every partition's group id
	// users holds the SCRAM credentials, by user and mechanism (users.go).
	users map[string]map[string]security.ScramCredential
	// acls are the Kafka ACLs in creation order, and aclSet the same as a set (acls.go).
	acls   []security.ACL
	aclSet map[security.ACL]struct{}
	// deletions are the recent delete_acls results by index, deletionOrder their indexes
	// oldest first (acls.go, DeletedACLsAt).
	deletions     map[uint64][][]security.ACL
	deletionOrder []uint64
	// authzGen counts changes of the ACLs and the cluster config (AuthzGeneration).
	authzGen atomic.Uint64
}

// groupRef names the partition a Raft group replicates.
type groupRef struct {
	topic     string
	partition int32
}

// New returns an empty state: nothing applied, no cluster id.
func New() *State {
	return &State{
		brokers:       map[int32]*Broker{},
		topics:        map[string]*Topic{},
		topicIDs:      map[TopicID]string{},
		clusterConfig: map[string]string{},
		nextGroup:     1,
		groups:        map[uint64]groupRef{},
		users:         map[string]map[string]security.ScramCredential{},
		aclSet:        map[security.ACL]struct{}{},
	}
}

// assignGroups gives partitions [from, len(t.Assignment)) of t the next group ids.
func (s *State) assignGroups(t *Topic, from int) {
	for p := from; p < len(t.Assignment); p++ {
		t.Groups = append(t.Groups, s.nextGroup)
		s.groups[s.nextGroup] = groupRef{topic: t.Name, partition: int32(p)}
		s.nextGroup++
	}
}

func reject(code *kerr.Error, format string, args ...any) *applyErr {
	return &applyErr{code: code, msg: fmt.Sprintf(format, args...)}
}

type applyErr struct {
	code *kerr.Error
	msg  string
}

// Apply applies the committed entry at index. Indexes must rise, though not by one (Raft's
// own entries carry no command); an index at or below the applied index is a no-op with
// Result.Skipped. A command that fails validation is rejected deterministically in
// Result.Err and the index still counts as applied. Apply returns an error only when the
// payload cannot be applied at all: ErrUnsupportedVersion (the index is not consumed: the
// replica must stop and be upgraded) or ErrMalformed (the index is consumed, as on every
// replica, and Result.Err is INVALID_REQUEST).
func (s *State) Apply(index uint64, payload []byte) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.applied {
		return Result{Index: index, Skipped: true}, nil
	}
	cmd, err := DecodeCommand(payload)
	if errors.Is(err, ErrUnsupportedVersion) {
		return Result{Index: index, Err: kerr.UnsupportedVersion, Msg: err.Error()}, err
	}
	s.applied = index
	if err != nil {
		return Result{Index: index, Err: kerr.InvalidRequest, Msg: err.Error()}, err
	}
	res := Result{Index: index}
	if e := s.apply(cmd, &res); e != nil {
		res.Err, res.Msg = e.code, e.msg
	} else if changesAuthz(cmd) {
		s.authzGen.Add(1)
	}
	return res, nil
}

// AppliedIndex returns the index of the last applied entry.
func (s *State) AppliedIndex() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.applied
}

func (s *State) apply(cmd Command, res *Result) *applyErr {
	if c, ok := cmd.(*SetClusterID); ok {
		return s.setClusterID(c)
	}
	if s.clusterID == "" {
		return reject(kerr.InvalidRequest, "the cluster id is not set: set_cluster_id must be the first command")
	}
	switch c := cmd.(type) {
	case *RegisterBroker:
		return s.registerBroker(c)
	case *SetBrokerLiveness:
		return s.setBrokerLiveness(c)
	case *CreateTopic:
		return s.createTopic(c)
	case *DeleteTopic:
		return s.deleteTopic(c)
	case *CreatePartitions:
		return s.createPartitions(c)
	case *SetTopicConfig:
		return s.setTopicConfig(c)
	case *SetClusterConfig:
		return s.setClusterConfig(c)
	case *AllocateProducerIDBlock:
		return s.allocateProducerIDBlock(c, res)
	case *BeginReassignment:
		return s.beginReassignment(c)
	case *CancelReassignment:
		return s.cancelReassignment(c)
	case *MarkReassignmentFinal:
		return s.markReassignmentFinal(c)
	case *CompleteReassignment:
		return s.completeReassignment(c)
	case *SetBrokerMaintenance:
		return s.setBrokerMaintenance(c)
	case *DecommissionBroker:
		return s.decommissionBroker(c)
	case *RecommissionBroker:
		return s.recommissionBroker(c)
	case *MarkBrokerDecommissioned:
		return s.markBrokerDecommissioned(c)
	case *ForceRecoverPartition:
		return s.forceRecoverPartition(c)
	case *UpsertScramCredential:
		return s.upsertScramCredential(c)
	case *DeleteScramCredential:
		return s.deleteScramCredential(c)
	case *CreateACLs:
		return s.createACLs(c)
	case *DeleteACLs:
		return s.deleteACLs(c, res)
	}
	return reject(kerr.InvalidRequest, "unknown command %T", cmd)
}

func (s *State) setClusterID(c *SetClusterID) *applyErr {
	if s.clusterID != "" {
		return reject(kerr.InconsistentClusterID, "the cluster id is already %q", s.clusterID)
	}
	if c.ClusterID == "" {
		return reject(kerr.InvalidRequest, "empty cluster id")
	}
	s.clusterID = c.ClusterID
	return nil
}

func (s *State) registerBroker(c *RegisterBroker) *applyErr {
	if c.ID < 0 {
		return reject(kerr.InvalidRequest, "broker id %d is negative", c.ID)
	}
	if c.KafkaAddr == "" || c.RPCAddr == "" {
		return reject(kerr.InvalidRequest, "broker %d registers without a Kafka or RPC address", c.ID)
	}
	if other := addrConflict(s.brokers, c.ID, c.KafkaAddr, c.RPCAddr); other >= 0 {
		return reject(kerr.DuplicateBrokerRegistration, "live broker %d already uses an address of broker %d", other, c.ID)
	}
	if old, ok := s.brokers[c.ID]; ok && c.Incarnation <= old.Incarnation {
		return reject(kerr.DuplicateBrokerRegistration, "broker %d is registered with incarnation %d; %d is not newer", c.ID, old.Incarnation, c.Incarnation)
	}
	for name, addr := range c.Listeners {
		if name == "" || addr == "" {
			return reject(kerr.InvalidRequest, "broker %d registers a listener without a name or an address", c.ID)
		}
	}
	nb := &Broker{ID: c.ID, KafkaAddr: c.KafkaAddr, RPCAddr: c.RPCAddr, Rack: c.Rack, Incarnation: c.Incarnation, Live: true,
		Listeners: maps.Clone(c.Listeners)}
	if old, ok := s.brokers[c.ID]; ok {
		nb.Maintenance = old.Maintenance // a restart within maintenance stays in it
		nb.Membership = old.Membership   // and one within a decommission stays in it
	}
	s.brokers[c.ID] = nb
	return nil
}

func (s *State) setBrokerLiveness(c *SetBrokerLiveness) *applyErr {
	b, ok := s.brokers[c.ID]
	if !ok {
		return reject(kerr.BrokerIDNotRegistered, "broker %d is not registered", c.ID)
	}
	if c.Incarnation != b.Incarnation {
		return reject(kerr.StaleBrokerEpoch, "broker %d is at incarnation %d, not %d", c.ID, b.Incarnation, c.Incarnation)
	}
	if c.Live && !b.Live {
		if other := addrConflict(s.brokers, b.ID, b.KafkaAddr, b.RPCAddr); other >= 0 {
			return reject(kerr.DuplicateBrokerRegistration, "live broker %d has taken over an address of broker %d", other, b.ID)
		}
	}
	b.Live = c.Live
	return nil
}

// addrConflict returns the lowest id of a live broker other than id that uses kafka or rpc
// as its address, or -1. No two live brokers share an address.
func addrConflict(brokers map[int32]*Broker, id int32, kafka, rpc string) int32 {
	found := int32(-1)
	for _, b := range brokers {
		if b.ID != id && b.Live && (b.RPCAddr == rpc || b.KafkaAddr == kafka) && (found < 0 || b.ID < found) {
			found = b.ID
		}
	}
	return found
}

var legalTopicName = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

func checkTopicName(name string) *applyErr {
	switch {
	case name == "":
		return reject(kerr.InvalidTopicException, "empty topic name")
	case name == "." || name == "..":
		return reject(kerr.InvalidTopicException, "topic name %q is not allowed", name)
	case len(name) > 249:
		return reject(kerr.InvalidTopicException, "topic name is longer than 249 characters")
	case !legalTopicName.MatchString(name):
		return reject(kerr.InvalidTopicException, "topic name %q has characters other than ASCII letters, digits, '.', '_' and '-'", name)
	}
	return nil
}

func metricName(topic string) string { return strings.ReplaceAll(topic, ".", "_") }

func checkConfigKeys(m map[string]string, del []string) *applyErr {
	for k := range m {
		if k == "" {
			return reject(kerr.InvalidConfig, "empty config name")
		}
	}
	if slices.Contains(del, "") {
		return reject(kerr.InvalidConfig, "empty config name")
	}
	return nil
}

// checkNewReplicas refuses new partitions' replicas on a broker that is draining or
// decommissioned (snapshots hold older partitions, which may still be on one).
func checkNewReplicas(brokers map[int32]*Broker, p int, replicas []int32) *applyErr {
	for _, r := range replicas {
		if b := brokers[r]; b != nil && !b.Active() {
			return reject(kerr.InvalidReplicaAssignment, "partition %d names broker %d, which is %s and takes no new replica", p, r, b.MembershipStatus())
		}
	}
	return nil
}

// checkReplicas validates one partition's replica list against the registered brokers.
func checkReplicas(brokers map[int32]*Broker, p int, replicas []int32, rf int) *applyErr {
	if len(replicas) != rf {
		return reject(kerr.InvalidReplicaAssignment, "partition %d has %d replicas, the replication factor is %d", p, len(replicas), rf)
	}
	for i, r := range replicas {
		if _, ok := brokers[r]; !ok {
			return reject(kerr.InvalidReplicaAssignment, "partition %d names broker %d, which is not registered", p, r)
		}
		if slices.Contains(replicas[:i], r) {
			return reject(kerr.InvalidReplicaAssignment, "partition %d names broker %d twice", p, r)
		}
	}
	return nil
}

func (s *State) createTopic(c *CreateTopic) *applyErr {
	if e := checkTopicName(c.Name); e != nil {
		return e
	}
	if _, ok := s.topics[c.Name]; ok {
		return reject(kerr.TopicAlreadyExists, "topic %q already exists", c.Name)
	}
	// As in Kafka, '.' and '_' collide: both become '_' in metric names.
	key := metricName(c.Name)
	for name := range s.topics {
		if metricName(name) == key {
			return reject(kerr.InvalidTopicException, "topic %q collides with existing topic %q ('.' and '_' are alike in metric names)", c.Name, name)
		}
	}
	if c.ID.IsZero() {
		return reject(kerr.InvalidRequest, "topic %q has the zero topic id", c.Name)
	}
	if other, ok := s.topicIDs[c.ID]; ok {
		return reject(kerr.TopicAlreadyExists, "topic id %s already belongs to topic %q", c.ID, other)
	}
	if c.Partitions < 1 {
		return reject(kerr.InvalidPartitions, "partition count must be at least 1, got %d", c.Partitions)
	}
	if c.RF < 1 {
		return reject(kerr.InvalidReplicationFactor, "replication factor must be at least 1, got %d", c.RF)
	}
	if len(c.Assignment) != int(c.Partitions) {
		return reject(kerr.InvalidReplicaAssignment, "%d partitions but %d replica lists", c.Partitions, len(c.Assignment))
	}
	for p, r := range c.Assignment {
		if e := checkReplicas(s.brokers, p, r, int(c.RF)); e != nil {
			return e
		}
		if e := checkNewReplicas(s.brokers, p, r); e != nil {
			return e
		}
	}
	if e := checkConfigKeys(c.Configs, nil); e != nil {
		return e
	}
	t := &Topic{Name: c.Name, ID: c.ID, RF: c.RF, Configs: maps.Clone(c.Configs), Assignment: cloneAssignment(c.Assignment)}
	if t.Configs == nil {
		t.Configs = map[string]string{}
	}
	if s.nextGroup > math.MaxUint64-uint64(len(t.Assignment)) {
		return reject(kerr.UnknownServerError, "raft group ids are exhausted")
	}
	s.assignGroups(t, 0)
	s.topics[t.Name] = t
	s.topicIDs[t.ID] = t.Name
	return nil
}

func (s *State) deleteTopic(c *DeleteTopic) *applyErr {
	t, ok := s.topics[c.Name]
	if !ok {
		return reject(kerr.UnknownTopicOrPartition, "topic %q does not exist", c.Name)
	}
	if !c.ID.IsZero() && c.ID != t.ID {
		return reject(kerr.UnknownTopicID, "topic %q has id %s, not %s", c.Name, t.ID, c.ID)
	}
	delete(s.topics, t.Name)
	delete(s.topicIDs, t.ID)
	for _, g := range t.Groups {
		delete(s.groups, g)
	}
	return nil
}

func (s *State) createPartitions(c *CreatePartitions) *applyErr {
	t, ok := s.topics[c.Name]
	if !ok {
		return reject(kerr.UnknownTopicOrPartition, "topic %q does not exist", c.Name)
	}
	if len(c.NewAssignment) == 0 {
		return reject(kerr.InvalidPartitions, "no partitions to add to %q", c.Name)
	}
	if len(t.Assignment)+len(c.NewAssignment) > math.MaxInt32 {
		return reject(kerr.InvalidPartitions, "too many partitions")
	}
	for i, r := range c.NewAssignment {
		if e := checkReplicas(s.brokers, len(t.Assignment)+i, r, int(t.RF)); e != nil {
			return e
		}
		if e := checkNewReplicas(s.brokers, len(t.Assignment)+i, r); e != nil {
			return e
		}
	}
	if s.nextGroup > math.MaxUint64-uint64(len(c.NewAssignment)) {
		return reject(kerr.UnknownServerError, "raft group ids are exhausted")
	}
	from := len(t.Assignment)
	t.Assignment = append(t.Assignment, cloneAssignment(c.NewAssignment)...)
	if t.Moved != nil {
		t.Moved = append(t.Moved, make([]bool, len(c.NewAssignment))...)
	}
	s.assignGroups(t, from)
	return nil
}

func patch(dst map[string]string, set map[string]string, del []string, replace bool) {
	if replace {
		clear(dst)
	}
	for _, k := range del {
		delete(dst, k)
	}
	maps.Copy(dst, set)
}

func (s *State) setTopicConfig(c *SetTopicConfig) *applyErr {
	t, ok := s.topics[c.Name]
	if !ok {
		return reject(kerr.UnknownTopicOrPartition, "topic %q does not exist", c.Name)
	}
	if e := checkConfigKeys(c.Overrides, c.Delete); e != nil {
		return e
	}
	if c.IfUnchanged && !maps.Equal(t.Configs, c.Expect) {
		return reject(ErrConfigChanged, "topic %q's config changed since the change was built", c.Name)
	}
	patch(t.Configs, c.Overrides, c.Delete, c.Replace)
	return nil
}

func (s *State) setClusterConfig(c *SetClusterConfig) *applyErr {
	if e := checkConfigKeys(c.Overrides, c.Delete); e != nil {
		return e
	}
	if c.IfUnchanged && !maps.Equal(s.clusterConfig, c.Expect) {
		return reject(ErrConfigChanged, "the cluster config changed since the change was built")
	}
	patch(s.clusterConfig, c.Overrides, c.Delete, c.Replace)
	return nil
}

func (s *State) allocateProducerIDBlock(c *AllocateProducerIDBlock, res *Result) *applyErr {
	if _, ok := s.brokers[c.Broker]; !ok {
		return reject(kerr.BrokerIDNotRegistered, "broker %d is not registered", c.Broker)
	}
	if c.Size < 1 || c.Size > MaxProducerIDBlock {
		return reject(kerr.InvalidRequest, "producer id block size %d is outside [1, %d]", c.Size, MaxProducerIDBlock)
	}
	if s.nextProducerID > math.MaxInt64-int64(c.Size) {
		return reject(kerr.UnknownServerError, "producer ids are exhausted")
	}
	res.ProducerIDs = &ProducerIDBlock{Broker: c.Broker, First: s.nextProducerID, Size: c.Size}
	s.nextProducerID += int64(c.Size)
	return nil
}

// ClusterID returns the cluster id, or "" before SetClusterID.
func (s *State) ClusterID() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.clusterID
}

// Brokers returns every registered broker, by id.
func (s *State) Brokers() []Broker {
	return s.brokerList(false)
}

// LiveBrokers returns the live brokers, by id.
func (s *State) LiveBrokers() []Broker {
	return s.brokerList(true)
}

func (s *State) brokerList(liveOnly bool) []Broker {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Broker, 0, len(s.brokers))
	for _, b := range s.brokers {
		if !liveOnly || b.Live {
			out = append(out, *b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Broker returns one broker.
func (s *State) Broker(id int32) (Broker, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.brokers[id]
	if !ok {
		return Broker{}, false
	}
	return *b, true
}

// Topics returns every topic, by name.
func (s *State) Topics() []Topic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Topic, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, t.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Topic returns one topic.
func (s *State) Topic(name string) (Topic, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[name]
	if !ok {
		return Topic{}, false
	}
	return t.clone(), true
}

// TopicByID returns the topic with the given id.
func (s *State) TopicByID(id TopicID) (Topic, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	name, ok := s.topicIDs[id]
	if !ok {
		return Topic{}, false
	}
	return s.topics[name].clone(), true
}

// Assignment returns one partition's replicas, the preferred leader first.
func (s *State) Assignment(topic string, partition int32) ([]int32, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Assignment) {
		return nil, false
	}
	return slices.Clone(t.Assignment[partition]), true
}

// PartitionByGroup returns the partition Raft group id replicates. Group 0 (the
// controller) and the groups of deleted topics are not found.
func (s *State) PartitionByGroup(id uint64) (topic string, partition int32, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.groups[id]
	return r.topic, r.partition, ok
}

// NextGroup returns the Raft group id the next partition created will get.
func (s *State) NextGroup() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nextGroup
}

// TopicConfig returns a topic's config overrides.
func (s *State) TopicConfig(name string) (map[string]string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[name]
	if !ok {
		return nil, false
	}
	return maps.Clone(t.Configs), true
}

// ClusterConfig returns the cluster config overrides.
func (s *State) ClusterConfig() map[string]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.clusterConfig)
}

// NextProducerID returns the first producer id the next block will hand out.
func (s *State) NextProducerID() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nextProducerID
}

// ReplicaLoad returns how many partition replicas each registered broker holds across all
// topics (zero for brokers with none): the existing load Place takes. A moving partition
// counts on every broker of Topic.Replicas, the ones it is moving to included.
func (s *State) ReplicaLoad() map[int32]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.replicaLoad()
}

func (s *State) replicaLoad() map[int32]int {
	load := make(map[int32]int, len(s.brokers))
	for id := range s.brokers {
		load[id] = 0
	}
	for _, t := range s.topics {
		for p := range t.Partitions() {
			for _, b := range t.Replicas(p) {
				load[b]++
			}
		}
	}
	return load
}

// Placement returns what Place needs to place new partitions: the live, active brokers (a
// broker being decommissioned takes no new replica) and the
// replicas every registered broker holds. The proposer checks rf against the live brokers
// here; Apply only checks that an assignment names registered brokers.
func (s *State) Placement() ([]BrokerInfo, map[int32]int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var live []BrokerInfo
	for _, b := range s.brokers {
		if b.Live && b.Active() {
			live = append(live, BrokerInfo{ID: b.ID, Rack: b.Rack})
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].ID < live[j].ID })
	return live, s.replicaLoad()
}
