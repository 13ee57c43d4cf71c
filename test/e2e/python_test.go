package e2e

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type pyRecord struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`
	Value     string `json:"value"`
}

type pyProduceResult struct {
	Delivered []pyRecord `json:"delivered"`
	Errors    []string   `json:"errors"`
}

type pyConsumeResult struct {
	Records []pyRecord `json:"records"`
	Errors  []string   `json:"errors"`
}

func (r pyRecord) acked() ackedRecord { return ackedRecord{r.Partition, r.Offset, r.Key, r.Value} }

func toKgo(rs []pyRecord) []*kgo.Record {
	out := make([]*kgo.Record, len(rs))
	for i, r := range rs {
		out[i] = &kgo.Record{Partition: r.Partition, Offset: r.Offset, Key: []byte(r.Key), Value: []byte(r.Value)}
	}
	return out
}

// checkPyDelivered asserts the delivery reports: all n records, distinct keys per value,
// offsets per partition contiguous from 0 in produce order.
func checkPyDelivered(t *testing.T, res pyProduceResult, n int) []ackedRecord {
	t.Helper()
	if len(res.Errors) > 0 {
		t.Errorf("producer reported errors: %q", head(res.Errors, 10))
	}
	if len(res.Delivered) != n {
		t.Fatalf("%d delivery reports, want %d", len(res.Delivered), n)
	}
	acked := make([]ackedRecord, len(res.Delivered))
	for i, d := range res.Delivered {
		acked[i] = d.acked()
	}
	checkPerPartitionOrder(t, acked)
	return acked
}

// TestConfluentKafkaPython: confluent-kafka-python (acks=all, idempotent) produces and
// reports delivery offsets; a Consumer with assign() from offset 0 reads every record at
// its reported offset; franz-go agrees.
func TestConfluentKafkaPython(t *testing.T) {
	t.Parallel()
	requirePython(t, "confluent_kafka")
	b := startBroker(t, BrokerOpts{})
	const topic, n = "confluent-py", 500
	createTopic(t, b.Admin(t), topic, 3, nil)

	var prod pyProduceResult
	r := runPython(t, 90*time.Second, &prod, "confluent_client.py", "produce", b.KafkaAddr, topic, strconv.Itoa(n))
	if r.Err != nil {
		t.Fatalf("confluent produce: %s", r)
	}
	acked := checkPyDelivered(t, prod, n)

	var cons pyConsumeResult
	r = runPython(t, 90*time.Second, &cons, "confluent_client.py", "consume", b.KafkaAddr, topic, strconv.Itoa(n), "45")
	if r.Err != nil {
		t.Errorf("confluent consume: %s", r)
	}
	if len(cons.Records) != n {
		t.Errorf("confluent consumer read %d records, want %d", len(cons.Records), n)
	}
	checkAckedReadable(t, acked, toKgo(cons.Records))
	checkAckedReadable(t, acked, consumeAll(t, b, topic, 3, n))
}

// TestKafkaPython: kafka-python 2.0.2 (which probes old API versions) produces with
// acks='all' and consumes with group_id=None + assign + seek_to_beginning.
func TestKafkaPython(t *testing.T) {
	t.Parallel()
	requirePython(t, "kafka")
	b := startBroker(t, BrokerOpts{})
	const topic, n = "kafka-python", 300
	createTopic(t, b.Admin(t), topic, 2, nil)

	var prod pyProduceResult
	r := runPython(t, 90*time.Second, &prod, "kafka_python_client.py", "produce", b.KafkaAddr, topic, strconv.Itoa(n))
	if r.Err != nil {
		t.Fatalf("kafka-python produce: %s", r)
	}
	acked := checkPyDelivered(t, prod, n)

	var cons pyConsumeResult
	r = runPython(t, 90*time.Second, &cons, "kafka_python_client.py", "consume", b.KafkaAddr, topic, strconv.Itoa(n), "45")
	if r.Err != nil {
		t.Errorf("kafka-python consume: %s", r)
	}
	if len(cons.Records) != n {
		t.Errorf("kafka-python consumer read %d records, want %d", len(cons.Records), n)
	}
	checkAckedReadable(t, acked, toKgo(cons.Records))
	checkAckedReadable(t, acked, consumeAll(t, b, topic, 2, n))
}

// TestKafkaPythonAdmin: KafkaAdminClient create_topics and delete_topics.
func TestKafkaPythonAdmin(t *testing.T) {
	t.Parallel()
	requirePython(t, "kafka")
	b := startBroker(t, BrokerOpts{})
	adm := b.Admin(t)
	const topic = "kafka-python-admin"

	r := runPython(t, 60*time.Second, nil, "kafka_python_client.py", "create-topic", b.KafkaAddr, topic, "3")
	if r.Err != nil {
		t.Fatalf("KafkaAdminClient.create_topics: %s", r)
	}
	tds, err := adm.ListTopics(ctxFor(t, 15*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	if td := tds[topic]; td.Err != nil || len(td.Partitions) != 3 {
		t.Fatalf("after create_topics, metadata for %s: err %v, %d partitions; want 3 partitions", topic, td.Err, len(td.Partitions))
	}

	r = runPython(t, 60*time.Second, nil, "kafka_python_client.py", "delete-topic", b.KafkaAddr, topic)
	if r.Err != nil {
		t.Fatalf("KafkaAdminClient.delete_topics: %s", r)
	}
	tds, err = adm.ListTopics(ctxFor(t, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if tds.Has(topic) {
		t.Errorf("after delete_topics, %s is still listed", topic)
	}
}
