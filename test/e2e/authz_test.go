package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/security"
)

// ACL enforcement on real processes. Every Kafka client here is User:ANONYMOUS on a
// PLAINTEXT listener. The tests change ACLs and read partitions through the admin API as
// the super user User:admin (HTTP basic credentials of a SCRAM user), so that they can
// grant and revoke while their Kafka clients are refused, whether or not the admin API is
// itself authorized by the ACLs.

const (
	anonymous = "User:ANONYMOUS"
	// adminUser is the one super user (super.users) of these tests; no Kafka client
	// authenticates as it.
	adminUser, adminPassword = "admin", "authz-e2e-admin"
	// authzProbeTopic carries a DENY DESCRIBE for User:ANONYMOUS in every test, so that a
	// named Metadata request for it tells whether a broker enforces ACLs yet: refused
	// when it does, UNKNOWN_TOPIC_OR_PARTITION when it does not (the topic never exists).
	authzProbeTopic = "authz-probe"
)

// anonACL is an ACL for User:ANONYMOUS from any host.
func anonACL(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) security.ACL {
	return security.ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: anonymous, Host: "*", Operation: op, Permission: perm}
}

// allowTopic is ALLOW op on the literal topic name for User:ANONYMOUS.
func allowTopic(name string, op kmsg.ACLOperation) security.ACL {
	return anonACL(kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypeLiteral, op, kmsg.ACLPermissionTypeAllow)
}

// allowGroup is ALLOW op on the literal group name for User:ANONYMOUS.
func allowGroup(name string, op kmsg.ACLOperation) security.ACL {
	return anonACL(kmsg.ACLResourceTypeGroup, name, kmsg.ACLResourcePatternTypeLiteral, op, kmsg.ACLPermissionTypeAllow)
}

// allowClusterAlterConfigs lets User:ANONYMOUS change cluster properties, so that a test
// can turn authorization off again; it grants DESCRIBE_CONFIGS besides, nothing else.
func allowClusterAlterConfigs() security.ACL {
	return anonACL(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAlterConfigs, kmsg.ACLPermissionTypeAllow)
}

func denyProbe() security.ACL {
	return anonACL(kmsg.ACLResourceTypeTopic, authzProbeTopic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeDeny)
}

// startAuthzBrokers starts n brokers (a cluster when n > 1) and creates the SCRAM user
// adminUser, known to every broker before it returns, for adminAs.
func startAuthzBrokers(t *testing.T, n int) []*Broker {
	t.Helper()
	var bs []*Broker
	if n == 1 {
		bs = []*Broker{startBroker(t, BrokerOpts{})}
	} else {
		bs = startCluster(t, n)
	}
	res, err := bs[0].Admin(t).AlterUserSCRAMs(ctxFor(t, 15*time.Second), nil,
		[]kadm.UpsertSCRAM{{User: adminUser, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: adminPassword}})
	if err != nil || res[adminUser].Err != nil {
		t.Fatalf("creating SCRAM user %s: %v %+v", adminUser, err, res)
	}
	for _, b := range bs {
		waitFor(t, 20*time.Second, func() bool {
			code, body := adminAs(t, b, http.MethodGet, "/v1/security/users", nil)
			return code == http.StatusOK && bytes.Contains(body, []byte(`"name":"`+adminUser+`"`))
		})
	}
	return bs
}

// adminAs sends b an admin API request with adminUser's basic credentials and returns the
// status and body.
func adminAs(t *testing.T, b *Broker, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t, 30*time.Second), method, "http://"+b.AdminAddr+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(adminUser, adminPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// partitionAs is b's admin view of a partition, read as adminUser (ok false: no replica
// there, or no answer).
func partitionAs(t *testing.T, b *Broker, topic string, p int32) (st PartitionStatus, ok bool) {
	t.Helper()
	code, body := adminAs(t, b, http.MethodGet, fmt.Sprintf("/v1/partitions/%s/%d", topic, p), nil)
	if code != http.StatusOK {
		return st, false
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("/v1/partitions/%s/%d: %v: %s", topic, p, err, body)
	}
	return st, true
}

// logEndAs is b's log end offset of a partition it holds, read as adminUser.
func logEndAs(t *testing.T, b *Broker, topic string, p int32) int64 {
	t.Helper()
	st, ok := partitionAs(t, b, topic, p)
	if !ok {
		t.Fatalf("broker %d has no replica of %s/%d to read", b.ID, topic, p)
	}
	return st.LogEnd
}

// postACLs creates acls through b's admin API and waits until every broker of bs serves
// all of them from its own copy of the controller's state, so that the next request to
// any broker is decided with them.
func postACLs(t *testing.T, bs []*Broker, via *Broker, acls ...security.ACL) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"acls": acls})
	if err != nil {
		t.Fatal(err)
	}
	if code, got := adminAs(t, via, http.MethodPost, "/v1/security/acls", body); code != http.StatusOK {
		t.Fatalf("POST /v1/security/acls %s: HTTP %d: %s", body, code, got)
	}
	for _, b := range bs {
		for _, a := range acls {
			waitFor(t, 20*time.Second, func() bool { return servesACL(t, b, a) })
		}
	}
}

