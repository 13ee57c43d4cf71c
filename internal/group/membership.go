package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/config"
)

// JoinRequest is a JoinGroup, version differences already resolved by the caller.
type JoinRequest struct {
	Group            string
	MemberID         string
	InstanceID       *string // group.instance.id (JoinGroup v5+)
	ClientID         string
	ClientHost       string
	ProtocolType     string
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration // the session timeout for JoinGroup v0
	// RequireKnownMemberID: a new member without an id gets MEMBER_ID_REQUIRED with an id
	// to rejoin with (JoinGroup v4+).
	RequireKnownMemberID bool
	// SupportsSkipAssignment: a static leader rejoining a stable group may be told to skip
	// running the assignor (JoinGroup v9+).
	SupportsSkipAssignment bool
	Reason                 string
}

// JoinMember is one member as the leader sees it.
type JoinMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinResult answers a JoinGroup.
type JoinResult struct {
	Err            *kerr.Error
	Generation     int32
	ProtocolType   *string
	Protocol       *string
	Leader         string
	MemberID       string
	SkipAssignment bool
	Members        []JoinMember // the leader's only
}

// SyncRequest is a SyncGroup.
type SyncRequest struct {
	Group        string
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string // v5+: checked against the group's when set
	Protocol     *string
	Assignments  []Assignment // the leader's only
}

// Assignment is what the leader gives one member.
type Assignment struct {
	MemberID   string
	Assignment []byte
}

// SyncResult answers a SyncGroup.
type SyncResult struct {
	Err          *kerr.Error
	ProtocolType *string
	Protocol     *string
	Assignment   []byte
}

// LeaveMember is one member a LeaveGroup removes: by member id, or by instance id alone
// (an administrative removal of a static member).
type LeaveMember struct {
	MemberID   string
	InstanceID *string
	Reason     string
}

func joinFail(ch chan JoinResult, memberID string, err *kerr.Error) <-chan JoinResult {
	ch <- JoinResult{Err: err, MemberID: memberID, Generation: -1}
	return ch
}

// Join handles a JoinGroup. Its checks and state changes happen at once; the returned
// channel yields the answer when the rebalance's join phase completes (or at once for an
// error, MEMBER_ID_REQUIRED, or a rejoin that changes nothing).
func (c *Coordinator) Join(req JoinRequest) <-chan JoinResult {
	ch := make(chan JoinResult, 1)
	cfg := c.cfg()
	if req.Group == "" {
		return joinFail(ch, req.MemberID, kerr.InvalidGroupID)
	}
	for _, p := range req.Protocols {
		if len(p.Metadata) > MaxProtocolMetadataBytes {
			c.lg.Warn("JoinGroup refused: protocol metadata too large", "group", req.Group, "protocol", p.Name,
				"bytes", len(p.Metadata), "limit", MaxProtocolMetadataBytes)
			return joinFail(ch, req.MemberID, kerr.InvalidRequest)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	shard, kerrv := c.shardLocked(req.Group)
	if kerrv != nil {
		return joinFail(ch, req.MemberID, kerrv)
	}
	if ms := req.SessionTimeout.Milliseconds(); ms < cfg.GroupMinSessionTimeoutMs || ms > cfg.GroupMaxSessionTimeoutMs {
		return joinFail(ch, req.MemberID, kerr.InvalidSessionTimeout)
	}
	g := c.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			return joinFail(ch, req.MemberID, kerr.UnknownMemberID)
		}
		g = newGroup(req.Group, shard, c.now())
		c.groups[req.Group] = g
	}
	if !g.supports(req.ProtocolType, req.Protocols) {
		return joinFail(ch, req.MemberID, kerr.InconsistentGroupProtocol)
	}
	now := c.now()
	if req.MemberID == "" {
		c.joinNewLocked(g, req, ch, now, cfg)
	} else {
		c.joinKnownLocked(g, req, ch, now, cfg)
	}
	return ch
}

