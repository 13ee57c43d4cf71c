package group

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/config"
)

// stableTwo forms group g with two members through the whole protocol and returns their
// ids (m1 leads) and the generation.
func (e *env) stableTwo(g string) (string, string, int32) {
	t := e.t
	t.Helper()
	m1, ch1 := e.newMember(joinReq(g, "", "c1", "orders"))
	r1 := recvJoin(t, ch1)
	if r1.Err != nil || r1.Generation != 1 || r1.Leader != m1 || len(r1.Members) != 1 {
		t.Fatalf("first member's join: %+v", r1)
	}
	if s := recvSync(t, e.sync(g, m1, 1, map[string][]byte{m1: []byte("all")})); s.Err != nil || string(s.Assignment) != "all" {
		t.Fatalf("first sync: %+v", s)
	}
	wantErr(t, "heartbeat while alone", e.c.Heartbeat(g, m1, nil, 1), nil)

	m2, ch2 := e.newMember(joinReq(g, "", "c2", "orders"))
	pending(t, ch2)
	wantErr(t, "heartbeat during rebalance", e.c.Heartbeat(g, m1, nil, 1), kerr.RebalanceInProgress)
	ch1 = e.c.Join(joinReq(g, m1, "c1", "orders"))
	r1, r2 := recvJoin(t, ch1), recvJoin(t, ch2)
	for _, r := range []JoinResult{r1, r2} {
		if r.Err != nil || r.Generation != 2 || r.Leader != m1 || *r.Protocol != "range" || *r.ProtocolType != "consumer" {
			t.Fatalf("join of generation 2: %+v", r)
		}
	}
	if len(r1.Members) != 2 || len(r2.Members) != 0 {
		t.Fatalf("only the leader gets the members: %d, %d", len(r1.Members), len(r2.Members))
	}
	for _, m := range r1.Members {
		if !bytes.Equal(m.Metadata, consumerMeta("orders")) {
			t.Fatalf("leader got metadata %q", m.Metadata)
		}
	}
	s2 := e.sync(g, m2, 2, nil)
	pending(t, s2)
	s1 := e.sync(g, m1, 2, map[string][]byte{m1: []byte("p0"), m2: []byte("p1,p2")})
	if r := recvSync(t, s1); r.Err != nil || string(r.Assignment) != "p0" {
		t.Fatalf("leader's sync: %+v", r)
	}
	if r := recvSync(t, s2); r.Err != nil || string(r.Assignment) != "p1,p2" {
		t.Fatalf("follower's sync: %+v", r)
	}
	wantErr(t, "heartbeat m1", e.c.Heartbeat(g, m1, nil, 2), nil)
	wantErr(t, "heartbeat m2", e.c.Heartbeat(g, m2, nil, 2), nil)
	return m1, m2, 2
}

func TestJoinSyncHeartbeatTwoMembers(t *testing.T) {
	e := newEnv(t)
	m1, m2, _ := e.stableTwo("g")
	d := e.c.DescribeGroup("g")
	if d.Err != nil || d.State != Stable || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	for _, m := range d.Members {
		want := map[string]string{m1: "p0", m2: "p1,p2"}[m.MemberID]
		if string(m.Assignment) != want || m.ClientHost != "/127.0.0.1" {
			t.Fatalf("member %s: assignment %q, host %q", m.MemberID, m.Assignment, m.ClientHost)
		}
	}
	list, err := e.c.ListGroups(nil)
	if err != nil || len(list) != 1 || list[0].State != Stable || list[0].ProtocolType != "consumer" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if list, _ := e.c.ListGroups([]string{"empty"}); len(list) != 0 {
		t.Fatalf("states filter: %+v", list)
	}
	if list, _ := e.c.ListGroups([]string{"STABLE"}); len(list) != 1 {
		t.Fatalf("states filter is case-insensitive: %+v", list)
	}
	// A follower rejoining with unchanged metadata gets the current generation at once.
	if r := recvJoin(t, e.c.Join(joinReq("g", m2, "c2", "orders"))); r.Err != nil || r.Generation != 2 {
		t.Fatalf("follower rejoin: %+v", r)
	}
	if e.c.DescribeGroup("g").State != Stable {
		t.Fatal("a follower's unchanged rejoin must not rebalance")
	}
}