// servesACL reports whether b's admin API lists a (its own view of the ACLs).
func servesACL(t *testing.T, b *Broker, a security.ACL) bool {
	t.Helper()
	code, body := adminAs(t, b, http.MethodGet, "/v1/security/acls", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/security/acls: HTTP %d: %s", code, body)
	}
	var have []security.ACL
	if err := json.Unmarshal(body, &have); err != nil {
		t.Fatalf("GET /v1/security/acls: %v: %s", err, body)
	}
	return slices.Contains(have, a)
}

// enableAuthz turns authorization on through bs[0], with only User:admin (whom no client
// here is) as super user, and waits until every broker enforces it. allowIfNone sets
// allow.everyone.if.no.acl.found. The probe's DENY ACL must be in place (postACLs).
func enableAuthz(t *testing.T, bs []*Broker, allowIfNone bool) {
	t.Helper()
	setCluster(t, bs[0].Admin(t), "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users", "User:"+adminUser, "allow.everyone.if.no.acl.found", fmt.Sprint(allowIfNone))
	for _, b := range bs {
		waitFor(t, 20*time.Second, func() bool { return probeCode(t, b) == kerr.TopicAuthorizationFailed.Code })
	}
}

// disableAuthz turns authorization off (User:ANONYMOUS needs ALTER_CONFIGS on the
// cluster for it) and waits until no broker enforces it.
func disableAuthz(t *testing.T, bs []*Broker) {
	t.Helper()
	setCluster(t, bs[0].Admin(t), "authorizer.class.name", "")
	for _, b := range bs {
		waitFor(t, 20*time.Second, func() bool { return probeCode(t, b) == kerr.UnknownTopicOrPartition.Code })
	}
}

// probeCode is b's answer to a named Metadata request for the probe topic.
func probeCode(t *testing.T, b *Broker) int16 {
	t.Helper()
	return metadataCodes(t, b, authzProbeTopic)[authzProbeTopic]
}

// metadataCodes sends b a Metadata request naming topics, without auto-creation, and
// returns each topic's error code. (kadm's Metadata turns a topic's authorization error
// into an error for the whole request.)
func metadataCodes(t *testing.T, b *Broker, topics ...string) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	req.AllowAutoTopicCreation = false
	for _, topic := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, mt)
	}
	rc := dialRaw(t, b.KafkaAddr)
	defer rc.c.Close() // probes run in waitFor loops: do not hold a connection each until the test ends
	resp, err := rc.roundTrip(req)
	if err != nil {
		t.Fatalf("Metadata for %q: %v", topics, err)
	}
	out := map[string]int16{}
	for _, mt := range resp.(*kmsg.MetadataResponse).Topics {
		if mt.Topic != nil {
			out[*mt.Topic] = mt.ErrorCode
		}
	}
	if len(out) != len(topics) {
		t.Fatalf("Metadata for %q answered %v", topics, out)
	}
	return out
}

// deleteACLs removes what the admin API filter query matches, through via, and waits until
// no broker of bs serves any of gone.
func deleteACLs(t *testing.T, bs []*Broker, via *Broker, query string, gone ...security.ACL) {
	t.Helper()
	if code, body := adminAs(t, via, http.MethodDelete, "/v1/security/acls?"+query, nil); code != http.StatusOK {
		t.Fatalf("DELETE /v1/security/acls?%s: HTTP %d: %s", query, code, body)
	}
	for _, b := range bs {
		for _, a := range gone {
			waitFor(t, 20*time.Second, func() bool { return !servesACL(t, b, a) })
		}
	}
}