func (c *Coordinator) joinNewLocked(g *group, req JoinRequest, ch chan JoinResult, now time.Time, cfg config.ClusterConfig) {
	if req.InstanceID != nil {
		id := newMemberID(*req.InstanceID)
		if old, ok := g.static[*req.InstanceID]; ok {
			c.replaceStaticLocked(g, g.members[old], id, req, ch, now, cfg)
			return
		}
		c.addMemberLocked(g, id, req, ch, now, cfg)
		return
	}
	id := newMemberID(req.ClientID)
	if req.RequireKnownMemberID {
		g.pending[id] = now.Add(req.SessionTimeout)
		ch <- JoinResult{Err: kerr.MemberIDRequired, MemberID: id, Generation: -1}
		return
	}
	c.addMemberLocked(g, id, req, ch, now, cfg)
}

func (c *Coordinator) joinKnownLocked(g *group, req JoinRequest, ch chan JoinResult, now time.Time, cfg config.ClusterConfig) {
	if _, ok := g.pending[req.MemberID]; ok {
		if req.InstanceID != nil {
			// Pending ids are handed out only to joins without an instance id; taking
			// a static identity through one would leave two members claiming it.
			joinFail(ch, req.MemberID, kerr.UnknownMemberID)
			return
		}
		delete(g.pending, req.MemberID)
		c.addMemberLocked(g, req.MemberID, req, ch, now, cfg)
		return
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		joinFail(ch, req.MemberID, err)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		c.updateMemberLocked(g, m, req, ch)
		c.maybeCompleteJoinLocked(g, now, cfg)
	case CompletingRebalance:
		if m.matches(req.Protocols) {
			// A retry of a join whose answer was lost: answer with the current generation.
			ch <- c.joinAnswerLocked(g, m, g.leader, false)
			return
		}
		c.updateMemberLocked(g, m, req, ch)
		c.prepareRebalanceLocked(g, "member "+m.id+" rejoined with new metadata", now, cfg)
	case Stable:
		if g.leader == m.id || !m.matches(req.Protocols) {
			// A leader's rejoin forces a rebalance: it may have seen changes (e.g. topic
			// metadata) that do not show in member metadata.
			c.updateMemberLocked(g, m, req, ch)
			c.prepareRebalanceLocked(g, "member "+m.id+" rejoined", now, cfg)
			return
		}
		ch <- c.joinAnswerLocked(g, m, g.leader, false)
	default:
		joinFail(ch, req.MemberID, kerr.UnknownMemberID)
	}
}

// joinAnswerLocked is a successful JoinGroup answer for m in the current generation.
func (c *Coordinator) joinAnswerLocked(g *group, m *member, leader string, skip bool) JoinResult {
	r := JoinResult{Generation: g.generation, ProtocolType: g.protocolTypePtr(), Protocol: g.protocolPtr(),
		Leader: leader, MemberID: m.id, SkipAssignment: skip}
	if m.id == leader {
		r.Members = g.joinedMembers()
	}
	return r
}

func (c *Coordinator) addMemberLocked(g *group, id string, req JoinRequest, ch chan JoinResult, now time.Time, cfg config.ClusterConfig) {
	m := &member{id: id, instanceID: req.InstanceID, clientID: req.ClientID, clientHost: req.ClientHost,
		rebalanceTimeout: req.RebalanceTimeout, sessionTimeout: req.SessionTimeout,
		protocolType: req.ProtocolType, protocols: req.Protocols, joinCh: ch, heartbeat: now}
	if g.state == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m)
	c.lg.Info("member joined", "group", g.id, "member", id, "client", req.ClientID, "static", req.InstanceID != nil)
	c.maybePrepareRebalanceLocked(g, "new member "+id, now, cfg)
	c.maybeCompleteJoinLocked(g, now, cfg)
}

func (c *Coordinator) updateMemberLocked(g *group, m *member, req JoinRequest, ch chan JoinResult) {
	if m.joinCh != nil && m.joinCh != ch {
		// A second JoinGroup while the first waits: the first gets an answer that makes the
		// client rejoin rather than hang.
		m.joinCh <- JoinResult{Err: kerr.RebalanceInProgress, MemberID: m.id, Generation: -1}
	}
	m.protocols = req.Protocols
	m.protocolType = req.ProtocolType
	m.rebalanceTimeout, m.sessionTimeout = req.RebalanceTimeout, req.SessionTimeout
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.joinCh = ch
}