func TestLeaveRebalances(t *testing.T) {
	e := newEnv(t)
	m1, m2, gen := e.stableTwo("g")
	top, per := e.c.Leave("g", []LeaveMember{{MemberID: m2}, {MemberID: "nobody"}})
	if top != nil || per[0] != nil || per[1] != kerr.UnknownMemberID {
		t.Fatalf("leave: %v %v", top, per)
	}
	wantErr(t, "heartbeat after a leave", e.c.Heartbeat("g", m1, nil, gen), kerr.RebalanceInProgress)
	wantErr(t, "heartbeat of the member that left", e.c.Heartbeat("g", m2, nil, gen), kerr.UnknownMemberID)
	r := recvJoin(t, e.c.Join(joinReq("g", m1, "c1", "orders")))
	if r.Err != nil || r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin alone: %+v", r)
	}
	// The last member leaving empties the group.
	if _, per := e.c.Leave("g", []LeaveMember{{MemberID: m1}}); per[0] != nil {
		t.Fatal(per[0])
	}
	if d := e.c.DescribeGroup("g"); d.State != Empty || len(d.Members) != 0 {
		t.Fatalf("after the last leave: %+v", d)
	}
}

func TestSessionExpiryExpelsMember(t *testing.T) {
	e := newEnv(t)
	m1, m2, gen := e.stableTwo("g")
	for i := 0; i < 3; i++ {
		e.advance(3 * time.Second)
		wantErr(t, "m1 heartbeat", e.c.Heartbeat("g", m1, nil, gen), nil)
	}
	e.advance(3 * time.Second)
	// m2 has been silent for 12s, past its 10s session.
	wantErr(t, "m1 heartbeat after m2 expired", e.c.Heartbeat("g", m1, nil, gen), kerr.RebalanceInProgress)
	wantErr(t, "expired member", e.c.Heartbeat("g", m2, nil, gen), kerr.UnknownMemberID)
	r := recvJoin(t, e.c.Join(joinReq("g", m1, "c1", "orders")))
	if r.Err != nil || len(r.Members) != 1 || r.Members[0].MemberID != m1 {
		t.Fatalf("rejoin after expiry: %+v", r)
	}
}

func TestRebalanceTimeoutExpelsMembersThatDoNotRejoin(t *testing.T) {
	e := newEnv(t)
	m1, m2, gen := e.stableTwo("g")
	_, ch3 := e.newMember(joinReq("g", "", "c3", "orders"))
	ch1 := e.c.Join(joinReq("g", m1, "c1", "orders"))
	// m2 keeps heartbeating but never rejoins.
	for i := 0; i < 9; i++ {
		e.advance(3 * time.Second)
		e.c.Heartbeat("g", m2, nil, gen)
		pending(t, ch1)
	}
	e.advance(3 * time.Second) // 30s: the rebalance timeout
	r1, r3 := recvJoin(t, ch1), recvJoin(t, ch3)
	if r1.Err != nil || r3.Err != nil || r1.Generation != gen+1 || len(r1.Members) != 2 {
		t.Fatalf("join after the rebalance timeout: %+v / %+v", r1, r3)
	}
	wantErr(t, "member that did not rejoin", e.c.Heartbeat("g", m2, nil, gen+1), kerr.UnknownMemberID)
}