// rawProduceTopics sends b one acks=-1 Produce request writing batches[topic] to
// partition 0 of each topic and returns each topic's error code.
func rawProduceTopics(t *testing.T, b *Broker, batches map[string][]byte) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = produceVersion, -1, 15000
	for topic, batch := range batches {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	rc := dialRaw(t, b.KafkaAddr)
	defer rc.c.Close()
	resp, err := rc.roundTrip(req)
	if err != nil {
		t.Fatalf("Produce to %d topics: %v", len(batches), err)
	}
	out := map[string]int16{}
	for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
		for _, rp := range rt.Partitions {
			out[rt.Topic] = rp.ErrorCode
		}
	}
	return out
}

// produceErr produces one record to topic with cl and returns the produce's error.
func produceErr(t *testing.T, cl *kgo.Client, topic, value string) error {
	t.Helper()
	return cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

// fetchErr consumes topic's partition 0 from the start, without a group, until a record or
// an error arrives, and returns the error (nil: a record was read).
func fetchErr(t *testing.T, b *Broker, topic string) error {
	t.Helper()
	c := b.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(200*time.Millisecond))
	defer c.Close()
	return pollUntilRecordOrErr(t, c, topic)
}

// groupConsumeErr consumes topic in group until a record or an error arrives.
func groupConsumeErr(t *testing.T, b *Broker, group, topic string) error {
	t.Helper()
	c := b.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	defer c.Close()
	return pollUntilRecordOrErr(t, c, topic)
}

func pollUntilRecordOrErr(t *testing.T, c *kgo.Client, topic string) error {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	for {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: neither a record nor an error within 30s", topic)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return errs[0].Err
		}
		if fs.NumRecords() > 0 {
			return nil
		}
	}
}

// listedTopics is the sorted names kadm ListTopics returns through b.
func listedTopics(t *testing.T, b *Broker) []string {
	t.Helper()
	tds, err := b.Admin(t).ListTopics(ctxFor(t, 15*time.Second))
	if err != nil {
		t.Fatalf("ListTopics through %s: %v", b.KafkaAddr, err)
	}
	names := tds.Names()
	sort.Strings(names)
	return names
}

func expectErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// TestAuthzForwardedProduce: on three brokers, a raw acks=-1 Produce sent to a follower
// of the partition, which forwards it to the leader, is refused with
// TOPIC_AUTHORIZATION_FAILED while User:ANONYMOUS may only DESCRIBE the topic, and no
// replica stores anything, nor of an acks=0 one; once a WRITE ACL for the client's
// address (127.0.0.1) reaches every broker, the same forwarded produce is acknowledged,
// every replica holds it, and a reader finds only its records.
func TestAuthzForwardedProduce(t *testing.T) {
	t.Parallel()
	bs := startAuthzBrokers(t, 3)
	adm := bs[0].Admin(t)
	const topic = "fwd"
	createReplicatedTopic(t, adm, topic, 1, 3)
	waitFor(t, 30*time.Second, func() bool { return allInSync(bs, topic, 1, 3) })
	produceSync(t, clusterClient(t, bs, kgo.RequiredAcks(kgo.AllISRAcks())), topic, "before", 3)
	leader := leaderOf(t, bs, topic, 0)
	follower := bs[(leader+1)%3]

	postACLs(t, bs, bs[1], denyProbe(), allowTopic(topic, kmsg.ACLOperationDescribe))
	enableAuthz(t, bs, false)
	before := endOffsets(t, adm, topic)[0] // DESCRIBE is enough for ListOffsets
	if before != 3 {
		t.Fatalf("end offset %d before the denied produce, want 3", before)
	}

	// acks=0 has no answer to carry the refusal: the follower must drop it. The
	// ApiVersions answer on the same connection shows the produce was handled; the
	// partition's contents, checked at the end, show it stored nothing.
	rc := dialRaw(t, follower.KafkaAddr)
	if _, err := rc.send(produceRequest(produceVersion, 0, topic, 0, simpleBatch("denied-acks0", 5))); err != nil {
		t.Fatal(err)
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 0
	if _, err := rc.roundTrip(av); err != nil {
		t.Fatalf("ApiVersions after a refused acks=0 produce on the same connection: %v", err)
	}
	p := rawProduce(t, follower, -1, topic, 0, simpleBatch("denied", 5))
	expectProduceError(t, p, kerr.TopicAuthorizationFailed.Code, "forwarded produce without WRITE")
	if got := endOffsets(t, adm, topic)[0]; got != before {
		t.Errorf("end offset %d after the denied produce, want %d", got, before)
	}
	for i, b := range bs {
		if end := logEndAs(t, b, topic, 0); end != before {
			t.Errorf("broker %d: log end %d after the denied produce, want %d", i+1, end, before)
		}
	}

	// WRITE only from the client's own address: the leader re-checks the forwarded produce
	// with the host the follower passes on, which must be the client's, not "unknown".
	write := allowTopic(topic, kmsg.ACLOperationWrite)
	write.Host = "127.0.0.1"
	postACLs(t, bs, bs[2], write, allowTopic(topic, kmsg.ACLOperationRead))
	p = rawProduce(t, follower, -1, topic, 0, simpleBatch("allowed", 5))
	expectProduceError(t, p, 0, "forwarded produce with WRITE")
	if p.ErrorCode == 0 && p.BaseOffset != before {
		t.Errorf("forwarded produce appended at %d, want %d", p.BaseOffset, before)
	}
	if st, _ := partitionAs(t, follower, topic, 0); st.IsLeader {
		t.Fatalf("leadership moved to the broker chosen as follower: the produces may not have been forwarded")
	}
	if t.Failed() {
		return
	}
	waitFor(t, 20*time.Second, func() bool {
		for _, b := range bs {
			if st, ok := partitionAs(t, b, topic, 0); !ok || st.LogEnd != before+5 {
				return false
			}
		}
		return true
	})
	var values []string
	for _, r := range consumeAll(t, bs[leader], topic, 1, 8) {
		values = append(values, string(r.Value))
	}
	want := []string{"before-0", "before-1", "before-2", "allowed-0", "allowed-1", "allowed-2", "allowed-3", "allowed-4"}
	if !slices.Equal(values, want) {
		t.Errorf("the partition holds %q, want %q", values, want)
	}
}

// TestAuthzRules: Kafka's ACL rules on three brokers, each asked in turn.
//   - A prefixed WRITE on "orders-" lets a producer write orders-eu, not payments.
//   - READ alone on a topic lets Metadata name it (READ implies DESCRIBE), and kadm
//     ListTopics through every broker lists exactly the topics User:ANONYMOUS may describe.
//   - A consumer group without READ on the group (with DESCRIBE only, or no ACL) is
//     refused GROUP_AUTHORIZATION_FAILED, and consumes once READ on the group is granted.
//   - One Produce request for a writable and an unwritable topic writes the first only.
//   - ALLOW ALL on "*" with a DENY READ on one topic: consuming that topic is refused
//     TOPIC_AUTHORIZATION_FAILED (still listed: a DENY READ leaves DESCRIBE), others read.
//     Once ALLOW ALL is deleted, every broker refuses the others again.
//   - ACLs stored while authorization is off change nothing; turned off again after it
//     was on, everything refused before works.
func TestAuthzRules(t *testing.T) {
	t.Parallel()
	bs := startAuthzBrokers(t, 3)
	adm := bs[0].Admin(t)
	for _, topic := range []string{"orders-eu", "payments", "audit", "secret"} {
		createReplicatedTopic(t, adm, topic, 1, 3)
	}
	seed := clusterClient(t, bs)
	for _, topic := range []string{"payments", "audit", "secret"} {
		produceSync(t, seed, topic, "seed", 2)
	}

	postACLs(t, bs, bs[0], denyProbe(), allowClusterAlterConfigs(),
		anonACL(kmsg.ACLResourceTypeTopic, "orders-", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow),
		allowTopic("audit", kmsg.ACLOperationRead))
	paymentsLeader := bs[leaderOf(t, bs, "payments", 0)]
	prod := clusterClient(t, bs, kgo.DisableIdempotentWrite(), kgo.RecordRetries(3))
	// Stored ACLs change nothing while authorization is off.
	if err := produceErr(t, prod, "payments", "p0"); err != nil {
		t.Errorf("producing to payments with ACLs stored but authorization off: %v", err)
	}
	enableAuthz(t, bs, false)

	if err := produceErr(t, prod, "orders-eu", "o1"); err != nil {
		t.Errorf("producing to orders-eu with WRITE on prefix orders-: %v", err)
	}
	expectErr(t, "producing to payments with WRITE only on prefix orders-", produceErr(t, prod, "payments", "p1"), kerr.TopicAuthorizationFailed)

	// One request, two topics: the writable one is written, the other refused alone.
	paymentsEnd := logEndAs(t, paymentsLeader, "payments", 0)
	codes := rawProduceTopics(t, bs[0], map[string][]byte{"orders-eu": simpleBatch("mixed", 2), "payments": simpleBatch("mixed", 2)})
	if codes["orders-eu"] != 0 || codes["payments"] != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("Produce to orders-eu and payments: %s and %s, want NONE and TOPIC_AUTHORIZATION_FAILED",
			kerrName(codes["orders-eu"]), kerrName(codes["payments"]))
	}
	if got := logEndAs(t, paymentsLeader, "payments", 0); got != paymentsEnd {
		t.Errorf("payments log end %d after its refused part of a produce, want %d", got, paymentsEnd)
	}

	for i, b := range bs {
		codes := metadataCodes(t, b, "audit", "payments", "no-such-topic")
		if codes["audit"] != 0 {
			t.Errorf("broker %d: Metadata for audit with READ on it: %s, want it described", i+1, kerrName(codes["audit"]))
		}
		for _, topic := range []string{"payments", "no-such-topic"} {
			if codes[topic] != kerr.TopicAuthorizationFailed.Code {
				t.Errorf("broker %d: Metadata for %s without any ACL on it: %s, want TOPIC_AUTHORIZATION_FAILED", i+1, topic, kerrName(codes[topic]))
			}
		}
	}
	for i, b := range bs {
		if got, want := listedTopics(t, b), []string{"audit", "orders-eu"}; !slices.Equal(got, want) {
			t.Errorf("ListTopics through broker %d: %q, want only the describable %q", i+1, got, want)
		}
	}

	// DESCRIBE on g1 lets FindCoordinator through; joining needs READ.
	postACLs(t, bs, bs[0], allowGroup("g1", kmsg.ACLOperationDescribe))
	expectErr(t, "group g1 consuming audit with only DESCRIBE on g1", groupConsumeErr(t, bs[1], "g1", "audit"), kerr.GroupAuthorizationFailed)
	expectErr(t, "group g0 consuming audit without any ACL on g0", groupConsumeErr(t, bs[1], "g0", "audit"), kerr.GroupAuthorizationFailed)
	postACLs(t, bs, bs[0], allowGroup("g1", kmsg.ACLOperationRead))
	if err := groupConsumeErr(t, bs[1], "g1", "audit"); err != nil {
		t.Errorf("group g1 consuming audit with READ on g1 and on audit: %v", err)
	}

	postACLs(t, bs, bs[0],
		anonACL(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow),
		anonACL(kmsg.ACLResourceTypeTopic, "secret", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeDeny))
	expectErr(t, "consuming secret with ALLOW ALL on * and DENY READ on secret", fetchErr(t, bs[2], "secret"), kerr.TopicAuthorizationFailed)
	if err := fetchErr(t, bs[2], "payments"); err != nil {
		t.Errorf("consuming payments with ALLOW ALL on *: %v", err)
	}
	// A fresh producer: franz-go keeps failing a topic whose Metadata was refused until its
	// next metadata refresh (5 minutes), as a Kafka broker's client would.
	prod = clusterClient(t, bs, kgo.DisableIdempotentWrite(), kgo.RecordRetries(3))
	if err := produceErr(t, prod, "payments", "p2"); err != nil {
		t.Errorf("producing to payments with ALLOW ALL on *: %v", err)
	}
	for i, b := range bs {
		if got, want := listedTopics(t, b), []string{"audit", "orders-eu", "payments", "secret"}; !slices.Equal(got, want) {
			t.Errorf("ListTopics through broker %d with ALLOW ALL on *: %q, want %q", i+1, got, want)
		}
	}

	// Deleting an ACL takes effect on every broker: without ALLOW ALL on *, payments is
	// refused again (its Metadata first).
	deleteACLs(t, bs, bs[1], "resource_type=topic&resource_name=*&permission=allow",
		anonACL(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow))
	for i, b := range bs {
		expectErr(t, fmt.Sprintf("consuming payments through broker %d once ALLOW ALL on * is deleted", i+1), fetchErr(t, b, "payments"), kerr.TopicAuthorizationFailed)
	}

	disableAuthz(t, bs)
	if err := fetchErr(t, bs[0], "secret"); err != nil {
		t.Errorf("consuming secret with authorization off: %v", err)
	}
	if err := groupConsumeErr(t, bs[0], "g2", "secret"); err != nil {
		t.Errorf("group g2 consuming secret with authorization off: %v", err)
	}
	if err := produceErr(t, prod, "secret", "s1"); err != nil {
		t.Errorf("producing to secret with authorization off: %v", err)
	}
}

