package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// A consumer without READ on its group cannot join, sync, heartbeat or leave; FindCoordinator
// needs DESCRIBE on the group or transactional id; a group the principal may read works.
func TestGroupMembershipNeedsGroupRead(t *testing.T) {
	addr, _, table, cl := startDenyTableBroker(t)
	createTopic(t, addr, "t", 1, 3)
	table.deny(opRead, rtGroup, "locked")
	table.deny(opDescribe, rtGroup, "hidden")
	table.deny(opDescribe, rtTxnID, "txn")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"hidden", "locked"}
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil || len(fresp.Coordinators) != 2 {
		t.Fatalf("find coordinators: %+v %v", fresp, err)
	}
	coords := map[string]kmsg.FindCoordinatorResponseCoordinator{}
	for _, c := range fresp.Coordinators {
		coords[c.Key] = c
	}
	if c := coords["hidden"]; c.ErrorCode != kerr.GroupAuthorizationFailed.Code || c.NodeID != -1 {
		t.Fatalf("coordinator of a group the client may not describe: %+v", c)
	}
	if c := coords["locked"]; c.ErrorCode != 0 || c.NodeID != 1 {
		t.Fatalf("coordinator of a describable group: %+v", c)
	}
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"txn"}
	if fresp, err = fc.RequestWith(ctx, cl); err != nil || fresp.Coordinators[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("coordinator of a transactional id the client may not describe: %+v %v", fresp, err)
	}

	// A real consumer of the locked group sees the error and never gets a record.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("locked"), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var refused error
	for refused == nil && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		if fs.NumRecords() > 0 {
			t.Fatal("a consumer without READ on its group got records")
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, kerr.GroupAuthorizationFailed) {
				refused = err
			}
		})
	}
	if refused == nil {
		t.Fatal("the consumer never saw GROUP_AUTHORIZATION_FAILED")
	}
	consumer.Close()

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.MemberID, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "locked", "m", "consumer", 10000, 10000
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name = "range"
	jg.Protocols = append(jg.Protocols, jp)
	if jresp, err := jg.RequestWith(ctx, cl); err != nil || jresp.ErrorCode != kerr.GroupAuthorizationFailed.Code || jresp.Generation != -1 {
		t.Fatalf("join: %+v %v", jresp, err)
	}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID = "locked", "m"
	if sresp, err := sg.RequestWith(ctx, cl); err != nil || sresp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("sync: %+v %v", sresp, err)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID = "locked", "m"
	if hresp, err := hb.RequestWith(ctx, cl); err != nil || hresp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("heartbeat: %+v %v", hresp, err)
	}
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group = "locked"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = "m"
	lv.Members = append(lv.Members, lm)
	if lresp, err := lv.RequestWith(ctx, cl); err != nil || lresp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("leave: %+v %v", lresp, err)
	}
	groups, err := kadm.NewClient(cl).ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := groups["locked"]; ok {
		t.Fatalf("the refused joins created the group: %v", groups.Groups())
	}

	// The allowed path still works: a consumer of another group reads everything.
	ok, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("open"), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	got := 0
	for got < 3 && ctx.Err() == nil {
		fs := ok.PollFetches(ctx)
		if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("allowed consumer: %v", err)
		}
		got += fs.NumRecords()
	}
	if got != 3 {
		t.Fatalf("allowed consumer got %d records, want 3", got)
	}
}

// commitOne commits offset for partition 0 of each topic, and returns each topic's code.
func commitOne(t *testing.T, ctx context.Context, cl *kgo.Client, group string, offset int64, topics ...string) map[string]int16 {
	t.Helper()
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = group, -1
	for _, topic := range topics {
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = topic
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Offset = offset
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
	}
	resp, err := oc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	return codes
}

// committed is every offset of group, as a principal allowed everything sees them.
func committed(t *testing.T, ctx context.Context, table *tableAuthorizer, cl *kgo.Client, group string) map[string]int64 {
	t.Helper()
	table.mu.Lock()
	saved := table.denied
	table.denied = map[aclCheck]bool{}
	table.mu.Unlock()
	defer func() { table.mu.Lock(); table.denied = saved; table.mu.Unlock() }()
	os, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	os.Each(func(o kadm.OffsetResponse) { out[o.Topic] = o.At })
	return out
}