func TestSyncTimeoutExpelsMembersThatDoNotSync(t *testing.T) {
	e := newEnv(t)
	m1, m2, gen := e.stableTwo("g")
	ch2 := e.c.Join(joinReq("g", m2, "c2", "audit")) // new metadata: rebalance
	ch1 := e.c.Join(joinReq("g", m1, "c1", "orders"))
	recvJoin(t, ch1)
	recvJoin(t, ch2)
	s1 := e.sync("g", m1, gen+1, map[string][]byte{m1: []byte("x")})
	recvSync(t, s1)
	// m2 never syncs; it heartbeats, but the sync deadline (the rebalance timeout) expels it.
	for i := 0; i < 10; i++ {
		e.advance(3 * time.Second)
		e.c.Heartbeat("g", m1, nil, gen+1)
		e.c.Heartbeat("g", m2, nil, gen+1)
	}
	wantErr(t, "member that never synced", e.c.Heartbeat("g", m2, nil, gen+1), kerr.UnknownMemberID)
	wantErr(t, "leader", e.c.Heartbeat("g", m1, nil, gen+1), kerr.RebalanceInProgress)
}

func TestErrorsStoreNothing(t *testing.T) {
	e := newEnv(t)
	m1, _, gen := e.stableTwo("g")
	before := e.logEnd()

	wantErr(t, "heartbeat, wrong generation", e.c.Heartbeat("g", m1, nil, gen+5), kerr.IllegalGeneration)
	wantErr(t, "heartbeat, unknown member", e.c.Heartbeat("g", "ghost", nil, gen), kerr.UnknownMemberID)
	wantErr(t, "heartbeat, unknown group", e.c.Heartbeat("nogroup", m1, nil, gen), kerr.UnknownMemberID)
	wantErr(t, "sync, wrong generation", recvSync(t, e.sync("g", m1, gen-1, nil)).Err, kerr.IllegalGeneration)
	wantErr(t, "sync, unknown member", recvSync(t, e.sync("g", "ghost", gen, nil)).Err, kerr.UnknownMemberID)
	wantErr(t, "join, unknown member", recvJoin(t, e.c.Join(joinReq("g", "ghost", "c", "orders"))).Err, kerr.UnknownMemberID)
	wantErr(t, "join, unknown member of an unknown group", recvJoin(t, e.c.Join(joinReq("new", "ghost", "c", "orders"))).Err, kerr.UnknownMemberID)

	commit := func(member string, generation int32) *kerr.Error {
		r := e.commit(CommitRequest{Group: "g", MemberID: member, Generation: generation, RetentionMs: -1,
			Topics: []CommitTopic{{Topic: "orders", Partitions: []CommitPartition{{Partition: 0, Offset: 42, LeaderEpoch: -1, TimestampMs: -1}}}}})
		return r[0][0]
	}
	wantErr(t, "commit, wrong generation", commit(m1, gen+1), kerr.IllegalGeneration)
	wantErr(t, "commit, unknown member", commit("ghost", gen), kerr.UnknownMemberID)
	wantErr(t, "simple commit to a group with members", commit("", -1), kerr.UnknownMemberID)
	if got := e.fetched("g", "orders", 0); got != -1 {
		t.Fatalf("a refused commit stored offset %d", got)
	}
	if e.logEnd() != before {
		t.Fatalf("refused requests wrote %d records", e.logEnd()-before)
	}
	wantErr(t, "commit by the member", commit(m1, gen), nil)
	if got := e.fetched("g", "orders", 0); got != 42 {
		t.Fatalf("committed offset: %d", got)
	}
}

func TestCommitToUnknownTopicStoresNothingForIt(t *testing.T) {
	e := newEnv(t)
	before := e.logEnd()
	req := CommitRequest{Group: "simple", Generation: -1, RetentionMs: -1, Topics: []CommitTopic{
		{Topic: "missing", Partitions: []CommitPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1, TimestampMs: -1}}},
		{Topic: "orders", Partitions: []CommitPartition{
			{Partition: 7, Offset: 5, LeaderEpoch: -1, TimestampMs: -1},
			{Partition: 1, Offset: 9, LeaderEpoch: 3, TimestampMs: -1, Metadata: strPtr("m")},
		}},
	}}
	r := e.commit(req)
	wantErr(t, "missing topic", r[0][0], kerr.UnknownTopicOrPartition)
	wantErr(t, "partition out of range", r[1][0], kerr.UnknownTopicOrPartition)
	wantErr(t, "valid partition", r[1][1], nil)
	if e.logEnd() != before+1 {
		t.Fatalf("wrote %d records, want only the valid one", e.logEnd()-before)
	}
	all, err := e.c.FetchOffsets("simple", nil, false)
	if err != nil || len(all) != 1 || all[0].Topic != "orders" || all[0].Partition != 1 || all[0].Offset != 9 ||
		all[0].LeaderEpoch != 3 || all[0].Metadata != "m" {
		t.Fatalf("stored: %+v %v", all, err)
	}
	// Nothing remains after a reload either.
	e.reload()
	if all, _ := e.c.FetchOffsets("simple", nil, false); len(all) != 1 {
		t.Fatalf("after reload: %+v", all)
	}
}

