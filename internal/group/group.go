package group

import (
	"bytes"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a classic group's state.
type State int

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

// String returns Kafka's name for the state, as DescribeGroups and ListGroups report it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	default:
		return "Dead"
	}
}

// Protocol is one assignment protocol a member offers, with its opaque metadata (for
// protocol type "consumer", a ConsumerMemberMetadata).
type Protocol struct {
	Name     string
	Metadata []byte
}

type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []Protocol
	assignment       []byte

	joinCh    chan JoinResult // set while a JoinGroup waits for the rebalance
	syncCh    chan SyncResult // set while a SyncGroup waits for the leader's assignment
	heartbeat time.Time       // the session expires at heartbeat + sessionTimeout
}

func (m *member) isStatic() bool { return m.instanceID != nil }

// matches reports whether protocols are exactly what the member offered before.
func (m *member) matches(protocols []Protocol) bool {
	if len(protocols) != len(m.protocols) {
		return false
	}
	for i, p := range protocols {
		if p.Name != m.protocols[i].Name || !bytes.Equal(p.Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// committed is one committed offset.
type committed struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitMs    int64
	expireMs    int64 // -1: none; set by OffsetCommit v2-v4 retention time
	logOffset   int64 // where the commit record sits in __consumer_offsets
}

type group struct {
	id         string
	shard      int32
	state      State
	stateSince time.Time

	protocolType string // "" until a member joins; kept when the group empties
	protocol     string // selected protocol of the current generation, "" when none
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string    // group.instance.id -> member id
	pending      map[string]time.Time // member ids handed out with MEMBER_ID_REQUIRED -> expiry

	// PreparingRebalance: when the join phase ends.
	joinDeadline time.Time
	// The initial rebalance delay of an empty group (Kafka's InitialDelayedJoin).
	initialDelay     bool
	initialRemaining time.Duration
	newMemberAdded   bool

	// CompletingRebalance / Stable: members that still owe a SyncGroup, and the deadline.
	pendingSync  map[string]bool
	syncDeadline time.Time

	offsets map[tp]*committed
	// In-flight offset commits per partition, and where an offset was deleted while one
	// was in flight: a commit written before the deletion must not resurrect it.
	inflight  map[tp]int
	deletedAt map[tp]int64
	// txnPending holds, per producer id, the offsets its open transaction committed
	// (txnoffsets.go).
	txnPending map[int64]map[tp]*committed
}

func newGroup(id string, shard int32, now time.Time) *group {
	return &group{
		id: id, shard: shard, state: Empty, stateSince: now,
		members: map[string]*member{}, static: map[string]string{}, pending: map[string]time.Time{},
		offsets: map[tp]*committed{}, inflight: map[tp]int{}, deletedAt: map[tp]int64{},
		txnPending: map[int64]map[tp]*committed{},
	}
}

func (g *group) transition(s State, now time.Time) {
	g.state = s
	g.stateSince = now
}

// sortedMembers lists the members by id, for stable answers.
func (g *group) sortedMembers() []*member {
	out := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// rebalanceTimeout is the longest rebalance timeout among the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// supports reports whether a member offering protocolType and protocols may join: an
// empty group takes any non-empty offer, otherwise the type must match and at least one
// protocol must be offered by every member.
func (g *group) supports(protocolType string, protocols []Protocol) bool {
	if protocolType == "" || len(protocols) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.allSupport(p.Name) {
			return true
		}
	}
	return false
}

func (g *group) allSupport(name string) bool {
	for _, m := range g.members {
		if !m.offers(name) {
			return false
		}
	}
	return true
}

func (m *member) offers(name string) bool {
	for _, p := range m.protocols {
		if p.Name == name {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol of the next generation: among the protocols every
// member offers, the one most members list first (ties go to the leader's preference).
func (g *group) selectProtocol() string {
	members := g.sortedMembers()
	if len(members) == 0 {
		return ""
	}
	var candidates []string
	lead := g.members[g.leader]
	if lead == nil {
		lead = members[0]
	}
	for _, p := range lead.protocols {
		if g.allSupport(p.Name) {
			candidates = append(candidates, p.Name)
		}
	}
	votes := map[string]int{}
	for _, m := range members {
		for _, p := range m.protocols {
			if containsString(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func (g *group) add(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
}

// failWaits answers a pending JoinGroup or SyncGroup of m with err.
func (m *member) failWaits(err *kerr.Error) {
	if m.joinCh != nil {
		m.joinCh <- JoinResult{Err: err, MemberID: m.id, Generation: -1}
		m.joinCh = nil
	}
	if m.syncCh != nil {
		m.syncCh <- SyncResult{Err: err}
		m.syncCh = nil
	}
}

// remove takes m out of the group, answering whatever it was waiting for.
func (g *group) remove(m *member, err *kerr.Error) {
	m.failWaits(err)
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// validateMember is Kafka's check of a request's member id and group.instance.id: an
// instance id must map to exactly this member id (else FENCED_INSTANCE_ID), and the member
// must exist.
func (g *group) validateMember(memberID string, instanceID *string) *kerr.Error {
	if instanceID != nil {
		cur, ok := g.static[*instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID
		case cur != memberID:
			return kerr.FencedInstanceID
		}
		return nil
	}
	if _, ok := g.members[memberID]; !ok {
		return kerr.UnknownMemberID
	}
	return nil
}

// joinedMembers is the member list the leader gets: each member's metadata for the
// selected protocol.
func (g *group) joinedMembers() []JoinMember {
	var out []JoinMember
	for _, m := range g.sortedMembers() {
		out = append(out, JoinMember{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadata(g.protocol)})
	}
	return out
}

// subscribedTopics decodes the consumer-protocol subscriptions of the members for the
// selected protocol; ok is false when the group does not use the consumer protocol or a
// subscription cannot be read, in which case every topic counts as subscribed.
func (g *group) subscribedTopics() (map[string]bool, bool) {
	if g.protocolType != "consumer" || g.protocol == "" {
		return nil, false
	}
	out := map[string]bool{}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadata(g.protocol)); err != nil {
			return nil, false
		}
		for _, t := range md.Topics {
			out[t] = true
		}
	}
	return out, true
}

func (g *group) protocolPtr() *string {
	if g.protocol == "" {
		return nil
	}
	p := g.protocol
	return &p
}

func (g *group) protocolTypePtr() *string {
	if g.protocolType == "" {
		return nil
	}
	p := g.protocolType
	return &p
}