// TestAuthzIdempotentProducer: franz-go's default, idempotent, producer needs
// InitProducerId, which KIP-679 allows with WRITE on any topic. With only READ on a topic
// it is refused CLUSTER_AUTHORIZATION_FAILED (a non-idempotent producer gets
// TOPIC_AUTHORIZATION_FAILED from the produce itself); with a prefixed WRITE ACL on
// orders- it writes orders-eu, and still may not write the topic it may only read.
// A transactional producer is refused TRANSACTIONAL_ID_AUTHORIZATION_FAILED. Producing to
// a topic that does not exist auto-creates it only with CREATE as well.
func TestAuthzIdempotentProducer(t *testing.T) {
	t.Parallel()
	bs := startAuthzBrokers(t, 1)
	b := bs[0]
	adm := b.Admin(t)
	createTopic(t, adm, "orders-eu", 1, nil)
	createTopic(t, adm, "payments", 1, nil)
	postACLs(t, bs, b, denyProbe(), allowTopic("payments", kmsg.ACLOperationRead))
	enableAuthz(t, bs, false)

	idem := b.Client(t, kgo.RecordRetries(3))
	expectErr(t, "idempotent producer without WRITE on any topic", produceErr(t, idem, "payments", "p1"), kerr.ClusterAuthorizationFailed)
	plain := b.Client(t, kgo.DisableIdempotentWrite(), kgo.RecordRetries(3))
	expectErr(t, "non-idempotent producer without WRITE on payments", produceErr(t, plain, "payments", "p1"), kerr.TopicAuthorizationFailed)

	postACLs(t, bs, b, anonACL(kmsg.ACLResourceTypeTopic, "orders-", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow))
	idem2 := b.Client(t, kgo.RecordRetries(3))
	if err := produceErr(t, idem2, "orders-eu", "o1"); err != nil {
		t.Errorf("idempotent producer with WRITE on prefix orders-: %v", err)
	}
	expectErr(t, "idempotent producer writing payments, which it may only read", produceErr(t, idem2, "payments", "p2"), kerr.TopicAuthorizationFailed)
	if got := endOffsets(t, adm, "payments")[0]; got != 0 {
		t.Errorf("payments end offset %d after only refused produces, want 0", got)
	}

	// A transactional id needs WRITE on it, which nothing grants here.
	tx := b.Client(t, kgo.TransactionalID("tx-1"), kgo.RecordRetries(3))
	err := tx.BeginTransaction()
	if err == nil {
		err = produceErr(t, tx, "orders-eu", "t1")
	}
	expectErr(t, "transactional producer without WRITE on its transactional id", err, kerr.TransactionalIDAuthorizationFailed)

	// Auto-creation by Metadata needs CREATE besides: WRITE on orders- makes orders-us
	// describable, not creatable.
	auto := b.Client(t, kgo.AllowAutoTopicCreation(), kgo.RecordRetries(3))
	expectErr(t, "auto-creating orders-us without CREATE", produceErr(t, auto, "orders-us", "u1"), kerr.TopicAuthorizationFailed)
	if code := metadataCodes(t, b, "orders-us")["orders-us"]; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("Metadata for orders-us after a refused auto-creation: %s, want UNKNOWN_TOPIC_OR_PARTITION (not created)", kerrName(code))
	}
	postACLs(t, bs, b, anonACL(kmsg.ACLResourceTypeTopic, "orders-", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationCreate, kmsg.ACLPermissionTypeAllow))
	auto = b.Client(t, kgo.AllowAutoTopicCreation(), kgo.RecordRetries(3))
	if err := produceErr(t, auto, "orders-us", "u2"); err != nil {
		t.Errorf("auto-creating orders-us with CREATE on prefix orders-: %v", err)
	}
}

