package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/test/harness"
)

var saslSSLListener = []harness.Listener{{Name: "SASL_SSL", Protocol: "SASL_SSL"}}

// roundTripEveryClient has each of the five clients produce to a topic of its own (3
// partitions, one replica per broker) through the listener whose addresses are seeds,
// configured by sec, and consume it back (in a consumer group where the client makes that
// easy), and checks that each read exactly what it wrote.
func roundTripEveryClient(t *testing.T, bs []*Broker, seeds []string, sec clientSecurity, prefix string) {
	t.Helper()
	adm := bs[0].Admin(t)
	rf := int16(len(bs))
	topic := func(client string) string {
		name := prefix + "-" + client
		createReplicatedTopic(t, adm, name, 3, rf)
		return name
	}

	t.Run("kcat", func(t *testing.T) {
		kcat := requireKcat(t)
		name := topic("kcat")
		want := kcatLines(prefix, 90)
		r := run(t, 60*time.Second, strings.Join(want, "\n")+"\n", kcat,
			append([]string{"-P", "-b", strings.Join(seeds, ","), "-t", name, "-K", ":", "-X", "acks=all"}, sec.kcatArgs()...)...)
		if r.Err != nil || strings.Contains(r.Stderr, "ERROR") {
			t.Fatalf("kcat -P: %s", r)
		}
		r = run(t, 60*time.Second, "", kcat, append([]string{"-C", "-b", strings.Join(seeds, ","), "-t", name, "-o", "beginning", "-e",
			"-c", strconv.Itoa(len(want)), "-f", `%k:%s\n`}, sec.kcatArgs()...)...)
		got := lines(r.Stdout)
		slices.Sort(got)
		slices.Sort(want)
		if r.Err != nil || !slices.Equal(got, want) {
			t.Fatalf("kcat -C read %d lines, wrote %d: %s", len(got), len(want), r)
		}
		if n := sumEnds(t, adm, name); n != int64(len(want)) {
			t.Fatalf("the partitions of %s hold %d records, kcat wrote %d", name, n, len(want))
		}
	})

	t.Run("franz-go", func(t *testing.T) {
		name := topic("franz")
		cl := sec.kgoClient(t, seeds)
		var wrote []ackedRecord
		for i := range 90 {
			r := &kgo.Record{Topic: name, Key: []byte(fmt.Sprintf("k-%d", i)), Value: []byte(fmt.Sprintf("v-%d", i))}
			if err := cl.ProduceSync(ctxFor(t, 30*time.Second), r).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
			wrote = append(wrote, ackedRecord{r.Partition, r.Offset, string(r.Key), string(r.Value)})
		}
		group := name + "-group"
		cons := sec.kgoClient(t, seeds, kgo.ConsumeTopics(name), kgo.ConsumerGroup(group),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		var read []ackedRecord
		ctx := ctxFor(t, 60*time.Second)
		for len(read) < len(wrote) && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				read = append(read, ackedRecord{r.Partition, r.Offset, string(r.Key), string(r.Value)})
			})
		}
		checkReadBack(t, "franz-go group consumer", wrote, read)
		if err := cons.CommitUncommittedOffsets(ctxFor(t, 30*time.Second)); err != nil {
			t.Fatalf("commit: %v", err)
		}
		if got, want := committedOffsets(t, adm, group, name), endOffsets(t, adm, name); !sameOffsets(got, want) {
			t.Fatalf("group %s committed %v, want the end offsets %v", group, got, want)
		}
	})

	t.Run("sarama", func(t *testing.T) {
		name := topic("sarama")
		cfg := sec.saramaConfigFor(t)
		prod, err := sarama.NewSyncProducer(seeds, cfg)
		if err != nil {
			t.Fatalf("sarama.NewSyncProducer: %v", err)
		}
		defer prod.Close()
		var wrote []ackedRecord
		for i := range 90 {
			key, val := fmt.Sprintf("k-%d", i), fmt.Sprintf("v-%d", i)
			p, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: name, Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(val)})
			if err != nil {
				t.Fatalf("SendMessage %d: %v", i, err)
			}
			wrote = append(wrote, ackedRecord{p, off, key, val})
		}
		cons, err := sarama.NewConsumer(seeds, cfg)
		if err != nil {
			t.Fatalf("sarama.NewConsumer: %v", err)
		}
		defer cons.Close()
		perPart := map[int32]int{}
		for _, w := range wrote {
			perPart[w.Partition]++
		}
		var read []ackedRecord
		for p := range int32(3) {
			pc, err := cons.ConsumePartition(name, p, sarama.OffsetOldest)
			if err != nil {
				t.Fatalf("ConsumePartition(%d): %v", p, err)
			}
			deadline := time.After(30 * time.Second)
			for n := 0; n < perPart[p]; n++ {
				select {
				case m := <-pc.Messages():
					read = append(read, ackedRecord{m.Partition, m.Offset, string(m.Key), string(m.Value)})
				case e := <-pc.Errors():
					t.Fatalf("partition consumer %d: %v", p, e)
				case <-deadline:
					t.Fatalf("partition %d: read %d of %d within 30s", p, n, perPart[p])
				}
			}
			pc.Close()
		}
		checkReadBack(t, "sarama", wrote, read)
	})

	for _, py := range []struct{ lib, module string }{{"confluent", "confluent_kafka"}, {"kafka-python", "kafka"}} {
		t.Run(py.lib, func(t *testing.T) {
			requirePython(t, py.module)
			name := topic(py.lib)
			var prod pyProduceResult
			r := runPython(t, 90*time.Second, &prod, "secure_client.py", py.lib, "produce", sec.pyJSON(t), strings.Join(seeds, ","), name, "90")
			if r.Err != nil {
				t.Fatalf("%s produce: %s", py.lib, r)
			}
			wrote := checkPyDelivered(t, prod, 90)
			group := name + "-group"
			var cons pyConsumeResult
			r = runPython(t, 90*time.Second, &cons, "secure_client.py", py.lib, "group", sec.pyJSON(t), strings.Join(seeds, ","), name, group, "90", "60")
			if r.Err != nil {
				t.Fatalf("%s group consumer: %s", py.lib, r)
			}
			checkReadBack(t, py.lib+" group consumer", wrote, pyAcked(cons.Records))
			if got, want := committedOffsets(t, adm, group, name), endOffsets(t, adm, name); !sameOffsets(got, want) {
				t.Fatalf("group %s committed %v, want the end offsets %v", group, got, want)
			}
		})
	}
}