func strPtr(s string) *string { return &s }

func TestOversizedMetadataIsRefused(t *testing.T) {
	e := newEnv(t)
	before := e.logEnd()
	req := joinReq("big", "", "c", "orders")
	req.Protocols = append(req.Protocols, Protocol{Name: "huge", Metadata: make([]byte, MaxProtocolMetadataBytes+1)})
	wantErr(t, "oversized metadata", recvJoin(t, e.c.Join(req)).Err, kerr.InvalidRequest)
	if d := e.c.DescribeGroup("big"); d.State != Dead {
		t.Fatalf("the group exists after a refused join: %+v", d)
	}
	// An oversized assignment is refused too, and the group keeps waiting for a good one.
	m, ch := e.newMember(joinReq("g", "", "c", "orders"))
	r := recvJoin(t, ch)
	big := e.sync("g", m, r.Generation, map[string][]byte{m: make([]byte, MaxProtocolMetadataBytes+1)})
	wantErr(t, "oversized assignment", recvSync(t, big).Err, kerr.InvalidRequest)
	if e.logEnd() != before {
		t.Fatalf("refused requests wrote %d records", e.logEnd()-before)
	}
	if s := recvSync(t, e.sync("g", m, r.Generation, map[string][]byte{m: []byte("ok")})); s.Err != nil {
		t.Fatal(s.Err)
	}
}

func TestSessionTimeoutBounds(t *testing.T) {
	e := newEnv(t)
	req := joinReq("g", "", "c", "orders")
	req.SessionTimeout = 5 * time.Second
	wantErr(t, "below group.min.session.timeout.ms", recvJoin(t, e.c.Join(req)).Err, kerr.InvalidSessionTimeout)
	req.SessionTimeout = 31 * time.Minute
	wantErr(t, "above group.max.session.timeout.ms", recvJoin(t, e.c.Join(req)).Err, kerr.InvalidSessionTimeout)
	e.setConfig(func(c *config.ClusterConfig) { c.GroupMaxSessionTimeoutMs = 40 * 60 * 1000 })
	wantErr(t, "after raising the maximum", recvJoin(t, e.c.Join(req)).Err, kerr.MemberIDRequired)
}

