package kafka

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/security"
)

// startAuthzBroker is startBroker with the server's authorizer a table, given the topics
// (one partition each, no records) before any check is denied.
func startAuthzBroker(t *testing.T, topics ...string) (*kgo.Client, *broker.Broker, *tableAuthorizer) {
	t.Helper()
	cl, b, _, a := startAuthzServer(t, topics...)
	return cl, b, a
}

func startAuthzServer(t *testing.T, topics ...string) (*kgo.Client, *broker.Broker, *Server, *tableAuthorizer) {
	t.Helper()
	s, b, addr := serveTestBroker(t, nil, nil)
	for _, topic := range topics {
		createTopic(t, addr, topic, 1, 0)
	}
	a := newTableAuthorizer()
	s.SetAuthorizer(a)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, b, s, a
}

func topicCheck(op kmsg.ACLOperation, topic string) aclCheck {
	return aclCheck{op, kmsg.ACLResourceTypeTopic, topic}
}

func clusterCheck(op kmsg.ACLOperation) aclCheck {
	return aclCheck{op, kmsg.ACLResourceTypeCluster, ClusterResourceName}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produceRaw sends one acks=-1 Produce of n records to partition 0 of each topic, and
// returns each topic's error code.
func produceRaw(t *testing.T, cl *kgo.Client, n int, topics ...string) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	for _, topic := range topics {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = kafkatest.Plain(n, 1000).Bytes()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testCtx(t), direct(cl))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes[rt.Topic] = rp.ErrorCode
		}
	}
	return codes
}

// listOffsets returns, per topic, partition 0's error code and latest offset.
func listOffsets(t *testing.T, cl *kgo.Client, timestamp int64, topics ...string) map[string][2]int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for _, topic := range topics {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = timestamp, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testCtx(t), direct(cl))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[rt.Topic] = [2]int64{int64(rp.ErrorCode), rp.Offset}
		}
	}
	return out
}

// A produce naming a topic the principal may not write gets TOPIC_AUTHORIZATION_FAILED
// for it and stores nothing there, while the allowed topic in the same request is
// written; a denied topic that does not exist is not revealed as unknown.
func TestProduceDeniedWriteStoresNothing(t *testing.T) {
	cl, _, a := startAuthzBroker(t, "open", "closed")
	a.denyAll(topicCheck(kmsg.ACLOperationWrite, "closed"), topicCheck(kmsg.ACLOperationWrite, "ghost"))

	codes := produceRaw(t, cl, 3, "open", "closed", "ghost")
	if codes["open"] != 0 || codes["closed"] != kerr.TopicAuthorizationFailed.Code || codes["ghost"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce codes %v, want open 0, closed and ghost %d", codes, kerr.TopicAuthorizationFailed.Code)
	}
	got := listOffsets(t, cl, -1, "open", "closed")
	if got["open"] != [2]int64{0, 3} || got["closed"] != [2]int64{0, 0} {
		t.Fatalf("end offsets %v, want open at 3 and closed at 0", got)
	}
	// The check is made for the connection's principal and address.
	asked, ok := a.wasAsked(topicCheck(kmsg.ACLOperationWrite, "closed"))
	if !ok || asked.principal != security.Anonymous || asked.host != "127.0.0.1" {
		t.Fatalf("authorizer asked %+v (%v), want User:ANONYMOUS from 127.0.0.1", asked, ok)
	}
}

func fetchRaw(t *testing.T, cl *kgo.Client, maxWait int32, topics ...string) map[string]kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, maxWait, 1, 1<<20
	for _, topic := range topics {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testCtx(t), direct(cl))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kmsg.FetchResponseTopicPartition{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[rt.Topic] = rp
		}
	}
	return out
}