// replaceStaticLocked gives a static member's instance id to a new member id: the old id is
// fenced (its waiting requests get FENCED_INSTANCE_ID) and the new one takes its place,
// assignment included. A stable group whose protocol would not change stays stable.
func (c *Coordinator) replaceStaticLocked(g *group, old *member, newID string, req JoinRequest, ch chan JoinResult, now time.Time, cfg config.ClusterConfig) {
	prevLeader := g.leader
	nm := c.swapMemberIDLocked(g, old, newID)
	c.lg.Info("static member replaced", "group", g.id, "instance", *req.InstanceID, "old", old.id, "new", newID)
	oldProtocols, oldRebalance, oldSession := nm.protocols, nm.rebalanceTimeout, nm.sessionTimeout
	c.updateMemberLocked(g, nm, req, ch)
	nm.heartbeat = now
	switch g.state {
	case Stable:
		if g.selectProtocol() != g.protocol {
			c.prepareRebalanceLocked(g, "static member "+newID+" changed protocols", now, cfg)
			return
		}
		gen := g.generation
		c.storeGroupLocked(g, nil, cfg, func(err *kerr.Error) {
			if nm.joinCh == nil || g.members[newID] != nm {
				return
			}
			if err != nil {
				// Not persisted: give the instance id back to the old member id.
				nm.joinCh <- JoinResult{Err: err, Generation: g.generation, ProtocolType: g.protocolTypePtr(),
					Protocol: g.protocolPtr(), Leader: prevLeader}
				nm.joinCh = nil
				nm.protocols, nm.rebalanceTimeout, nm.sessionTimeout = oldProtocols, oldRebalance, oldSession
				back := c.swapMemberIDLocked(g, nm, old.id)
				back.heartbeat = c.now()
				return
			}
			if g.generation != gen || g.state != Stable {
				return // a rebalance started meanwhile; the member waits for its join phase
			}
			var r JoinResult
			if req.SupportsSkipAssignment && g.leader == newID {
				r = c.joinAnswerLocked(g, nm, g.leader, true)
			} else {
				// Before JoinGroup v9 the old leader id is returned, so that a replaced leader
				// does not run an assignment a stable group would not propagate.
				r = c.joinAnswerLocked(g, nm, prevLeader, false)
				r.Members = nil
			}
			nm.joinCh <- r
			nm.joinCh = nil
			nm.heartbeat = c.now()
		})
	case CompletingRebalance:
		// The leader may be assigning to the old member id: rebalance again.
		c.prepareRebalanceLocked(g, "static member "+newID+" replaced "+old.id, now, cfg)
	case PreparingRebalance:
		c.maybeCompleteJoinLocked(g, now, cfg)
	}
}

// swapMemberIDLocked moves member m to a new id, fencing the waiting requests of the old id.
func (c *Coordinator) swapMemberIDLocked(g *group, m *member, newID string) *member {
	if m.joinCh != nil {
		m.joinCh <- JoinResult{Err: kerr.FencedInstanceID, MemberID: m.id, Generation: -1}
		m.joinCh = nil
	}
	if m.syncCh != nil {
		m.syncCh <- SyncResult{Err: kerr.FencedInstanceID}
		m.syncCh = nil
	}
	nm := *m
	nm.id = newID
	delete(g.members, m.id)
	g.members[newID] = &nm
	if nm.instanceID != nil {
		g.static[*nm.instanceID] = newID
	}
	if g.leader == m.id {
		g.leader = newID
	}
	if g.pendingSync[m.id] {
		delete(g.pendingSync, m.id)
		g.pendingSync[newID] = true
	}
	return &nm
}

func (c *Coordinator) maybePrepareRebalanceLocked(g *group, reason string, now time.Time, cfg config.ClusterConfig) {
	switch g.state {
	case Empty, Stable, CompletingRebalance:
		c.prepareRebalanceLocked(g, reason, now, cfg)
	}
}