func TestStaticMembership(t *testing.T) {
	e := newEnv(t)
	inst := "instance-a"
	req := joinReq("g", "", "c1", "orders")
	req.InstanceID = &inst
	// Static members get their id on the first join, without MEMBER_ID_REQUIRED.
	r := recvJoin(t, e.c.Join(req))
	if r.Err != nil || !strings.HasPrefix(r.MemberID, inst+"-") || r.Leader != r.MemberID {
		t.Fatalf("static join: %+v", r)
	}
	old, gen := r.MemberID, r.Generation
	if s := recvSync(t, e.sync("g", old, gen, map[string][]byte{old: []byte("a")})); s.Err != nil {
		t.Fatal(s.Err)
	}
	// The instance restarts and joins again without its member id: it replaces the old id,
	// keeps its assignment, and the group does not rebalance.
	r2 := recvJoin(t, e.c.Join(req))
	if r2.Err != nil || r2.MemberID == old || r2.Generation != gen {
		t.Fatalf("replacement join: %+v", r2)
	}
	if r2.Leader != old || len(r2.Members) != 0 {
		t.Fatalf("before JoinGroup v9 the old leader id is returned and no members: %+v", r2)
	}
	if d := e.c.DescribeGroup("g"); d.State != Stable || len(d.Members) != 1 || d.Members[0].MemberID != r2.MemberID ||
		string(d.Members[0].Assignment) != "a" {
		t.Fatalf("after replacement: %+v", d)
	}
	if s := recvSync(t, e.sync("g", r2.MemberID, gen, nil)); s.Err != nil || string(s.Assignment) != "a" {
		t.Fatalf("replacement's sync: %+v", s)
	}
	// The old member id is fenced wherever it shows up with the instance id.
	wantErr(t, "old id heartbeat", e.c.Heartbeat("g", old, &inst, gen), kerr.FencedInstanceID)
	wantErr(t, "old id sync", recvSync(t, e.c.Sync(SyncRequest{Group: "g", MemberID: old, InstanceID: &inst, Generation: gen})).Err, kerr.FencedInstanceID)
	c := e.commit(CommitRequest{Group: "g", MemberID: old, InstanceID: &inst, Generation: gen, RetentionMs: -1,
		Topics: []CommitTopic{{Topic: "orders", Partitions: []CommitPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1, TimestampMs: -1}}}}})
	wantErr(t, "old id commit", c[0][0], kerr.FencedInstanceID)
	oldReq := req
	oldReq.MemberID = old
	wantErr(t, "old id join", recvJoin(t, e.c.Join(oldReq)).Err, kerr.FencedInstanceID)
	top, per := e.c.Leave("g", []LeaveMember{{MemberID: old, InstanceID: &inst}})
	if top != nil || per[0] != kerr.FencedInstanceID {
		t.Fatalf("old id leave: %v %v", top, per)
	}
	wantErr(t, "new id heartbeat", e.c.Heartbeat("g", r2.MemberID, &inst, gen), nil)

	// A waiting join of the old id is fenced by a replacement. Bring in m2, then m3, so that
	// the static member's rejoin waits for m2.
	m2, ch2 := e.newMember(joinReq("g", "", "c2", "orders"))
	staticRejoin := func(id string) <-chan JoinResult {
		r := req
		r.MemberID = id
		return e.c.Join(r)
	}
	rs, r2b := recvJoin(t, staticRejoin(r2.MemberID)), recvJoin(t, ch2)
	if rs.Err != nil || r2b.Err != nil {
		t.Fatalf("rebalance with m2: %+v / %+v", rs, r2b)
	}
	recvSync(t, e.sync("g", r2.MemberID, rs.Generation, map[string][]byte{r2.MemberID: []byte("a"), m2: []byte("b")}))
	recvSync(t, e.sync("g", m2, rs.Generation, nil))
	m3, ch3 := e.newMember(joinReq("g", "", "c3", "orders"))
	waiting := staticRejoin(r2.MemberID)
	pending(t, waiting)
	ch4 := e.c.Join(req) // the instance restarts again
	wantErr(t, "waiting join of a replaced id", recvJoin(t, waiting).Err, kerr.FencedInstanceID)
	ch2 = e.c.Join(joinReq("g", m2, "c2", "orders"))
	r3, r4, r5 := recvJoin(t, ch4), recvJoin(t, ch2), recvJoin(t, ch3)
	if r3.Err != nil || r4.Err != nil || r5.Err != nil || r3.Generation != r4.Generation || r5.MemberID != m3 ||
		r3.Generation != rs.Generation+1 {
		t.Fatalf("rebalance after the replacement: %+v / %+v / %+v", r3, r4, r5)
	}

	// Administrative removal by instance id alone.
	top, per = e.c.Leave("g", []LeaveMember{{InstanceID: &inst}})
	if top != nil || per[0] != nil {
		t.Fatalf("leave by instance id: %v %v", top, per)
	}
	wantErr(t, "removed static member", e.c.Heartbeat("g", r3.MemberID, &inst, r3.Generation), kerr.UnknownMemberID)
}