// A consumer without READ on a topic gets TOPIC_AUTHORIZATION_FAILED and no records for
// it, next to the records of a topic it may read; the internal offsets topic follows the
// same rule; and a fetch of nothing but denied topics is answered at once, not after the
// long poll.
func TestFetchDeniedRead(t *testing.T) {
	cl, _, a := startAuthzBroker(t, "open", "closed")
	if codes := produceRaw(t, cl, 2, "open", "closed"); codes["open"] != 0 || codes["closed"] != 0 {
		t.Fatalf("produce codes %v", codes)
	}
	a.denyAll(topicCheck(kmsg.ACLOperationRead, "closed"), topicCheck(kmsg.ACLOperationRead, "__consumer_offsets"))

	got := fetchRaw(t, cl, 100, "open", "closed")
	if got["open"].ErrorCode != 0 || len(got["open"].RecordBatches) == 0 {
		t.Fatalf("open: code %d with %d bytes, want its records", got["open"].ErrorCode, len(got["open"].RecordBatches))
	}
	if got["closed"].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(got["closed"].RecordBatches) != 0 {
		t.Fatalf("closed: code %d with %d bytes, want TOPIC_AUTHORIZATION_FAILED and nothing", got["closed"].ErrorCode, len(got["closed"].RecordBatches))
	}
	// The max wait is longer than testCtx: a fetch that waited it out would fail.
	got = fetchRaw(t, cl, 60_000, "closed", "__consumer_offsets")
	if got["closed"].ErrorCode != kerr.TopicAuthorizationFailed.Code || got["__consumer_offsets"].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("denied-only fetch: %+v", got)
	}
}

// ListOffsets and OffsetForLeaderEpoch need DESCRIBE on the topic; DeleteRecords needs
// DELETE, and a denied one cuts nothing.
func TestOffsetsAPIsNeedDescribeAndDelete(t *testing.T) {
	cl, _, a := startAuthzBroker(t, "open", "closed")
	if codes := produceRaw(t, cl, 4, "open", "closed"); codes["open"] != 0 || codes["closed"] != 0 {
		t.Fatalf("produce codes %v", codes)
	}
	a.denyAll(topicCheck(kmsg.ACLOperationDescribe, "closed"), topicCheck(kmsg.ACLOperationDelete, "open"))

	got := listOffsets(t, cl, -1, "open", "closed")
	if got["open"] != [2]int64{0, 4} || got["closed"][0] != int64(kerr.TopicAuthorizationFailed.Code) || got["closed"][1] != -1 {
		t.Fatalf("list offsets %v", got)
	}

	ofe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofe.ReplicaID = -1
	for _, topic := range []string{"open", "closed"} {
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
		rt.Partitions = append(rt.Partitions, rp)
		ofe.Topics = append(ofe.Topics, rt)
	}
	ofeResp, err := ofe.RequestWith(testCtx(t), direct(cl))
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range ofeResp.Topics {
		want := int16(0)
		if rt.Topic == "closed" {
			want = kerr.TopicAuthorizationFailed.Code
		}
		if rt.Partitions[0].ErrorCode != want {
			t.Errorf("OffsetForLeaderEpoch %s: code %d, want %d", rt.Topic, rt.Partitions[0].ErrorCode, want)
		}
	}

	del := kmsg.NewPtrDeleteRecordsRequest()
	del.TimeoutMillis = 10_000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "open"
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Offset = 2
	rt.Partitions = append(rt.Partitions, rp)
	del.Topics = append(del.Topics, rt)
	delResp, err := del.RequestWith(testCtx(t), direct(cl))
	if err != nil {
		t.Fatal(err)
	}
	if code := delResp.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("DeleteRecords code %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	if start := listOffsets(t, cl, -2, "open")["open"]; start != [2]int64{0, 0} {
		t.Fatalf("log start after a denied DeleteRecords: %v, want 0", start)
	}
}

// direct sends a request to the one broker as it stands: kgo would otherwise split it by
// the metadata it has, which the ACLs under test hide.
func direct(cl *kgo.Client) *kgo.Broker { return cl.SeedBrokers()[0] }

func metadataRaw(t *testing.T, cl *kgo.Client, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	t.Helper()
	resp, err := req.RequestWith(testCtx(t), direct(cl))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func metadataFor(t *testing.T, cl *kgo.Client, autoCreate bool, topics ...string) map[string]kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = autoCreate
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	out := map[string]kmsg.MetadataResponseTopic{}
	for _, mt := range metadataRaw(t, cl, req).Topics {
		out[*mt.Topic] = mt
	}
	return out
}