// sumEnds is how many records the partitions of topic hold (their end offsets, summed).
func sumEnds(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	var n int64
	for _, o := range endOffsets(t, adm, topic) {
		n += o
	}
	return n
}

// TestClientsOverSASLSSL: on three brokers with a SASL_SSL listener, a SCRAM-SHA-512 user
// created with the CLI over PLAINTEXT is known to every broker, and kcat, franz-go,
// sarama, confluent-kafka-python and kafka-python each produce through it and consume
// back exactly what they wrote; the group consumers commit through coordinators found
// over SASL_SSL.
func TestClientsOverSASLSSL(t *testing.T) {
	t.Parallel()
	m := newTLSMaterial(t)
	bs := startSecureCluster(t, 3, saslSSLListener, m.files(""))
	r := run(t, 30*time.Second, "alice-pw\n", cairnBin, "security", "user", "create", "alice",
		"--mechanism", "SCRAM-SHA-512", "--password-stdin", "-b", bs[0].KafkaAddr)
	if r.Err != nil {
		t.Fatalf("cairn security user create: %s", r)
	}
	waitUserEverywhere(t, bs, "alice")
	sec := clientSecurity{Protocol: "SASL_SSL", Mechanism: "SCRAM-SHA-512", User: "alice", Password: "alice-pw", CA: m.ca.CertFile}
	roundTripEveryClient(t, bs, listenerAddrs(bs, "SASL_SSL"), sec, "sasl-ssl")
}