// TestAuthzAllowEveryoneAndSuperUsers: with allow.everyone.if.no.acl.found=true a topic,
// group and cluster that no ACL names are open to everyone (an idempotent producer
// included), while a topic that an ACL names for someone else is refused to
// User:ANONYMOUS. Once super.users lists User:ANONYMOUS, it may do anything, even what a
// DENY ACL forbids.
func TestAuthzAllowEveryoneAndSuperUsers(t *testing.T) {
	t.Parallel()
	bs := startAuthzBrokers(t, 1)
	b := bs[0]
	adm := b.Admin(t)
	createTopic(t, adm, "open", 1, nil)
	createTopic(t, adm, "claimed", 1, nil)
	alice := allowTopic("claimed", kmsg.ACLOperationAll)
	alice.Principal = "User:alice"
	postACLs(t, bs, b, denyProbe(), alice)
	enableAuthz(t, bs, true)

	idem := b.Client(t, kgo.RecordRetries(3))
	if err := produceErr(t, idem, "open", "o1"); err != nil {
		t.Errorf("idempotent producer writing open, which no ACL names: %v", err)
	}
	if err := groupConsumeErr(t, b, "any-group", "open"); err != nil {
		t.Errorf("group consuming open, neither of which any ACL names: %v", err)
	}
	expectErr(t, "producing to claimed, which an ACL names for User:alice only", produceErr(t, idem, "claimed", "c1"), kerr.TopicAuthorizationFailed)
	if got, want := listedTopics(t, b), []string{"open"}; !slices.Equal(got, want) {
		t.Errorf("ListTopics: %q, want %q", got, want)
	}

	postACLs(t, bs, b, anonACL(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAll, kmsg.ACLPermissionTypeDeny))
	expectErr(t, "producing to open with DENY ALL on every topic", produceErr(t, idem, "open", "o2"), kerr.TopicAuthorizationFailed)
	// No ACL names the cluster: ALTER_CONFIGS on it is still open to everyone.
	setCluster(t, adm, "super.users", "User:"+adminUser+";"+anonymous)
	waitFor(t, 20*time.Second, func() bool { return probeCode(t, b) == kerr.UnknownTopicOrPartition.Code })
	super := b.Client(t, kgo.RecordRetries(3))
	for _, topic := range []string{"open", "claimed"} {
		if err := produceErr(t, super, topic, "s1"); err != nil {
			t.Errorf("super user producing to %s despite DENY ALL: %v", topic, err)
		}
		if err := fetchErr(t, b, topic); err != nil {
			t.Errorf("super user consuming %s despite DENY ALL: %v", topic, err)
		}
	}
}