// Metadata lists only the topics the principal may describe; a named topic it may not
// describe gets TOPIC_AUTHORIZATION_FAILED whether or not it exists; auto-creation needs
// CREATE on the cluster or on the topic, and a denied one creates nothing.
func TestMetadataFiltersAndGuardsAutoCreation(t *testing.T) {
	cl, b, a := startAuthzBroker(t, "open", "closed")
	a.denyAll(topicCheck(kmsg.ACLOperationDescribe, "closed"), topicCheck(kmsg.ACLOperationDescribe, "hidden-new"),
		clusterCheck(kmsg.ACLOperationCreate), topicCheck(kmsg.ACLOperationCreate, "uncreatable"))

	listed := map[string]bool{}
	for _, mt := range metadataRaw(t, cl, kmsg.NewPtrMetadataRequest()).Topics {
		listed[*mt.Topic] = true
	}
	if !listed["open"] || listed["closed"] {
		t.Fatalf("all-topics metadata lists %v, want open and not closed", listed)
	}

	got := metadataFor(t, cl, true, "open", "closed", "hidden-new", "uncreatable", "creatable")
	for topic, want := range map[string]int16{
		"open": 0, "closed": kerr.TopicAuthorizationFailed.Code, "hidden-new": kerr.TopicAuthorizationFailed.Code,
		"uncreatable": kerr.TopicAuthorizationFailed.Code, "creatable": 0,
	} {
		if got[topic].ErrorCode != want {
			t.Errorf("%s: code %d, want %d", topic, got[topic].ErrorCode, want)
		}
	}
	if len(got["closed"].Partitions) != 0 {
		t.Errorf("a denied topic's partitions were described: %+v", got["closed"].Partitions)
	}
	for topic, want := range map[string]bool{"hidden-new": false, "uncreatable": false, "creatable": true} {
		if _, exists := b.Topic(topic); exists != want {
			t.Errorf("topic %s exists %v after auto-creation, want %v", topic, exists, want)
		}
	}
}

// Authorized-operations bits are filled in only when asked, with Kafka's marker otherwise;
// the cluster's are zero when the principal may not describe the cluster.
func TestAuthorizedOperationsInMetadataAndDescribeCluster(t *testing.T) {
	cl, _, a := startAuthzBroker(t, "open")
	a.denyAll(topicCheck(kmsg.ACLOperationAlter, "open"), clusterCheck(kmsg.ACLOperationIdempotentWrite))
	bits := func(ops []kmsg.ACLOperation, except kmsg.ACLOperation) int32 {
		var v int32
		for _, op := range ops {
			if op != except {
				v |= 1 << uint(op)
			}
		}
		return v
	}

	// v11 dropped the cluster's bits from Metadata (DescribeCluster has them): ask as Kafka
	// 2.7 would, with v10.
	cl27, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...), kgo.MaxVersions(kversion.V2_7_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl27.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("open")
	req.Topics = append(req.Topics, rt)
	plain := metadataRaw(t, cl27, req)
	if plain.AuthorizedOperations != unrequestedAuthorizedOperations || plain.Topics[0].AuthorizedOperations != unrequestedAuthorizedOperations {
		t.Fatalf("not asked: cluster %d topic %d, want %d", plain.AuthorizedOperations, plain.Topics[0].AuthorizedOperations, int32(unrequestedAuthorizedOperations))
	}
	req.IncludeClusterAuthorizedOperations, req.IncludeTopicAuthorizedOperations = true, true
	asked := metadataRaw(t, cl27, req)
	if want := bits(topicOperations, kmsg.ACLOperationAlter); asked.Topics[0].AuthorizedOperations != want {
		t.Errorf("topic ops %b, want %b", asked.Topics[0].AuthorizedOperations, want)
	}
	if want := bits(clusterOperations, kmsg.ACLOperationIdempotentWrite); asked.AuthorizedOperations != want {
		t.Errorf("metadata cluster ops %b, want %b", asked.AuthorizedOperations, want)
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.EndpointType = 1
	dcResp, err := dc.RequestWith(testCtx(t), direct(cl))
	if err != nil || dcResp.ClusterAuthorizedOperations != unrequestedAuthorizedOperations {
		t.Fatalf("DescribeCluster not asked: %v %d", err, dcResp.ClusterAuthorizedOperations)
	}
	dc.IncludeClusterAuthorizedOperations = true
	if dcResp, err = dc.RequestWith(testCtx(t), direct(cl)); err != nil || dcResp.ClusterAuthorizedOperations != bits(clusterOperations, kmsg.ACLOperationIdempotentWrite) {
		t.Fatalf("DescribeCluster asked: %v %b", err, dcResp.ClusterAuthorizedOperations)
	}
	a.denyAll(clusterCheck(kmsg.ACLOperationDescribe))
	if dcResp, err = dc.RequestWith(testCtx(t), direct(cl)); err != nil || dcResp.ClusterAuthorizedOperations != 0 {
		t.Fatalf("DescribeCluster without DESCRIBE on the cluster: %v %b, want 0", err, dcResp.ClusterAuthorizedOperations)
	}
}

func initProducerID(t *testing.T, cl *kgo.Client, txnID *string) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = txnID, 60_000, -1, -1
	resp, err := req.RequestWith(testCtx(t), direct(cl))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// An idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
// (KIP-679); a transactional one WRITE on its transactional id, checked before the refusal
// of transactions.
func TestInitProducerIDAuthorization(t *testing.T) {
	cl, _, a := startAuthzBroker(t, "open", "closed")
	a.denyAll(clusterCheck(kmsg.ACLOperationIdempotentWrite), topicCheck(kmsg.ACLOperationWrite, "closed"))
	if resp := initProducerID(t, cl, nil); resp.ErrorCode != 0 || resp.ProducerID < 0 {
		t.Fatalf("with WRITE on a topic: code %d id %d, want an id", resp.ErrorCode, resp.ProducerID)
	}
	a.denyAll(topicCheck(kmsg.ACLOperationWrite, "open"))
	if resp := initProducerID(t, cl, nil); resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || resp.ProducerID != -1 {
		t.Fatalf("with neither: code %d id %d, want CLUSTER_AUTHORIZATION_FAILED", resp.ErrorCode, resp.ProducerID)
	}

	a.denyAll(aclCheck{kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "tx-1"})
	if resp := initProducerID(t, cl, kmsg.StringPtr("tx-1")); resp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional: code %d", resp.ErrorCode)
	}
	if _, ok := a.wasAsked(aclCheck{kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, "tx-1"}); !ok {
		t.Fatal("WRITE on the transactional id was never checked")
	}
}

