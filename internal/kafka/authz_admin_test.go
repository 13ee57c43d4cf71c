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

	"github.com/cairn-io/cairn/internal/security"
)

func adminCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createTopics sends one CreateTopics for the names (one partition, one replica each) and
// returns each topic's answer.
func createTopics(t *testing.T, ctx context.Context, cl *kgo.Client, names ...string) map[string]kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	for _, n := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, 1, 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kmsg.CreateTopicsResponseTopic{}
	for _, rt := range resp.Topics {
		out[rt.Topic] = rt
	}
	return out
}

// CreateTopics needs CREATE on the cluster or on the topic; the configs it reports need
// DESCRIBE_CONFIGS. DeleteTopics needs DELETE, and hides topics the principal cannot
// describe; CreatePartitions needs ALTER on the topic. A refusal changes nothing.
func TestTopicAdminNeedsTopicACLs(t *testing.T) {
	_, b, table, cl := startDenyTableBroker(t)
	ctx := adminCtx(t)

	table.deny(opCreate, rtCluster, ClusterResourceName)
	table.deny(opCreate, rtTopic, "no")
	table.deny(opDescribeConfigs, rtTopic, "quiet")
	got := createTopics(t, ctx, cl, "no", "yes", "quiet")
	if r := got["no"]; r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("create without CREATE: %+v", r)
	}
	if _, ok := b.Topic("no"); ok {
		t.Fatal("a refused create made the topic")
	}
	if r := got["yes"]; r.ErrorCode != 0 || r.ConfigErrorCode != 0 || len(r.Configs) == 0 {
		t.Fatalf("create with CREATE on the topic: %+v", r)
	}
	if r := got["quiet"]; r.ErrorCode != 0 || r.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code || len(r.Configs) != 0 {
		t.Fatalf("create without DESCRIBE_CONFIGS shows configs: %+v", r)
	}
	table.allowAll()
	table.deny(opCreate, rtTopic, "no")
	if r := createTopics(t, ctx, cl, "no")["no"]; r.ErrorCode != 0 {
		t.Fatalf("CREATE on the cluster covers every topic: %+v", r)
	}

	for _, n := range []string{"d-hidden", "d-kept", "d-gone"} {
		if r := createTopics(t, ctx, cl, n)[n]; r.ErrorCode != 0 {
			t.Fatalf("setup %s: %+v", n, r)
		}
	}
	hiddenInfo, _ := b.Topic("d-hidden")
	keptInfo, _ := b.Topic("d-kept")
	table.allowAll()
	table.deny(opDelete, rtCluster, ClusterResourceName)
	table.deny(opDescribe, rtTopic, "d-hidden")
	table.deny(opDelete, rtTopic, "d-hidden")
	table.deny(opDelete, rtTopic, "d-kept")
	table.deny(opDescribe, rtTopic, "never-made")
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis = 10000
	for _, n := range []string{"d-hidden", "d-kept", "d-gone", "never-made", "missing"} {
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(n)
		del.Topics = append(del.Topics, dt)
	}
	for _, id := range [][16]byte{hiddenInfo.ID, keptInfo.ID} {
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.TopicID = id
		del.Topics = append(del.Topics, dt)
	}
	dresp, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int16{}
	byID := map[[16]byte]kmsg.DeleteTopicsResponseTopic{}
	for _, rt := range dresp.Topics {
		// Answers by name carry no id when refused; d-gone's carries its own.
		if rt.TopicID == hiddenInfo.ID || rt.TopicID == keptInfo.ID {
			byID[rt.TopicID] = rt
		} else {
			byName[*rt.Topic] = rt.ErrorCode
		}
	}
	want := map[string]int16{
		"d-hidden":   kerr.TopicAuthorizationFailed.Code,
		"d-kept":     kerr.TopicAuthorizationFailed.Code,
		"d-gone":     0,
		"never-made": kerr.TopicAuthorizationFailed.Code, // not UNKNOWN_TOPIC: its absence is not told
		"missing":    kerr.UnknownTopicOrPartition.Code,
	}
	for n, code := range want {
		if c, ok := byName[n]; !ok || c != code {
			t.Fatalf("delete %s by name: code %d (answered %v), want %d; all %+v", n, c, ok, code, dresp.Topics)
		}
	}
	if r := byID[hiddenInfo.ID]; r.ErrorCode != kerr.TopicAuthorizationFailed.Code || r.Topic != nil {
		t.Fatalf("delete by id of an undescribable topic must not name it: %+v", r)
	}
	if r := byID[keptInfo.ID]; r.ErrorCode != kerr.TopicAuthorizationFailed.Code || r.Topic == nil || *r.Topic != "d-kept" {
		t.Fatalf("delete by id without DELETE: %+v", r)
	}
	for _, n := range []string{"d-hidden", "d-kept"} {
		if _, ok := b.Topic(n); !ok {
			t.Fatalf("refused delete removed %s", n)
		}
	}
	if _, ok := b.Topic("d-gone"); ok {
		t.Fatal("the allowed delete left d-gone")
	}

	table.deny(opAlter, rtTopic, "yes")
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 10000
	for _, n := range []string{"yes", "quiet"} {
		ct := kmsg.NewCreatePartitionsRequestTopic()
		ct.Topic, ct.Count = n, 3
		cp.Topics = append(cp.Topics, ct)
	}
	cpresp, err := cp.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range cpresp.Topics {
		want := int16(0)
		if rt.Topic == "yes" {
			want = kerr.TopicAuthorizationFailed.Code
		}
		if rt.ErrorCode != want {
			t.Fatalf("create partitions of %s: %+v, want code %d", rt.Topic, rt, want)
		}
	}
	if info, _ := b.Topic("yes"); info.Partitions != 1 {
		t.Fatalf("refused CreatePartitions grew yes to %d", info.Partitions)
	}
	if info, _ := b.Topic("quiet"); info.Partitions != 3 {
		t.Fatalf("allowed CreatePartitions left quiet at %d", info.Partitions)
	}
}

