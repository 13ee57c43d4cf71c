package e2e

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

const produceVersion = 9

// rawProduce sends one Produce request on a fresh raw connection and returns the partition
// answer; the same connection must still answer an ApiVersions request afterwards.
func rawProduce(t *testing.T, b *Broker, acks int16, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	rc := dialRaw(t, b.KafkaAddr)
	resp, err := rc.roundTrip(produceRequest(produceVersion, acks, topic, partition, batch))
	if err != nil {
		t.Fatalf("Produce v%d acks=%d to %s[%d]: no response: %v", produceVersion, acks, topic, partition, err)
	}
	p, err := producePartitionResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 0
	if _, err := rc.roundTrip(av); err != nil {
		t.Errorf("after the Produce error the broker did not answer ApiVersions on the same connection: %v", err)
	}
	return p
}

func expectProduceError(t *testing.T, p kmsg.ProduceResponseTopicPartition, want int16, what string) {
	t.Helper()
	if p.ErrorCode != want {
		msg := ""
		if p.ErrorMessage != nil {
			msg = *p.ErrorMessage
		}
		t.Errorf("%s: Produce answered %s (base offset %d, message %q), want %s", what, kerrName(p.ErrorCode), p.BaseOffset, msg, kerrName(want))
	}
}

func expectProduceErrorIn(t *testing.T, p kmsg.ProduceResponseTopicPartition, want []int16, what string) {
	t.Helper()
	for _, w := range want {
		if p.ErrorCode == w {
			return
		}
	}
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = kerrName(w)
	}
	msg := ""
	if p.ErrorMessage != nil {
		msg = *p.ErrorMessage
	}
	t.Errorf("%s: Produce answered %s (base offset %d, message %q), want one of %v", what, kerrName(p.ErrorCode), p.BaseOffset, msg, names)
}