func TestOffsetsSurviveReload(t *testing.T) {
	e := newEnv(t)
	m1, m2, gen := e.stableTwo("g")
	for p, off := range []int64{10, 20, 30} {
		r := e.commit(CommitRequest{Group: "g", MemberID: m1, Generation: gen, RetentionMs: -1,
			Topics: []CommitTopic{{Topic: "orders", Partitions: []CommitPartition{{Partition: int32(p), Offset: off, LeaderEpoch: 2, Metadata: strPtr("md"), TimestampMs: -1}}}}})
		wantErr(t, "commit", r[0][0], nil)
	}
	// An overwrite and a simple commit in another group on the same coordinator.
	wantErr(t, "overwrite", e.commit(CommitRequest{Group: "g", MemberID: m2, Generation: gen, RetentionMs: -1,
		Topics: []CommitTopic{{Topic: "orders", Partitions: []CommitPartition{{Partition: 0, Offset: 11, LeaderEpoch: 2, TimestampMs: -1}}}}})[0][0], nil)
	wantErr(t, "simple", e.commit(simpleCommit("other", "audit", 0, 7))[0][0], nil)

	e.reload()
	for p, want := range []int64{11, 20, 30} {
		if got := e.fetched("g", "orders", int32(p)); got != want {
			t.Fatalf("orders-%d after reload: %d, want %d", p, got, want)
		}
	}
	if got := e.fetched("other", "audit", 0); got != 7 {
		t.Fatalf("simple commit after reload: %d", got)
	}
	d := e.c.DescribeGroup("g")
	if d.State != Stable || len(d.Members) != 2 || d.Protocol != "range" {
		t.Fatalf("group after reload: %+v", d)
	}
	// The members carry on in their generation; a silent one expires.
	wantErr(t, "heartbeat after reload", e.c.Heartbeat("g", m1, nil, gen), nil)
	e.advance(6 * time.Second)
	e.c.Heartbeat("g", m1, nil, gen)
	e.advance(6 * time.Second)
	wantErr(t, "after m2's session expired", e.c.Heartbeat("g", m1, nil, gen), kerr.RebalanceInProgress)
}

func TestOffsetsExpire(t *testing.T) {
	e := newEnv(t)
	wantErr(t, "simple commit", e.commit(simpleCommit("simple", "orders", 0, 5))[0][0], nil)
	m1, m2, gen := e.stableTwo("managed")
	wantErr(t, "member commit", e.commit(CommitRequest{Group: "managed", MemberID: m1, Generation: gen, RetentionMs: -1,
		Topics: []CommitTopic{{Topic: "orders", Partitions: []CommitPartition{{Partition: 1, Offset: 6, LeaderEpoch: -1, TimestampMs: -1}}}}})[0][0], nil)

	retention := time.Duration(e.config().OffsetsRetentionMinutes) * time.Minute
	e.advance(retention / 2)
	// Keep the managed group alive past the retention: a group with members never expires.
	for _, m := range []string{m1, m2} {
		e.c.Heartbeat("managed", m, nil, gen)
	}
	e.c.Leave("managed", []LeaveMember{{MemberID: m1}, {MemberID: m2}})
	if d := e.c.DescribeGroup("managed"); d.State != Empty {
		t.Fatalf("managed group: %+v", d)
	}
	e.advance(retention / 2)
	e.c.ExpireOffsets()
	if got := e.fetched("simple", "orders", 0); got != -1 {
		t.Fatalf("simple commit survived its retention: %d", got)
	}
	if d := e.c.DescribeGroup("simple"); d.State != Dead {
		t.Fatalf("a group with no offsets left is deleted: %+v", d)
	}
	if got := e.fetched("managed", "orders", 1); got != 6 {
		t.Fatal("a managed group's retention runs from when it became empty")
	}
	e.advance(retention / 2)
	e.c.ExpireOffsets()
	if got := e.fetched("managed", "orders", 1); got != -1 {
		t.Fatalf("managed commit survived: %d", got)
	}
	// The tombstones are durable: nothing returns on reload.
	e.reload()
	if got, _ := e.c.FetchOffsets("simple", nil, false); len(got) != 0 {
		t.Fatalf("after reload: %+v", got)
	}
	if got, _ := e.c.FetchOffsets("managed", nil, false); len(got) != 0 {
		t.Fatalf("after reload: %+v", got)
	}
	if l, _ := e.c.ListGroups(nil); len(l) != 0 {
		t.Fatalf("groups after reload: %+v", l)
	}
}