// DescribeConfigs needs DESCRIBE_CONFIGS and the two AlterConfigs ALTER_CONFIGS, on the
// topic or, for a broker, on the cluster; a refused alter changes nothing.
func TestConfigsNeedConfigACLs(t *testing.T) {
	_, b, table, cl := startDenyTableBroker(t)
	ctx := adminCtx(t)
	for _, n := range []string{"c", "open"} {
		if r := createTopics(t, ctx, cl, n)[n]; r.ErrorCode != 0 {
			t.Fatalf("setup %s: %+v", n, r)
		}
	}
	table.deny(opDescribeConfigs, rtTopic, "c")
	table.deny(opDescribeConfigs, rtTopic, "missing")
	table.deny(opDescribeConfigs, rtCluster, ClusterResourceName)
	dc := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		rt   kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "c"}, {kmsg.ConfigResourceTypeTopic, "missing"}, {kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeTopic, "open"}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.rt, r.name
		dc.Resources = append(dc.Resources, rr)
	}
	// Straight to the broker: the client sends each broker resource to that broker.
	kresp, err := cl.Broker(1).Request(ctx, dc)
	if err != nil {
		t.Fatal(err)
	}
	dresp := kresp.(*kmsg.DescribeConfigsResponse)
	want := []int16{kerr.TopicAuthorizationFailed.Code, kerr.TopicAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code, 0}
	for i, r := range dresp.Resources {
		if r.ErrorCode != want[i] || (want[i] != 0) != (len(r.Configs) == 0) {
			t.Fatalf("describe configs of %s: code %d with %d configs, want code %d", r.ResourceName, r.ErrorCode, len(r.Configs), want[i])
		}
	}

	table.deny(opAlterConfigs, rtTopic, "c")
	table.deny(opAlterConfigs, rtCluster, ClusterResourceName)
	ac := kmsg.NewPtrAlterConfigsRequest()
	iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, r := range []struct {
		rt   kmsg.ConfigResourceType
		name string
		key  string
	}{{kmsg.ConfigResourceTypeTopic, "c", "retention.ms"}, {kmsg.ConfigResourceTypeBroker, "", "log.retention.ms"}, {kmsg.ConfigResourceTypeTopic, "open", "retention.ms"}} {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.rt, r.name
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = r.key, kmsg.StringPtr("3600000")
		rr.Configs = append(rr.Configs, c)
		ac.Resources = append(ac.Resources, rr)
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = r.rt, r.name
		ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		ic.Name, ic.Value = r.key, kmsg.StringPtr("7200000")
		ir.Configs = append(ir.Configs, ic)
		iac.Resources = append(iac.Resources, ir)
	}
	want = []int16{kerr.TopicAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code, 0}
	aresp, err := ac.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range aresp.Resources {
		if r.ErrorCode != want[i] {
			t.Fatalf("alter configs of %q: code %d, want %d", r.ResourceName, r.ErrorCode, want[i])
		}
	}
	iresp, err := iac.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range iresp.Resources {
		if r.ErrorCode != want[i] {
			t.Fatalf("incremental alter configs of %q: code %d, want %d", r.ResourceName, r.ErrorCode, want[i])
		}
	}
	if ov, _, _ := b.TopicConfigOverrides("c"); len(ov) != 0 {
		t.Fatalf("refused alters changed c: %v", ov)
	}
	if _, ok := b.ClusterConfigOverrides()["log.retention.ms"]; ok {
		t.Fatal("refused alters changed the cluster's config")
	}
	if ov, _, _ := b.TopicConfigOverrides("open"); ov["retention.ms"] != "7200000" {
		t.Fatalf("allowed alters left open at %v", ov)
	}
}