// TestAuthzRevokedWhileConsuming: ACLs are decided per request, not per connection. A
// consumer reading a topic over an established connection is refused
// TOPIC_AUTHORIZATION_FAILED once its READ ACL is deleted, and the same consumer reads
// again, from where it was, once READ is granted back.
func TestAuthzRevokedWhileConsuming(t *testing.T) {
	t.Parallel()
	bs := startAuthzBrokers(t, 1)
	b := bs[0]
	const topic = "live"
	createTopic(t, b.Admin(t), topic, 1, nil)
	read := allowTopic(topic, kmsg.ACLOperationRead)
	postACLs(t, bs, b, denyProbe(), read, allowTopic(topic, kmsg.ACLOperationWrite))
	enableAuthz(t, bs, false)

	prod := b.Client(t)
	produceSync(t, prod, topic, "first", 1)
	c := b.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(200*time.Millisecond))
	if err := pollUntilRecordOrErr(t, c, topic); err != nil {
		t.Fatalf("consuming %s with READ: %v", topic, err)
	}

	deleteACLs(t, bs, b, "resource_type=topic&resource_name="+topic+"&operation=read", read)
	expectErr(t, "the same consumer once READ is deleted", pollUntilRecordOrErr(t, c, topic), kerr.TopicAuthorizationFailed)

	postACLs(t, bs, b, read)
	produceSync(t, prod, topic, "second", 1)
	ctx := ctxFor(t, 30*time.Second)
	for {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the consumer did not read %s again within 30s of READ granted back", topic)
		}
		// Refusals of fetches sent before the grant reached the broker may still come.
		var values []string
		for _, r := range fs.Records() {
			values = append(values, string(r.Value))
		}
		if len(values) > 0 {
			if values[0] != "second-0" {
				t.Errorf("after READ granted back the consumer read %q, want it to resume at second-0", values)
			}
			return
		}
	}
}