// messageSetV1 encodes one magic-1 message (the pre-0.11 format) in a message set.
func messageSetV1(value string) []byte {
	var m []byte
	m = append(m, 1, 0) // magic 1, attributes
	m = binary.BigEndian.AppendUint64(m, uint64(time.Now().UnixMilli()))
	m = binary.BigEndian.AppendUint32(m, 0xffffffff) // null key
	m = binary.BigEndian.AppendUint32(m, uint32(len(value)))
	m = append(m, value...)
	var out []byte
	out = binary.BigEndian.AppendUint64(out, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(4+len(m)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(m))
	return append(out, m...)
}

// stillServedAndUnchanged asserts that a fresh connection is served and the topic's end
// offsets are what they were.
func stillServedAndUnchanged(t *testing.T, b *Broker, topic string, before map[int32]int64) {
	t.Helper()
	metadataServed(t, b)
	after := endOffsets(t, b.Admin(t), topic)
	for p, o := range before {
		if after[p] != o {
			t.Errorf("partition %d of %s: end offset %d before the bad request, %d after (something was stored)", p, topic, o, after[p])
		}
	}
}

// frame builds a request frame by hand: size, api key, version, correlation id, client id,
// and body.
func frame(apiKey, version int16, body []byte) []byte {
	var f []byte
	f = binary.BigEndian.AppendUint32(f, 0)
	f = binary.BigEndian.AppendUint16(f, uint16(apiKey))
	f = binary.BigEndian.AppendUint16(f, uint16(version))
	f = binary.BigEndian.AppendUint32(f, 7)
	f = binary.BigEndian.AppendUint16(f, 3)
	f = append(f, "e2e"...)
	f = append(f, body...)
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	return f
}

// expectClosed writes data on a fresh connection and asserts that the broker closes it
// without answering, then that other connections are still served.
func expectClosed(t *testing.T, b *Broker, data []byte, what string) {
	t.Helper()
	rc := dialRaw(t, b.KafkaAddr)
	if err := rc.writeRaw(data); err != nil {
		t.Fatalf("%s: write: %v", what, err)
	}
	got, err := rc.waitClosed(10 * time.Second)
	switch {
	case errors.Is(err, errNotClosed):
		t.Errorf("%s: the broker kept the connection open for 10s (read %d bytes)", what, len(got))
	case err != nil:
		t.Errorf("%s: reading: %v", what, err)
	case len(got) > 0:
		t.Errorf("%s: the broker answered %d bytes (%x...) before closing, want a close without an answer", what, len(got), got[:min(len(got), 16)])
	}
	metadataServed(t, b)
}

// TestBadProduce: malformed or refused Produce requests get their Kafka error code, store
// nothing, and leave the broker serving.
func TestBadProduce(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	adm := b.Admin(t)
	const topic = "bad-produce"
	createTopic(t, adm, topic, 1, nil)
	small := "2048"
	createTopic(t, adm, "bad-produce-small", 1, map[string]*string{"max.message.bytes": &small})
	// One good batch first, so "unchanged" is not trivially zero.
	if p := rawProduce(t, b, -1, topic, 0, simpleBatch("good", 3)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("valid batch: %s base offset %d, want NONE base offset 0", kerrName(p.ErrorCode), p.BaseOffset)
	}

	t.Run("acks=2", func(t *testing.T) {
		before := endOffsets(t, adm, topic)
		p := rawProduce(t, b, 2, topic, 0, simpleBatch("acks2", 2))
		expectProduceError(t, p, 21, "acks=2")
		stillServedAndUnchanged(t, b, topic, before)
	})
	t.Run("acks=-2", func(t *testing.T) {
		before := endOffsets(t, adm, topic)
		p := rawProduce(t, b, -2, topic, 0, simpleBatch("acksm2", 2))
		expectProduceError(t, p, 21, "acks=-2")
		stillServedAndUnchanged(t, b, topic, before)
	})
	t.Run("crc-field-flipped", func(t *testing.T) {
		before := endOffsets(t, adm, topic)
		batch := simpleBatch("crc", 3)
		batch[18] ^= 0xff
		expectProduceError(t, rawProduce(t, b, -1, topic, 0, batch), 2, "batch with a flipped CRC byte")
		stillServedAndUnchanged(t, b, topic, before)
	})
	t.Run("payload-flipped", func(t *testing.T) {
		before := endOffsets(t, adm, topic)
		batch := simpleBatch("payload", 3)
		batch[len(batch)-2] ^= 0x01
		expectProduceError(t, rawProduce(t, b, -1, topic, 0, batch), 2, "batch with a flipped payload byte (CRC mismatch)")
		stillServedAndUnchanged(t, b, topic, before)
	})
	t.Run("record-count-mismatch", func(t *testing.T) {
		before := endOffsets(t, adm, topic)
		five := int32(5)
		s := batchSpec{producerID: -1, numRecords: &five}
		for i := 0; i < 3; i++ {
			s.records = append(s.records, kv{value: []byte("count")})
		}
		expectProduceErrorIn(t, rawProduce(t, b, -1, topic, 0, buildBatch(s)), []int16{2, 87},
			"batch declaring 5 records holding 3 (CRC valid)")
		stillServedAndUnchanged(t, b, topic, before)
	})
	t.Run("garbage-gzip-payload", func(t *testing.T) {
		before := endOffsets(t, adm, topic)
		s := batchSpec{producerID: -1, attributes: 1, rawRecords: bytes.Repeat([]byte{0x5a, 0xa5, 0x17}, 40),
			records: []kv{{value: []byte("a")}, {value: []byte("b")}}}
		expectProduceErrorIn(t, rawProduce(t, b, -1, topic, 0, buildBatch(s)), []int16{2, 87},
			"gzip batch whose payload is not gzip (CRC valid)")
		stillServedAndUnchanged(t, b, topic, before)
	})
	t.Run("length-beyond-data", func(t *testing.T) {
		before := endOffsets(t, adm, topic)
		batch := simpleBatch("len", 2)
		binary.BigEndian.PutUint32(batch[recordbatch.LengthPos:], uint32(len(batch)-recordbatch.LengthEnd+100))
		expectProduceErrorIn(t, rawProduce(t, b, -1, topic, 0, batch), []int16{2, 87},
			"batch whose length field runs 100 bytes past the data")
		stillServedAndUnchanged(t, b, topic, before)
	})
	t.Run("magic-1-message-set", func(t *testing.T) {
		// Only RecordBatch v2 is accepted; a v1 message set (Produce v2) is refused, not
		// stored.
		before := endOffsets(t, adm, topic)
		rc := dialRaw(t, b.KafkaAddr)
		resp, err := rc.roundTrip(produceRequest(2, -1, topic, 0, messageSetV1("old-format")))
		if err != nil {
			t.Logf("Produce v2 with a magic-1 message set: connection closed (%v)", err)
		} else if p, err := producePartitionResponse(resp); err != nil {
			t.Error(err)
		} else if p.ErrorCode == 0 {
			t.Errorf("Produce v2 with a magic-1 message set was accepted (base offset %d); only RecordBatch v2 is supported", p.BaseOffset)
		}
		stillServedAndUnchanged(t, b, topic, before)
	})
	t.Run("message-too-large", func(t *testing.T) {
		const small = "bad-produce-small"
		ok := buildBatch(batchSpec{producerID: -1, records: []kv{{value: bytes.Repeat([]byte("s"), 1000)}}})
		if p := rawProduce(t, b, -1, small, 0, ok); p.ErrorCode != 0 {
			t.Fatalf("a %d-byte batch to a topic with max.message.bytes=2048: %s, want NONE", len(ok), kerrName(p.ErrorCode))
		}
		before := endOffsets(t, adm, small)
		big := buildBatch(batchSpec{producerID: -1, records: []kv{{value: bytes.Repeat([]byte("x"), 3000)}}})
		expectProduceError(t, rawProduce(t, b, -1, small, 0, big), 10, "3 KB batch to a topic with max.message.bytes=2048")
		stillServedAndUnchanged(t, b, small, before)
	})
	t.Run("unknown-partition", func(t *testing.T) {
		before := endOffsets(t, adm, topic)
		expectProduceError(t, rawProduce(t, b, -1, topic, 7, simpleBatch("p7", 1)), 3, "partition 7 of a 1-partition topic")
		stillServedAndUnchanged(t, b, topic, before)
		if _, err := adm.ListTopics(ctxFor(t, 10*time.Second), topic); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unknown-topic", func(t *testing.T) {
		expectProduceError(t, rawProduce(t, b, -1, "no-such-topic", 0, simpleBatch("nt", 1)), 3, "Produce to a topic that does not exist")
		metadataServed(t, b)
		tds, err := adm.ListTopics(ctxFor(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if tds.Has("no-such-topic") {
			t.Errorf("a refused Produce to an unknown topic created it")
		}
	})
	t.Run("acks=0-bad-crc-stores-nothing", func(t *testing.T) {
		before := endOffsets(t, adm, topic)
		rc := dialRaw(t, b.KafkaAddr)
		batch := simpleBatch("acks0crc", 2)
		batch[18] ^= 0xff
		if _, err := rc.send(produceRequest(produceVersion, 0, topic, 0, batch)); err != nil {
			t.Fatal(err)
		}
		// acks=0 has no response; a following request on the connection is answered after it.
		av := kmsg.NewPtrApiVersionsRequest()
		if _, err := rc.roundTrip(av); err != nil {
			t.Logf("ApiVersions after an acks=0 bad batch: %v (the broker may close an acks=0 connection on error)", err)
		}
		stillServedAndUnchanged(t, b, topic, before)
	})
}

// TestBadFrames: bytes that are not a request the broker serves close that connection (and
// only that one); ApiVersions of an unknown version gets a v0 answer with
// UNSUPPORTED_VERSION.
func TestBadFrames(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	metadataServed(t, b)

	t.Run("garbage", func(t *testing.T) {
		junk := append([]byte{0, 0, 0, 24}, bytes.Repeat([]byte{0xee}, 24)...)
		expectClosed(t, b, junk, "24 bytes of 0xee in a 24-byte frame")
	})
	t.Run("http", func(t *testing.T) {
		expectClosed(t, b, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "an HTTP request")
	})
	t.Run("truncated-body", func(t *testing.T) {
		expectClosed(t, b, frame(3, 9, []byte{0x00, 0x05, 0xff}), "Metadata v9 with a truncated body")
	})
	t.Run("unknown-api-key", func(t *testing.T) {
		expectClosed(t, b, frame(9999, 0, nil), "api key 9999")
	})
	t.Run("api-not-advertised", func(t *testing.T) {
		// The first API kmsg knows that the broker does not advertise, sent at v0 with a
		// well-formed empty body.
		rc := dialRaw(t, b.KafkaAddr)
		av := kmsg.NewPtrApiVersionsRequest()
		r, err := rc.roundTrip(av)
		if err != nil {
			t.Fatalf("ApiVersions: %v", err)
		}
		served := map[int16]bool{}
		for _, k := range r.(*kmsg.ApiVersionsResponse).ApiKeys {
			served[k.ApiKey] = true
		}
		for key := int16(0); key < 100; key++ {
			req := kmsg.RequestForKey(key)
			if req == nil || served[key] {
				continue
			}
			req.SetVersion(0)
			data := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
			expectClosed(t, b, data, fmt.Sprintf("%s v0 (not advertised)", kmsg.NameForKey(key)))
			return
		}
		t.Fatalf("the broker advertises every API kmsg knows")
	})
	t.Run("fetch-v3", func(t *testing.T) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 3
		req.MaxWaitMillis = 100
		data := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
		expectClosed(t, b, data, "Fetch v3 (below the advertised v4)")
	})
	t.Run("metadata-v13", func(t *testing.T) {
		expectClosed(t, b, frame(3, 13, []byte{0, 1, 0, 0}), "Metadata v13 (above the advertised v12)")
	})
	// go_memstats_alloc_bytes_total counts every byte the broker's heap ever allocated, so
	// a frame buffer sized from the length prefix would show up in it.
	allocated := func() float64 {
		v, ok := b.Metric(t, "go_memstats_alloc_bytes_total", "")
		if !ok {
			t.Fatal("/metrics lacks go_memstats_alloc_bytes_total")
		}
		return v
	}
	t.Run("frame-over-100MiB", func(t *testing.T) {
		before := allocated()
		hdr := binary.BigEndian.AppendUint32(nil, 100<<20+1)
		hdr = append(hdr, frame(18, 0, nil)[4:]...)
		expectClosed(t, b, hdr, "a frame announcing 100 MiB + 1 bytes")
		if grew := allocated() - before; grew > 32<<20 {
			t.Errorf("the broker allocated %.0f MiB while refusing a frame announcing 100 MiB + 1 bytes", grew/(1<<20))
		}
	})
	t.Run("frame-1GiB", func(t *testing.T) {
		before := allocated()
		expectClosed(t, b, binary.BigEndian.AppendUint32(nil, 1<<30), "a frame announcing 1 GiB")
		if grew := allocated() - before; grew > 32<<20 {
			t.Errorf("the broker allocated %.0f MiB while refusing a frame announcing 1 GiB", grew/(1<<20))
		}
	})
	t.Run("negative-size", func(t *testing.T) {
		expectClosed(t, b, []byte{0xff, 0xff, 0xff, 0xf0}, "a negative frame size")
	})
	t.Run("apiversions-v99", func(t *testing.T) {
		rc := dialRaw(t, b.KafkaAddr)
		// Version 99 is unknown; its body cannot be parsed, so send a v3-like body.
		body := []byte{0, 4, 'e', '2', 'e', 2, '1', 0}
		if err := rc.writeRaw(frame(18, 99, body)); err != nil {
			t.Fatal(err)
		}
		f, err := rc.readFrame(10 * time.Second)
		if err != nil {
			t.Fatalf("ApiVersions v99: no answer: %v", err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := decodeResponse(f, 7, resp); err != nil {
			t.Fatalf("ApiVersions v99: answer is not a v0 ApiVersions response: %v (%x)", err, f)
		}
		if resp.ErrorCode != 35 {
			t.Errorf("ApiVersions v99: error %s, want %s", kerrName(resp.ErrorCode), kerrName(35))
		}
		found := false
		for _, k := range resp.ApiKeys {
			if k.ApiKey == 18 {
				found = true
				if k.MinVersion != 0 || k.MaxVersion < 3 {
					t.Errorf("ApiVersions v99 answer lists ApiVersions v%d-%d, want v0-v3 or more", k.MinVersion, k.MaxVersion)
				}
			}
		}
		if !found || len(resp.ApiKeys) < 10 {
			t.Errorf("ApiVersions v99 answer lists %d APIs (ApiVersions among them: %v), want the served APIs", len(resp.ApiKeys), found)
		}
		metadataServed(t, b)
	})
	t.Run("advertised-versions", func(t *testing.T) {
		rc := dialRaw(t, b.KafkaAddr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName = "cairn-e2e"
		req.ClientSoftwareVersion = "1"
		r, err := rc.roundTrip(req)
		if err != nil {
			t.Fatalf("ApiVersions v3: %v", err)
		}
		resp := r.(*kmsg.ApiVersionsResponse)
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		// The ranges the product promises are covered.
		for key, want := range map[int16][2]int16{0: {0, 11}, 1: {4, 12}, 2: {1, 8}, 3: {0, 12}, 18: {0, 4}} {
			g, ok := got[key]
			if !ok || g[0] > want[0] || g[1] < want[1] {
				t.Errorf("ApiVersions lists %s as v%d-v%d (listed: %v), want at least v%d-v%d", kmsg.NameForKey(key), g[0], g[1], ok, want[0], want[1])
			}
		}
		for _, key := range []int16{19, 20, 21, 22, 23, 32, 33, 37, 44, 60} {
			if _, ok := got[key]; !ok {
				t.Errorf("ApiVersions does not list %s", kmsg.NameForKey(key))
			}
		}
	})
}

// TestBadAdminRequests: refused admin requests get their Kafka error codes and change
// nothing.
func TestBadAdminRequests(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	cl := b.Client(t, kgo.AllowAutoTopicCreation())
	adm := b.Admin(t)
	topicExists := func(name string) bool {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = false
		resp, err := req.RequestWith(ctxFor(t, 10*time.Second), cl)
		if err != nil {
			t.Fatalf("Metadata: %v", err)
		}
		return len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0
	}
	createReq := func(name string, parts int32, rf int16, validateOnly bool) *kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		req.ValidateOnly = validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxFor(t, 15*time.Second), cl)
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		if len(resp.Topics) != 1 {
			t.Fatalf("CreateTopics answered %d topics", len(resp.Topics))
		}
		return &resp.Topics[0]
	}

	t.Run("replication-factor-3", func(t *testing.T) {
		r := createReq("rf3", 1, 3, false)
		if r.ErrorCode != 38 {
			t.Errorf("CreateTopics rf3 with replication factor 3 on one broker: %s, want %s", kerrName(r.ErrorCode), kerrName(38))
		}
		if topicExists("rf3") {
			t.Errorf("the refused topic rf3 exists")
		}
	})
	t.Run("validate-only", func(t *testing.T) {
		r := createReq("validated", 2, 1, true)
		if r.ErrorCode != 0 {
			t.Errorf("CreateTopics validate_only: %s, want NONE", kerrName(r.ErrorCode))
		}
		if topicExists("validated") {
			t.Errorf("CreateTopics with validate_only created the topic")
		}
		bad := createReq("validated-rf3", 2, 3, true)
		if bad.ErrorCode != 38 {
			t.Errorf("CreateTopics validate_only with replication factor 3: %s, want %s", kerrName(bad.ErrorCode), kerrName(38))
		}
	})
	t.Run("create-topics-refusals", func(t *testing.T) {
		createTopic(t, adm, "exists", 1, nil)
		for _, c := range []struct {
			name  string
			parts int32
			want  int16
			what  string
		}{
			{"exists", 1, 36, "a topic that exists"},
			{"bad/name", 1, 17, "a name with '/'"},
			{"..", 1, 17, "the name '..'"},
			{strings.Repeat("x", 250), 1, 17, "a 250-character name"},
			{"zero-partitions", 0, 37, "0 partitions"},
		} {
			r := createReq(c.name, c.parts, 1, false)
			if r.ErrorCode != c.want {
				t.Errorf("CreateTopics with %s: %s, want %s", c.what, kerrName(r.ErrorCode), kerrName(c.want))
			}
			if c.want != 36 && topicExists(c.name) {
				t.Errorf("CreateTopics with %s was refused but the topic exists", c.what)
			}
		}
		// An invalid value of a known property.
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "bad-config-value", 1, 1
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("soon")
		rt.Configs = append(rt.Configs, cfg)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxFor(t, 15*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.Topics[0]; r.ErrorCode != 40 {
			t.Errorf("CreateTopics with retention.ms=soon: %s, want %s", kerrName(r.ErrorCode), kerrName(40))
		}
		if topicExists("bad-config-value") {
			t.Errorf("CreateTopics with retention.ms=soon was refused but the topic exists")
		}
	})
	t.Run("unknown-topic-admin", func(t *testing.T) {
		dt := kmsg.NewPtrDeleteTopicsRequest()
		dt.TimeoutMillis = 10000
		dt.TopicNames = []string{"never-created"}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr("never-created")
		dt.Topics = append(dt.Topics, rt)
		resp, err := dt.RequestWith(ctxFor(t, 15*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 3 {
			t.Errorf("DeleteTopics never-created: %+v, want %s", resp.Topics, kerrName(3))
		}
		dc := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "never-created"
		dc.Resources = append(dc.Resources, res)
		dresp, err := dc.RequestWith(ctxFor(t, 15*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(dresp.Resources) != 1 || dresp.Resources[0].ErrorCode != 3 {
			t.Errorf("DescribeConfigs never-created: %+v, want %s", dresp.Resources, kerrName(3))
		}
		if topicExists("never-created") {
			t.Errorf("admin requests about an unknown topic created it")
		}
	})
	t.Run("alter-configs-replaces", func(t *testing.T) {
		// The legacy AlterConfigs sets the topic's whole config: what it leaves out reverts
		// to the default.
		ms, bytes := "3600000", "5000000"
		createTopic(t, adm, "replaced", 1, map[string]*string{"retention.ms": &ms, "retention.bytes": &bytes})
		req := kmsg.NewPtrAlterConfigsRequest()
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "replaced"
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.bytes", kmsg.StringPtr("6000000")
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctxFor(t, 15*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("AlterConfigs replaced: %+v", resp.Resources)
		}
		rcs, err := adm.DescribeTopicConfigs(ctxFor(t, 15*time.Second), "replaced")
		if err != nil {
			t.Fatal(err)
		}
		rc, _ := rcs.On("replaced", nil)
		for _, c := range rc.Configs {
			switch c.Key {
			case "retention.bytes":
				if c.MaybeValue() != "6000000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
					t.Errorf("after AlterConfigs retention.bytes=6000000: %s = %q (%v)", c.Key, c.MaybeValue(), c.Source)
				}
			case "retention.ms":
				if c.Source == kmsg.ConfigSourceDynamicTopicConfig || c.MaybeValue() == ms {
					t.Errorf("after an AlterConfigs that left retention.ms out, it is still %q (%v); want the default", c.MaybeValue(), c.Source)
				}
			}
		}
	})
	t.Run("create-partitions-decrease", func(t *testing.T) {
		createTopic(t, adm, "three", 3, nil)
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "three", 2
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxFor(t, 15*time.Second), cl)
		if err != nil {
			t.Fatalf("CreatePartitions: %v", err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 37 {
			t.Errorf("CreatePartitions three 3→2: %+v, want %s", resp.Topics, kerrName(37))
		}
		tds, err := adm.ListTopics(ctxFor(t, 10*time.Second), "three")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tds["three"].Partitions); n != 3 {
			t.Errorf("after the refused decrease, three has %d partitions, want 3", n)
		}
		metadataServed(t, b)
	})
	t.Run("unknown-config", func(t *testing.T) {
		createTopic(t, adm, "cfg", 1, nil)
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceTypeTopic
		res.ResourceName = "cfg"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "no.such.property", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1")
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctxFor(t, 15*time.Second), cl)
		if err != nil {
			t.Fatalf("IncrementalAlterConfigs: %v", err)
		}
		if len(resp.Resources) != 1 {
			t.Fatalf("IncrementalAlterConfigs answered %d resources", len(resp.Resources))
		}
		r := resp.Resources[0]
		if r.ErrorCode != 40 {
			t.Errorf("IncrementalAlterConfigs no.such.property: %s, want %s", kerrName(r.ErrorCode), kerrName(40))
		}
		if r.ErrorMessage == nil || *r.ErrorMessage == "" {
			t.Errorf("IncrementalAlterConfigs no.such.property: INVALID_CONFIG without a message")
		}
		metadataServed(t, b)
	})
}