// prepareRebalanceLocked starts a join phase: members waiting for a sync are told to
// rejoin, and the phase ends when every member has rejoined or the rebalance timeout
// passes. An empty group's first join phase waits group.initial.rebalance.delay.ms for more
// members, extended while new ones keep coming, up to the rebalance timeout.
func (c *Coordinator) prepareRebalanceLocked(g *group, reason string, now time.Time, cfg config.ClusterConfig) {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.syncCh != nil {
				m.syncCh <- SyncResult{Err: kerr.RebalanceInProgress}
				m.syncCh = nil
			}
		}
	}
	g.pendingSync = nil
	if g.state == Empty {
		delay := time.Duration(cfg.GroupInitialRebalanceDelayMs) * time.Millisecond
		g.initialDelay = true
		g.initialRemaining = max(g.rebalanceTimeout()-delay, 0)
		g.newMemberAdded = false
		g.joinDeadline = now.Add(delay)
	} else {
		g.initialDelay = false
		g.joinDeadline = now.Add(g.rebalanceTimeout())
	}
	c.lg.Info("preparing rebalance", "group", g.id, "generation", g.generation, "reason", reason)
	g.transition(PreparingRebalance, now)
	c.maybeCompleteJoinLocked(g, now, cfg)
}

// maybeCompleteJoinLocked ends the join phase when it is due.
func (c *Coordinator) maybeCompleteJoinLocked(g *group, now time.Time, cfg config.ClusterConfig) {
	if g.state != PreparingRebalance {
		return
	}
	if g.initialDelay {
		if now.Before(g.joinDeadline) {
			return
		}
		if g.newMemberAdded && g.initialRemaining > 0 {
			delay := min(time.Duration(cfg.GroupInitialRebalanceDelayMs)*time.Millisecond, g.initialRemaining)
			g.newMemberAdded = false
			g.initialRemaining = max(g.initialRemaining-delay, 0)
			g.joinDeadline = now.Add(delay)
			return
		}
		c.completeJoinLocked(g, now, cfg)
		return
	}
	if !now.Before(g.joinDeadline) || g.allJoined() {
		c.completeJoinLocked(g, now, cfg)
	}
}

func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinCh == nil {
			return false
		}
	}
	return true
}

// completeJoinLocked ends a join phase: dynamic members that did not rejoin are expelled,
// the generation advances, and every joined member learns it (the leader with everyone's
// metadata). A group left without members becomes Empty.
func (c *Coordinator) completeJoinLocked(g *group, now time.Time, cfg config.ClusterConfig) {
	for _, m := range g.sortedMembers() {
		if m.joinCh == nil && !m.isStatic() {
			c.lg.Info("member expelled: did not rejoin within the rebalance timeout", "group", g.id, "member", m.id)
			g.remove(m, kerr.UnknownMemberID)
		}
	}
	if lead := g.members[g.leader]; lead != nil && lead.joinCh == nil {
		g.leader = ""
		for _, m := range g.sortedMembers() {
			if m.joinCh != nil {
				g.leader = m.id
				break
			}
		}
		if g.leader == "" {
			// Only static members that have not rejoined are left: wait for them, or for
			// their sessions to expire.
			g.leader = lead.id
			g.initialDelay = false
			g.joinDeadline = now.Add(g.rebalanceTimeout())
			return
		}
	}
	g.generation++
	g.initialDelay = false
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.transition(Empty, now)
		c.lg.Info("group is empty", "group", g.id, "generation", g.generation)
		c.storeGroupLocked(g, nil, cfg, func(*kerr.Error) {})
		return
	}
	g.protocol = g.selectProtocol()
	g.transition(CompletingRebalance, now)
	c.lg.Info("join phase complete", "group", g.id, "generation", g.generation, "members", len(g.members),
		"protocol", g.protocol, "leader", g.leader)
	g.pendingSync = map[string]bool{}
	for _, m := range g.members {
		if m.joinCh != nil {
			m.joinCh <- c.joinAnswerLocked(g, m, g.leader, false)
			m.joinCh = nil
		}
		m.heartbeat = now
		g.pendingSync[m.id] = true
	}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
}