// OffsetCommit needs READ on the group, then on each topic; OffsetFetch DESCRIBE on the
// group, then on each topic, leaving out undescribable topics when it fetches everything.
func TestOffsetsNeedGroupAndTopicACLs(t *testing.T) {
	addr, _, table, cl := startDenyTableBroker(t)
	createTopic(t, addr, "t", 1, 3)
	createTopic(t, addr, "secret", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if codes := commitOne(t, ctx, cl, "g", 1, "t", "secret"); codes["t"] != 0 || codes["secret"] != 0 {
		t.Fatalf("setup commit: %v", codes)
	}

	table.deny(opRead, rtGroup, "g")
	if codes := commitOne(t, ctx, cl, "g", 2, "t", "secret"); codes["t"] != kerr.GroupAuthorizationFailed.Code || codes["secret"] != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("commit without READ on the group: %v", codes)
	}
	table.allowAll()
	table.deny(opRead, rtTopic, "secret")
	if codes := commitOne(t, ctx, cl, "g", 2, "t", "secret", "nonexistent"); codes["t"] != 0 || codes["secret"] != kerr.TopicAuthorizationFailed.Code ||
		codes["nonexistent"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit without READ on one topic: %v", codes)
	}
	if codes := commitOne(t, ctx, cl, "g", 3, "secret"); codes["secret"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("commit to only a refused topic: %v", codes)
	}
	if got := committed(t, ctx, table, cl, "g"); got["t"] != 2 || got["secret"] != 1 {
		t.Fatalf("after refused commits the offsets are %v, want t=2 secret=1", got)
	}

	// Fetching, in the multi-group form (v8) and the single-group form (v7).
	old, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(kversion.V2_8_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	table.allowAll()
	table.deny(opDescribe, rtTopic, "secret")
	table.deny(opDescribe, rtGroup, "hidden")
	for name, c := range map[string]*kgo.Client{"v8": cl, "v7": old} {
		all := kmsg.NewPtrOffsetFetchRequest()
		all.Group = "g"
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "g"
		all.Groups = append(all.Groups, rg)
		resp, err := all.RequestWith(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		topics := resp.Topics
		if resp.Version >= 8 {
			topics = nil
			for _, gt := range resp.Groups[0].Topics {
				ft := kmsg.NewOffsetFetchResponseTopic()
				ft.Topic = gt.Topic
				topics = append(topics, ft)
			}
		}
		if len(topics) != 1 || topics[0].Topic != "t" {
			t.Fatalf("%s: fetching every offset shows %+v, want only t", name, topics)
		}

		named := kmsg.NewPtrOffsetFetchRequest()
		named.Group = "g"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "secret", []int32{0}
		named.Topics = append(named.Topics, rt)
		ng := kmsg.NewOffsetFetchRequestGroup()
		ng.Group = "g"
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "secret", []int32{0}
		ng.Topics = append(ng.Topics, gt)
		hg := kmsg.NewOffsetFetchRequestGroup()
		hg.Group = "hidden"
		named.Groups = append(named.Groups, ng, hg)
		// Straight to the broker: the client would ask for the hidden group's coordinator
		// first, and stop at the refusal.
		kresp, err := c.Broker(1).Request(ctx, named)
		if err != nil {
			t.Fatal(err)
		}
		resp = kresp.(*kmsg.OffsetFetchResponse)
		var code int16
		var offset int64
		if resp.Version >= 8 {
			p := resp.Groups[0].Topics[0].Partitions[0]
			code, offset = p.ErrorCode, p.Offset
			if resp.Groups[1].ErrorCode != kerr.GroupAuthorizationFailed.Code || len(resp.Groups[1].Topics) != 0 {
				t.Fatalf("%s: fetching a group the client may not describe: %+v", name, resp.Groups[1])
			}
		} else {
			p := resp.Topics[0].Partitions[0]
			code, offset = p.ErrorCode, p.Offset
		}
		if code != kerr.TopicAuthorizationFailed.Code || offset != -1 {
			t.Fatalf("%s: fetching a named topic the client may not describe: code %d offset %d", name, code, offset)
		}
	}
	hidden := kmsg.NewPtrOffsetFetchRequest()
	hidden.Group = "hidden"
	if resp, err := old.Broker(1).Request(ctx, hidden); err != nil || resp.(*kmsg.OffsetFetchResponse).ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("v7 fetch of a group the client may not describe: %+v %v", resp, err)
	}
}

// ListGroups shows only describable groups without DESCRIBE on the cluster;
// DescribeGroups, DeleteGroups and OffsetDelete check each group, and OffsetDelete READ
// on each topic.
func TestGroupAdminNeedsGroupACLs(t *testing.T) {
	addr, _, table, cl := startDenyTableBroker(t)
	createTopic(t, addr, "t", 1, 3)
	createTopic(t, addr, "secret", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, g := range []string{"a", "b", "keep"} {
		if codes := commitOne(t, ctx, cl, g, 1, "t", "secret"); codes["t"] != 0 {
			t.Fatalf("setup commit %s: %v", g, codes)
		}
	}
	adm := kadm.NewClient(cl)

	table.deny(opDescribe, rtGroup, "b")
	listed := func() []string {
		t.Helper()
		gs, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return gs.Groups()
	}
	if got := listed(); len(got) != 3 {
		t.Fatalf("with DESCRIBE on the cluster every group is listed, got %v", got)
	}
	table.deny(opDescribe, rtCluster, ClusterResourceName)
	if got := listed(); len(got) != 2 || got[0] != "a" || got[1] != "keep" {
		t.Fatalf("without DESCRIBE on the cluster, listed %v, want [a keep]", got)
	}

	table.deny(opDelete, rtGroup, "a")
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"a", "b"}, true
	dresp, err := dg.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := dresp.Groups[0]; g.ErrorCode != 0 || g.AuthorizedOperations != 1<<opRead|1<<opDescribe {
		t.Fatalf("describe a: %+v, want READ|DESCRIBE authorized", g)
	}
	if g := dresp.Groups[1]; g.ErrorCode != kerr.GroupAuthorizationFailed.Code || g.State != "" {
		t.Fatalf("describe b: %+v", g)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"a", "b", "keep"}
	table.allowAll()
	table.deny(opDelete, rtGroup, "a")
	table.deny(opDelete, rtGroup, "keep")
	delresp, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, g := range delresp.Groups {
		codes[g.Group] = g.ErrorCode
	}
	if codes["a"] != kerr.GroupAuthorizationFailed.Code || codes["keep"] != kerr.GroupAuthorizationFailed.Code || codes["b"] != 0 {
		t.Fatalf("delete groups: %v", codes)
	}
	if got := listed(); len(got) != 2 || got[0] != "a" || got[1] != "keep" {
		t.Fatalf("after deleting only b, listed %v", got)
	}

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "keep"
	for _, topic := range []string{"t", "secret"} {
		ot := kmsg.NewOffsetDeleteRequestTopic()
		ot.Topic = topic
		ot.Partitions = append(ot.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
		od.Topics = append(od.Topics, ot)
	}
	odresp, err := od.RequestWith(ctx, cl)
	if err != nil || odresp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("offset delete without DELETE on the group: %+v %v", odresp, err)
	}
	if got := committed(t, ctx, table, cl, "keep"); len(got) != 2 {
		t.Fatalf("a refused offset delete removed offsets: %v", got)
	}
	table.allowAll()
	table.deny(opRead, rtTopic, "secret")
	odresp, err = od.RequestWith(ctx, cl)
	if err != nil || odresp.ErrorCode != 0 {
		t.Fatalf("offset delete: %+v %v", odresp, err)
	}
	for _, rt := range odresp.Topics {
		want := int16(0)
		if rt.Topic == "secret" {
			want = kerr.TopicAuthorizationFailed.Code
		}
		if rt.Partitions[0].ErrorCode != want {
			t.Fatalf("offset delete of %s: code %d, want %d", rt.Topic, rt.Partitions[0].ErrorCode, want)
		}
	}
	if got := committed(t, ctx, table, cl, "keep"); len(got) != 1 || got["secret"] != 1 {
		t.Fatalf("after deleting t's offset, keep has %v, want only secret", got)
	}
}