// ElectLeaders and AlterPartitionReassignments need ALTER on the cluster,
// ListPartitionReassignments and DescribeUserScramCredentials DESCRIBE, and
// AlterUserScramCredentials ALTER.
func TestClusterAdminNeedsClusterACLs(t *testing.T) {
	_, b, table, cl := startDenyTableBroker(t)
	ctx := adminCtx(t)
	if r := createTopics(t, ctx, cl, "t")["t"]; r.ErrorCode != 0 {
		t.Fatalf("setup: %+v", r)
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "old", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "pw"}}); err != nil {
		t.Fatal(err)
	}
	table.deny(opAlter, rtCluster, ClusterResourceName)
	table.deny(opDescribe, rtCluster, ClusterResourceName)

	el := kmsg.NewPtrElectLeadersRequest()
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = "t", []int32{0}
	el.Topics = append(el.Topics, et)
	eresp, err := cl.Broker(1).Request(ctx, el)
	if err != nil {
		t.Fatal(err)
	}
	if r := eresp.(*kmsg.ElectLeadersResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code || r.Topics[0].Partitions[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("elect leaders: %+v", r)
	}
	el.Topics = nil
	eresp, err = cl.Broker(1).Request(ctx, el)
	if r := eresp.(*kmsg.ElectLeadersResponse); err != nil || r.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(r.Topics) != 0 {
		t.Fatalf("elect every leader lists topics to a refused principal: %+v %v", r, err)
	}

	before, _ := b.PartitionAssignment("t", 0)
	ap := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = "t"
	apart := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	apart.Replicas = []int32{1}
	at.Partitions = append(at.Partitions, apart)
	ap.Topics = append(ap.Topics, at)
	apresp, err := ap.RequestWith(ctx, cl)
	if err != nil || apresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || apresp.Topics[0].Partitions[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alter partition assignments: %+v %v", apresp, err)
	}
	if after, _ := b.PartitionAssignment("t", 0); len(after) != len(before) || len(b.PartitionReassignments(nil)) != 0 {
		t.Fatalf("a refused reassignment changed t-0: %v -> %v", before, after)
	}
	lp := kmsg.NewPtrListPartitionReassignmentsRequest()
	if lpresp, err := lp.RequestWith(ctx, cl); err != nil || lpresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("list partition reassignments: %+v %v", lpresp, err)
	}

	ds := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	du := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
	du.Name = "old"
	ds.Users = append(ds.Users, du)
	dsresp, err := ds.RequestWith(ctx, cl)
	if err != nil || dsresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(dsresp.Results) != 1 || len(dsresp.Results[0].CredentialInfos) != 0 {
		t.Fatalf("describe SCRAM users: %+v %v", dsresp, err)
	}
	// kadm reports the first user's error as the request's.
	_, err = adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "new", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "pw"}})
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("kadm alter SCRAM users: %v", err)
	}
	as := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	ad := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	ad.Name, ad.Mechanism = "old", 1
	as.Deletions = append(as.Deletions, ad)
	au := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	au.Name, au.Mechanism, au.Iterations, au.Salt, au.SaltedPassword = "new", 1, 4096, []byte("salt"), make([]byte, 32)
	as.Upsertions = append(as.Upsertions, au)
	asresp, err := cl.Broker(1).Request(ctx, as)
	if err != nil {
		t.Fatal(err)
	}
	if rs := asresp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results; len(rs) != 2 || rs[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code || rs[1].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alter SCRAM users: %+v", rs)
	}
	if _, ok := b.ScramCredential("new", security.ScramSHA256); ok {
		t.Fatal("a refused upsert stored a credential")
	}
	if _, ok := b.ScramCredential("old", security.ScramSHA256); !ok {
		t.Fatal("a refused deletion removed a credential")
	}

	// Granted, the same requests work.
	table.allowAll()
	if lpresp, err := lp.RequestWith(ctx, cl); err != nil || lpresp.ErrorCode != 0 {
		t.Fatalf("list partition reassignments, allowed: %+v %v", lpresp, err)
	}
	if dsresp, err := ds.RequestWith(ctx, cl); err != nil || dsresp.ErrorCode != 0 || len(dsresp.Results[0].CredentialInfos) != 1 {
		t.Fatalf("describe SCRAM users, allowed: %+v %v", dsresp, err)
	}
}