func TestInitialRebalanceDelay(t *testing.T) {
	e := newEnv(t)
	e.setConfig(func(c *config.ClusterConfig) { c.GroupInitialRebalanceDelayMs = 3000 })
	_, ch1 := e.newMember(joinReq("g", "", "c1", "orders"))
	e.advance(time.Second)
	pending(t, ch1)
	_, ch2 := e.newMember(joinReq("g", "", "c2", "orders"))
	e.advance(2 * time.Second) // the first delay ends; a newcomer extends it
	pending(t, ch1)
	e.advance(2 * time.Second)
	pending(t, ch2)
	e.advance(time.Second)
	r1, r2 := recvJoin(t, ch1), recvJoin(t, ch2)
	if r1.Err != nil || r2.Err != nil || r1.Generation != 1 || r2.Generation != 1 {
		t.Fatalf("after the delay: %+v / %+v", r1, r2)
	}
}

func TestDeleteGroupsAndOffsets(t *testing.T) {
	e := newEnv(t)
	m1, m2, gen := e.stableTwo("g")
	wantErr(t, "commit", e.commit(CommitRequest{Group: "g", MemberID: m1, Generation: gen, RetentionMs: -1,
		Topics: []CommitTopic{
			{Topic: "orders", Partitions: []CommitPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1, TimestampMs: -1}}},
			{Topic: "audit", Partitions: []CommitPartition{{Partition: 0, Offset: 2, LeaderEpoch: -1, TimestampMs: -1}}},
		}})[1][0], nil)
	if errs := e.c.DeleteGroups([]string{"g", "nope"})(); errs[0] != kerr.NonEmptyGroup || errs[1] != kerr.GroupIDNotFound {
		t.Fatalf("delete groups: %v", errs)
	}
	top, wait := e.c.DeleteOffsets("g", []FetchTopic{{Topic: "orders", Partitions: []int32{0}}, {Topic: "audit", Partitions: []int32{0}}})
	if top != nil {
		t.Fatal(top)
	}
	if errs := wait(); errs[0][0] != kerr.GroupSubscribedToTopic || errs[1][0] != nil {
		t.Fatalf("offset delete: %v", errs)
	}
	if e.fetched("g", "orders", 0) != 1 || e.fetched("g", "audit", 0) != -1 {
		t.Fatal("offset delete removed the wrong offsets")
	}
	e.c.Leave("g", []LeaveMember{{MemberID: m1}, {MemberID: m2}})
	if errs := e.c.DeleteGroups([]string{"g"})(); errs[0] != nil {
		t.Fatalf("delete of the empty group: %v", errs)
	}
	if d := e.c.DescribeGroup("g"); d.State != Dead {
		t.Fatalf("after delete: %+v", d)
	}
	e.reload()
	if got, _ := e.c.FetchOffsets("g", nil, false); len(got) != 0 {
		t.Fatalf("offsets after delete and reload: %+v", got)
	}
	if top, _ := e.c.DeleteOffsets("g", nil); top != kerr.GroupIDNotFound {
		t.Fatalf("offset delete of a missing group: %v", top)
	}
}