// storeGroupLocked persists the group's metadata (Kafka's GroupMetadataValue v3) with the
// given assignments (nil: the members' current ones). done runs with c.mu held.
func (c *Coordinator) storeGroupLocked(g *group, assignments map[string][]byte, cfg config.ClusterConfig, done func(*kerr.Error)) {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	v.Protocol = g.protocolPtr()
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateSince.UnixMilli()
	for _, m := range g.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		vm.Subscription = m.metadata(g.protocol)
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		a := m.assignment
		if assignments != nil {
			a = assignments[m.id]
		}
		if a == nil {
			a = []byte{}
		}
		vm.Assignment = a
		v.Members = append(v.Members, vm)
	}
	c.writeLocked(g.shard, []kv{{key: groupKey(g.id), value: v.AppendTo(nil)}}, cfg, done)
}

func syncFail(ch chan SyncResult, err *kerr.Error) <-chan SyncResult {
	ch <- SyncResult{Err: err}
	return ch
}

// Sync handles a SyncGroup. Members wait until the leader's assignment is stored; the
// leader's SyncGroup stores it and then answers everyone.
func (c *Coordinator) Sync(req SyncRequest) <-chan SyncResult {
	ch := make(chan SyncResult, 1)
	cfg := c.cfg()
	if req.Group == "" {
		return syncFail(ch, kerr.InvalidGroupID)
	}
	for _, a := range req.Assignments {
		if len(a.Assignment) > MaxProtocolMetadataBytes {
			c.lg.Warn("SyncGroup refused: assignment too large", "group", req.Group, "member", a.MemberID,
				"bytes", len(a.Assignment), "limit", MaxProtocolMetadataBytes)
			return syncFail(ch, kerr.InvalidRequest)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.shardLocked(req.Group); err != nil {
		return syncFail(ch, err)
	}
	g := c.groups[req.Group]
	if g == nil {
		return syncFail(ch, kerr.UnknownMemberID)
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return syncFail(ch, err)
	}
	if req.Generation != g.generation {
		return syncFail(ch, kerr.IllegalGeneration)
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol) {
		return syncFail(ch, kerr.InconsistentGroupProtocol)
	}
	now := c.now()
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		return syncFail(ch, kerr.UnknownMemberID)
	case PreparingRebalance:
		return syncFail(ch, kerr.RebalanceInProgress)
	case Stable:
		delete(g.pendingSync, m.id)
		m.heartbeat = now
		ch <- SyncResult{ProtocolType: g.protocolTypePtr(), Protocol: g.protocolPtr(), Assignment: m.assignment}
		return ch
	}
	// CompletingRebalance.
	if m.syncCh != nil {
		m.syncCh <- SyncResult{Err: kerr.RebalanceInProgress}
	}
	m.syncCh = ch
	delete(g.pendingSync, m.id)
	if m.id != g.leader {
		return ch
	}
	assignments := map[string][]byte{}
	for _, a := range req.Assignments {
		if _, ok := g.members[a.MemberID]; ok {
			assignments[a.MemberID] = a.Assignment
		}
	}
	gen := g.generation
	c.storeGroupLocked(g, assignments, cfg, func(err *kerr.Error) {
		if g.generation != gen || g.state != CompletingRebalance || c.groups[g.id] != g {
			return // a new rebalance has already told the waiting members
		}
		now := c.now()
		if err != nil {
			for _, m := range g.members {
				m.assignment = nil
				if m.syncCh != nil {
					m.syncCh <- SyncResult{Err: err}
					m.syncCh = nil
				}
			}
			c.prepareRebalanceLocked(g, "storing the assignment failed", now, cfg)
			return
		}
		for _, m := range g.members {
			m.assignment = assignments[m.id]
			if m.syncCh != nil {
				m.syncCh <- SyncResult{ProtocolType: g.protocolTypePtr(), Protocol: g.protocolPtr(), Assignment: m.assignment}
				m.syncCh = nil
				m.heartbeat = now
			}
		}
		g.transition(Stable, now)
		c.lg.Info("group stable", "group", g.id, "generation", g.generation, "members", len(g.members))
	})
	return ch
}

// Heartbeat handles a Heartbeat: it keeps the member's session alive and tells it,
// with REBALANCE_IN_PROGRESS, when it must rejoin.
func (c *Coordinator) Heartbeat(groupID, memberID string, instanceID *string, generation int32) *kerr.Error {
	if groupID == "" {
		return kerr.InvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.shardLocked(groupID); err != nil {
		return err
	}
	g := c.groups[groupID]
	if g == nil {
		return kerr.UnknownMemberID
	}
	if err := g.validateMember(memberID, instanceID); err != nil {
		return err
	}
	if generation != g.generation {
		return kerr.IllegalGeneration
	}
	m := g.members[memberID]
	switch g.state {
	case Empty:
		return kerr.UnknownMemberID
	case PreparingRebalance:
		m.heartbeat = c.now()
		return kerr.RebalanceInProgress
	default:
		m.heartbeat = c.now()
		return nil
	}
}

// Leave handles a LeaveGroup: it returns the request-level error and one error per member.
func (c *Coordinator) Leave(groupID string, members []LeaveMember) (*kerr.Error, []*kerr.Error) {
	if groupID == "" {
		return kerr.InvalidGroupID, nil
	}
	cfg := c.cfg()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.shardLocked(groupID); err != nil {
		return err, nil
	}
	out := make([]*kerr.Error, len(members))
	g := c.groups[groupID]
	if g == nil {
		for i := range out {
			out[i] = kerr.UnknownMemberID
		}
		return nil, out
	}
	now := c.now()
	for i, lm := range members {
		switch {
		case lm.MemberID == "":
			id, ok := "", false
			if lm.InstanceID != nil {
				id, ok = g.static[*lm.InstanceID]
			}
			if !ok {
				out[i] = kerr.UnknownMemberID
				continue
			}
			c.removeMemberLocked(g, g.members[id], "left (by instance id): "+lm.Reason, now, cfg)
		case !g.pending[lm.MemberID].IsZero():
			delete(g.pending, lm.MemberID)
			c.maybeCompleteJoinLocked(g, now, cfg)
		default:
			if err := g.validateMember(lm.MemberID, lm.InstanceID); err != nil {
				out[i] = err
				continue
			}
			c.removeMemberLocked(g, g.members[lm.MemberID], "left: "+lm.Reason, now, cfg)
		}
	}
	return nil, out
}

// removeMemberLocked takes a member out (leave or expiry) and rebalances what remains.
func (c *Coordinator) removeMemberLocked(g *group, m *member, reason string, now time.Time, cfg config.ClusterConfig) {
	c.lg.Info("member removed", "group", g.id, "member", m.id, "reason", reason)
	g.remove(m, kerr.UnknownMemberID)
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalanceLocked(g, "member "+m.id+" removed", now, cfg)
	case PreparingRebalance:
		c.maybeCompleteJoinLocked(g, now, cfg)
	}
}

// checkDeadlinesLocked applies every deadline of g that has passed.
func (c *Coordinator) checkDeadlinesLocked(g *group, now time.Time, cfg config.ClusterConfig) {
	for id, exp := range g.pending {
		if !now.Before(exp) {
			delete(g.pending, id)
			c.maybeCompleteJoinLocked(g, now, cfg)
		}
	}
	for _, m := range g.sortedMembers() {
		// A member waiting for its join or sync answer is kept alive: the rebalance and
		// sync deadlines bound those waits.
		if m.joinCh != nil || m.syncCh != nil || now.Before(m.heartbeat.Add(m.sessionTimeout)) {
			continue
		}
		if g.members[m.id] != m {
			continue
		}
		c.removeMemberLocked(g, m, "session timeout expired", now, cfg)
	}
	if g.state == PreparingRebalance {
		c.maybeCompleteJoinLocked(g, now, cfg)
	}
	if (g.state == CompletingRebalance || g.state == Stable) && len(g.pendingSync) > 0 && !now.Before(g.syncDeadline) {
		var late []*member
		for id := range g.pendingSync {
			if m := g.members[id]; m != nil {
				late = append(late, m)
			}
		}
		g.pendingSync = nil
		for _, m := range late {
			c.lg.Info("member expelled: no SyncGroup within the rebalance timeout", "group", g.id, "member", m.id)
			g.remove(m, kerr.UnknownMemberID)
		}
		if len(late) > 0 {
			c.prepareRebalanceLocked(g, "members did not sync", now, cfg)
		}
	}
}