// enableAuthorization turns the authorizer on with User:ANONYMOUS (the test's PLAINTEXT
// administration) the only super user and no access where no ACL applies.
func enableAuthorization(t *testing.T, adm *kadm.Client) {
	t.Helper()
	setCluster(t, adm, "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users", "User:ANONYMOUS", "allow.everyone.if.no.acl.found", "false")
}

// createACLs creates b's ACLs and fails the test on any refusal.
func createACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctxFor(t, 30*time.Second), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("CreateAcls %s %s: %v %s", r.Name, r.Operation, r.Err, r.ErrMessage)
		}
	}
}

// TestClientsOverMutualTLS: with ssl.client.auth=required, a mapping rule that makes
// CN=Writer,O=Acme the principal User:writer, and authorization on, an ACL for
// User:writer lets each of the five clients, presenting that certificate, produce and
// consume; a client with the certificate of CN=Other,O=Acme (User:other, which may read
// but not write) is refused TOPIC_AUTHORIZATION_FAILED and nothing of it is stored.
func TestClientsOverMutualTLS(t *testing.T) {
	t.Parallel()
	m := newTLSMaterial(t)
	files := m.files("required")
	files.PrincipalRules = `RULE:^CN=([^,]*),O=Acme(,.*)?$/$1/L,DEFAULT`
	b := startBroker(t, BrokerOpts{Listeners: sslListener, TLS: files})
	adm := b.Admin(t)
	enableAuthorization(t, adm)
	createACLs(t, adm, kadm.NewACLs().Topics("mtls-").Groups("mtls-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:writer").Operations(kadm.OpAll))
	createACLs(t, adm, kadm.NewACLs().Topics("mtls-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:other").Operations(kadm.OpRead))

	ssl := []string{b.ListenerAddrs["SSL"]}
	base := clientSecurity{Protocol: "SSL", CA: m.ca.CertFile}
	writer := base.withCert(issueClientCert(t, m, "Writer", "Acme"))
	other := base.withCert(issueClientCert(t, m, "Other", "Acme"))
	waitDenied(t, other.kgoClient(t, ssl))
	roundTripEveryClient(t, []*Broker{b}, ssl, writer, "mtls")

	const topic = "mtls-guarded"
	createTopic(t, adm, topic, 1, nil)
	cl := other.kgoClient(t, ssl, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
	err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte("refused")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("franz-go as User:other: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	r := run(t, 60*time.Second, "refused\n", requireKcat(t), append([]string{"-P", "-b", ssl[0], "-t", topic}, other.kcatArgs()...)...)
	if !strings.Contains(r.Stderr, "Topic authorization failed") {
		t.Fatalf("kcat as User:other: want \"Topic authorization failed\": %s", r)
	}
	if n := sumEnds(t, adm, topic); n != 0 {
		t.Fatalf("%s holds %d records after User:other's refused produces", topic, n)
	}
	if err := writer.kgoClient(t, ssl).ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("franz-go as User:writer: %v", err)
	}
	if n := sumEnds(t, adm, topic); n != 1 {
		t.Fatalf("%s holds %d records after User:writer's produce, want 1", topic, n)
	}
}

// authFailures is the broker's cairn_kafka_authentication_failures_total.
func authFailures(t *testing.T, b *Broker) float64 {
	t.Helper()
	v, _ := b.Metric(t, "cairn_kafka_authentication_failures_total", "")
	return v
}

// dialErr is the error a franz-go client of sec gets for its first request, which needs
// a connection and so an authentication.
func dialErr(t *testing.T, sec clientSecurity, seeds []string) error {
	t.Helper()
	cl := sec.kgoClient(t, seeds, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	return err
}

// saramaDialErr is the error a sarama Broker of sec gets for its first request to addr
// (nil once served). A Broker, not a Client: the Client drops the broker's error for
// every refusal but a failed authentication and reports only that it ran out of brokers.
func saramaDialErr(t *testing.T, sec clientSecurity, addr string) error {
	t.Helper()
	b := sarama.NewBroker(addr)
	if err := b.Open(sec.saramaConfigFor(t)); err != nil {
		return err
	}
	defer b.Close()
	_, err := b.GetMetadata(&sarama.MetadataRequest{Version: 1})
	return err
}

// pyProbe runs secure_client.py's probe (one produce) and returns the errors the client
// reported, joined.
func pyProbe(t *testing.T, lib string, sec clientSecurity, addr, topic string) string {
	t.Helper()
	var res pyProduceResult
	r := runPython(t, 60*time.Second, &res, "secure_client.py", lib, "probe", sec.pyJSON(t), addr, topic, "10")
	if r.Err != nil {
		t.Fatalf("%s probe: %s", lib, r)
	}
	if len(res.Delivered) != 0 {
		t.Fatalf("%s probe delivered %v, want a refusal", lib, res.Delivered)
	}
	return strings.Join(res.Errors, "\n")
}

// waitDenied waits until cl's principal is refused Metadata for a topic no ACL names:
// authorization, turned on by a cluster property, is in effect on the broker cl reaches.
func waitDenied(t *testing.T, cl *kgo.Client) {
	t.Helper()
	adm := kadm.NewClient(cl)
	waitFor(t, 20*time.Second, func() bool {
		// kadm turns the topic's error into the request's.
		_, err := adm.ListTopics(ctxFor(t, 10*time.Second), "no-acl-names-this")
		return errors.Is(err, kerr.TopicAuthorizationFailed)
	})
}

// TestSASLRefusals: what franz-go, sarama, kcat and confluent-kafka-python each report for
// a wrong password (SASL_AUTHENTICATION_FAILED, counted in
// cairn_kafka_authentication_failures_total) and for a mechanism the listener does not
// enable (UNSUPPORTED_SASL_MECHANISM, naming the enabled ones), and what franz-go, kcat
// and confluent-kafka-python report for a produce by an authenticated user without WRITE
// (TOPIC_AUTHORIZATION_FAILED, nothing stored). kafka-python sends SCRAM tokens without
// SaslAuthenticate, where a broker (Kafka too) can only close the connection on a wrong
// password: it reports no broker available, as the docs say.
func TestSASLRefusals(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	requirePython(t, "confluent_kafka")
	m := newTLSMaterial(t)
	b := startBroker(t, BrokerOpts{Listeners: saslSSLListener, TLS: m.files("")})
	plainOnly := startBroker(t, BrokerOpts{Listeners: saslSSLListener, TLS: m.files(""), Args: []string{"--sasl-enabled-mechanisms", "PLAIN"}})
	createSCRAMUser(t, []*Broker{b}, "alice", "SCRAM-SHA-512", "alice-pw")
	createSCRAMUser(t, []*Broker{plainOnly}, "alice", "SCRAM-SHA-512", "alice-pw")
	sec := clientSecurity{Protocol: "SASL_SSL", Mechanism: "SCRAM-SHA-512", User: "alice", Password: "alice-pw", CA: m.ca.CertFile}
	addr, plainAddr := b.ListenerAddrs["SASL_SSL"], plainOnly.ListenerAddrs["SASL_SSL"]

	t.Run("wrong-password", func(t *testing.T) {
		bad := sec.withUser("alice", "not-alice-pw")
		before := authFailures(t, b)
		if err := dialErr(t, bad, []string{addr}); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("franz-go with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		r := run(t, 30*time.Second, "", kcat, append([]string{"-L", "-b", addr, "-m", "5"}, bad.kcatArgs()...)...)
		if r.Err == nil || !strings.Contains(r.Stderr, "SASL authentication error: authentication failed: invalid username or password") {
			t.Fatalf("kcat with a wrong password: want exit non-zero and librdkafka's SASL authentication error: %s", r)
		}
		if got := pyProbe(t, "confluent", bad, addr, "t"); !strings.Contains(got, "_AUTHENTICATION: ") || !strings.Contains(got, "invalid username or password") {
			t.Fatalf("confluent-kafka with a wrong password reported:\n%s\nwant _AUTHENTICATION ... invalid username or password", got)
		}
		if err := saramaDialErr(t, bad, addr); !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
			t.Fatalf("sarama with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		if got := pyProbe(t, "kafka-python", bad, addr, "t"); !strings.Contains(got, "NoBrokersAvailable") {
			t.Fatalf("kafka-python with a wrong password reported:\n%s\nwant NoBrokersAvailable", got)
		}
		// One failure at least for each client (some retry, so maybe more).
		waitFor(t, 10*time.Second, func() bool { return authFailures(t, b) >= before+5 })
		if err := dialErr(t, sec, []string{addr}); err != nil {
			t.Fatalf("franz-go with the right password after the failures: %v", err)
		}
	})

	t.Run("unsupported-mechanism", func(t *testing.T) {
		if err := dialErr(t, sec, []string{plainAddr}); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
			t.Fatalf("franz-go asking SCRAM-SHA-512 where only PLAIN is enabled: %v, want UNSUPPORTED_SASL_MECHANISM", err)
		}
		const want = "Unsupported SASL mechanism: broker's supported mechanisms: PLAIN"
		r := run(t, 30*time.Second, "", kcat, append([]string{"-L", "-b", plainAddr, "-m", "5"}, sec.kcatArgs()...)...)
		if r.Err == nil || !strings.Contains(r.Stderr, want) {
			t.Fatalf("kcat asking SCRAM-SHA-512 where only PLAIN is enabled: want %q: %s", want, r)
		}
		if got := pyProbe(t, "confluent", sec, plainAddr, "t"); !strings.Contains(got, want) {
			t.Fatalf("confluent-kafka asking SCRAM-SHA-512 where only PLAIN is enabled reported:\n%s\nwant %q", got, want)
		}
		if err := saramaDialErr(t, sec, plainAddr); !errors.Is(err, sarama.ErrUnsupportedSASLMechanism) {
			t.Fatalf("sarama asking SCRAM-SHA-512 where only PLAIN is enabled: %v, want UNSUPPORTED_SASL_MECHANISM", err)
		}
		// The same user over PLAIN, checked against its SCRAM credential, is let in.
		if err := dialErr(t, sec.withMechanism("PLAIN"), []string{plainAddr}); err != nil {
			t.Fatalf("franz-go over PLAIN: %v", err)
		}
	})

	t.Run("no-write-acl", func(t *testing.T) {
		adm := b.Admin(t)
		const topic = "guarded"
		createTopic(t, adm, topic, 1, nil)
		enableAuthorization(t, adm)
		createACLs(t, adm, kadm.NewACLs().Topics(topic).Allow("User:alice").Operations(kadm.OpRead))
		cl := sec.kgoClient(t, []string{addr}, kgo.DisableIdempotentWrite())
		waitDenied(t, cl)
		err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte("franz")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("franz-go as alice, who may read %s but not write it: %v, want TOPIC_AUTHORIZATION_FAILED", topic, err)
		}
		r := run(t, 60*time.Second, "kcat\n", kcat, append([]string{"-P", "-b", addr, "-t", topic}, sec.kcatArgs()...)...)
		if !strings.Contains(r.Stderr, "Topic authorization failed") {
			t.Fatalf("kcat -P as alice: want \"Topic authorization failed\": %s", r)
		}
		if got := pyProbe(t, "confluent", sec, addr, topic); !strings.Contains(got, "delivery: TOPIC_AUTHORIZATION_FAILED") {
			t.Fatalf("confluent-kafka as alice reported:\n%s\nwant a delivery report of TOPIC_AUTHORIZATION_FAILED", got)
		}
		if n := sumEnds(t, adm, topic); n != 0 {
			t.Fatalf("%s holds %d records after alice's refused produces", topic, n)
		}
	})
}

// TestSASLProduceToFollower: on three brokers with authorization on, a produce sent
// straight to a follower over a SASL-authenticated connection (the follower forwards it
// to the leader) by a user without WRITE is refused TOPIC_AUTHORIZATION_FAILED and stores
// nothing on any replica; by a user with WRITE it is stored.
func TestSASLProduceToFollower(t *testing.T) {
	t.Parallel()
	m := newTLSMaterial(t)
	bs := startSecureCluster(t, 3, saslSSLListener, m.files(""))
	createSCRAMUser(t, bs, "writer", "SCRAM-SHA-512", "writer-pw")
	createSCRAMUser(t, bs, "reader", "SCRAM-SHA-512", "reader-pw")
	adm := bs[0].Admin(t)
	const topic = "forwarded"
	createReplicatedTopic(t, adm, topic, 1, 3)
	enableAuthorization(t, adm)
	createACLs(t, adm, kadm.NewACLs().Topics(topic).Allow("User:writer").Operations(kadm.OpWrite))
	createACLs(t, adm, kadm.NewACLs().Topics(topic).Allow("User:reader").Operations(kadm.OpRead))

	leader := leaderOf(t, bs, topic, 0)
	follower := bs[(leader+1)%len(bs)]
	seeds := listenerAddrs(bs, "SASL_SSL")
	sec := clientSecurity{Protocol: "SASL_SSL", Mechanism: "SCRAM-SHA-512", CA: m.ca.CertFile}
	produceVia := func(user, password, prefix string) int16 {
		t.Helper()
		cl := sec.withUser(user, password).kgoClient(t, seeds)
		waitDenied(t, cl)
		resp, err := cl.Broker(follower.ID).Request(ctxFor(t, 30*time.Second), produceRequest(9, -1, topic, 0, simpleBatch(prefix, 3)))
		if err != nil {
			t.Fatalf("produce as %s to follower %d: %v", user, follower.ID, err)
		}
		ps := resp.(*kmsg.ProduceResponse).Topics
		if len(ps) != 1 || len(ps[0].Partitions) != 1 {
			t.Fatalf("produce as %s: answer %+v", user, ps)
		}
		return ps[0].Partitions[0].ErrorCode
	}

	if code := produceVia("reader", "reader-pw", "denied"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce to follower %d as reader (no WRITE): error %v, want TOPIC_AUTHORIZATION_FAILED", follower.ID, kerr.ErrorForCode(code))
	}
	if ends := logEnds(bs, topic); !slices.Equal(ends, []int64{0, 0, 0}) {
		t.Fatalf("after the refused produce the replicas end at %v, want nothing stored", ends)
	}
	if code := produceVia("writer", "writer-pw", "allowed"); code != 0 {
		t.Fatalf("produce to follower %d as writer: %v", follower.ID, kerr.ErrorForCode(code))
	}
	// Every replica holds the writer's three records, and only them.
	waitFor(t, 20*time.Second, func() bool { return slices.Equal(logEnds(bs, topic), []int64{3, 3, 3}) })
	got := consumeAll(t, bs[leader], topic, 1, 3)
	var values []string
	for _, r := range got {
		values = append(values, string(r.Value))
	}
	if want := []string{"allowed-0", "allowed-1", "allowed-2"}; !slices.Equal(values, want) {
		t.Fatalf("%s holds %q, want %q", topic, values, want)
	}
	if n := sumEnds(t, adm, topic); n != 3 {
		t.Fatalf("%s ends at %d, want 3", topic, n)
	}
}

// logEnds is each broker's log end offset of partition 0 of topic, as its admin API
// reports it (-1: no answer).
func logEnds(bs []*Broker, topic string) []int64 {
	out := make([]int64, len(bs))
	for i, b := range bs {
		out[i] = -1
		if st, ok := adminPartition(b, topic, 0); ok {
			out[i] = st.LogEnd
		}
	}
	return out
}