func TestLoadInProgressAndUnavailable(t *testing.T) {
	e := newEnv(t)
	wantErr(t, "commit", e.commit(simpleCommit("g", "orders", 0, 3))[0][0], nil)
	e.c.Close()
	e.host.mu.Lock()
	e.host.blocked = true
	e.host.mu.Unlock()
	e.c = New(Options{Host: e.host, Partitions: e.n, Config: e.config, Now: e.clock.Now, TickInterval: -1})
	shard := PartitionFor("g", e.n)
	wantErr(t, "before leading", e.c.Ready("g"), kerr.NotCoordinator)
	e.c.BecomeLeader(shard)
	wantErr(t, "while loading", e.c.Ready("g"), kerr.CoordinatorLoadInProgress)
	wantErr(t, "join while loading", recvJoin(t, e.c.Join(joinReq("g", "", "c", "orders"))).Err, kerr.CoordinatorLoadInProgress)
	if _, err := e.c.FetchOffsets("g", nil, false); err != kerr.CoordinatorLoadInProgress {
		t.Fatalf("fetch while loading: %v", err)
	}
	e.host.mu.Lock()
	e.host.blocked = false
	e.host.mu.Unlock()
	deadline := time.Now().Add(waitFor)
	for !e.c.Loaded(shard) {
		if time.Now().After(deadline) {
			t.Fatal("never loaded once the partition came back")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := e.fetched("g", "orders", 0); got != 3 {
		t.Fatalf("after load: %d", got)
	}
	none := New(Options{Host: e.host, Partitions: 0, TickInterval: -1})
	defer none.Close()
	wantErr(t, "no offsets topic", none.Ready("g"), kerr.CoordinatorNotAvailable)
}

func TestCloseAnswersWaitingRequests(t *testing.T) {
	e := newEnv(t)
	m1, _, gen := e.stableTwo("g")
	_, ch3 := e.newMember(joinReq("g", "", "c3", "orders"))
	e.c.Close()
	wantErr(t, "waiting join at close", recvJoin(t, ch3).Err, kerr.NotCoordinator)
	wantErr(t, "heartbeat after close", e.c.Heartbeat("g", m1, nil, gen), kerr.CoordinatorNotAvailable)
}

func TestPartitionForMatchesKafka(t *testing.T) {
	// Java: "hello".hashCode() == 99162322; "polygenelubricants".hashCode() == Integer.MIN_VALUE,
	// which Kafka's Utils.abs maps to 0.
	cases := []struct {
		id   string
		n    int32
		want int32
	}{
		{"hello", 50, 99162322 % 50},
		{"polygenelubricants", 50, 0},
		{"", 50, 0},
		{"a", 16, 97 % 16},
		{"ab", 50, (97*31 + 98) % 50},
		{"é", 50, 233 % 50},
		// A character outside the BMP counts as two UTF-16 code units (0xD83D, 0xDE00).
		{"\U0001F600", 1000, (0xD83D*31 + 0xDE00) % 1000},
	}
	for _, c := range cases {
		if got := PartitionFor(c.id, c.n); got != c.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", c.id, c.n, got, c.want)
		}
	}
	// Negative hashes: Java "zzzzzzzzzz".hashCode() is negative; abs then modulo.
	h := javaStringHash("zzzzzzzzzz")
	if h >= 0 {
		t.Fatalf("expected a negative hash, got %d", h)
	}
	if got := PartitionFor("zzzzzzzzzz", 50); got != (-h)%50 {
		t.Errorf("negative hash: %d", got)
	}
}

func TestDeletedTopicLosesItsOffsets(t *testing.T) {
	e := newEnv(t)
	for _, g := range []string{"g1", "g2"} {
		wantErr(t, "commit", e.commit(simpleCommit(g, "orders", 2, 8))[0][0], nil)
		wantErr(t, "commit", e.commit(simpleCommit(g, "audit", 0, 4))[0][0], nil)
	}
	e.c.DeleteTopicOffsets("orders")
	for _, g := range []string{"g1", "g2"} {
		if e.fetched(g, "orders", 2) != -1 || e.fetched(g, "audit", 0) != 4 {
			t.Fatalf("%s after deleting orders: %d %d", g, e.fetched(g, "orders", 2), e.fetched(g, "audit", 0))
		}
	}
	e.reload()
	if e.fetched("g1", "orders", 2) != -1 || e.fetched("g1", "audit", 0) != 4 {
		t.Fatal("after reload")
	}
}