// resourceTypeTable also answers "WRITE on any topic" itself, as the broker's ACL store can
// for prefixed ACLs of topics that do not exist yet.
type resourceTypeTable struct {
	*tableAuthorizer
	anyTopicWrite atomic.Bool
}

func (r *resourceTypeTable) AuthorizeByResourceType(_ security.Principal, _ string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	return op == kmsg.ACLOperationWrite && rt == kmsg.ACLResourceTypeTopic && r.anyTopicWrite.Load()
}

func TestInitProducerIDAsksByResourceType(t *testing.T) {
	cl, _, s, table := startAuthzServer(t) // no topics: only the resource-type answer can allow it
	table.denyAll(clusterCheck(kmsg.ACLOperationIdempotentWrite))
	rta := &resourceTypeTable{tableAuthorizer: table}
	s.SetAuthorizer(rta)
	if resp := initProducerID(t, cl, nil); resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("without any WRITE: code %d", resp.ErrorCode)
	}
	rta.anyTopicWrite.Store(true)
	if resp := initProducerID(t, cl, nil); resp.ErrorCode != 0 {
		t.Fatalf("with WRITE on some topic: code %d", resp.ErrorCode)
	}
}

// What franz-go's own producer and consumer report: the produce to a topic without WRITE
// fails with TOPIC_AUTHORIZATION_FAILED (not retried as if transient) while the one to an
// allowed topic is stored, and a consumer of a topic without READ is told so.
func TestFranzGoSeesAuthorizationErrors(t *testing.T) {
	cl, _, a := startAuthzBroker(t, "open", "closed")
	seeds := cl.OptValue(kgo.SeedBrokers).([]string)
	if codes := produceRaw(t, cl, 2, "closed"); codes["closed"] != 0 { // records the consumer must not see
		t.Fatalf("produce codes %v", codes)
	}
	a.denyAll(topicCheck(kmsg.ACLOperationWrite, "closed"), topicCheck(kmsg.ACLOperationRead, "closed"))

	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	res := prod.ProduceSync(testCtx(t), &kgo.Record{Topic: "open", Value: []byte("a")}, &kgo.Record{Topic: "closed", Value: []byte("b")})
	for _, r := range res {
		want := error(nil)
		if r.Record.Topic == "closed" {
			want = kerr.TopicAuthorizationFailed
		}
		if r.Err != want {
			t.Errorf("produce to %s: %v, want %v", r.Record.Topic, r.Err, want)
		}
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("closed"), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx := testCtx(t)
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("the consumer was never told it may not read the topic")
		}
		var denied bool
		fs.EachError(func(topic string, _ int32, err error) {
			if topic == "closed" && err == kerr.TopicAuthorizationFailed {
				denied = true
			}
		})
		if fs.NumRecords() > 0 {
			t.Fatalf("read %d records of a topic without READ", fs.NumRecords())
		}
		if denied {
			return
		}
	}
}
