package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "cairn-e2e-sarama"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	cfg.Producer.Timeout = 15 * time.Second
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	cfg.Admin.Timeout = 15 * time.Second
	return cfg
}

// TestSaramaProduceConsume: sarama's SyncProducer (WaitForAll) and its partition consumer
// from OffsetOldest.
func TestSaramaProduceConsume(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic, parts, n = "sarama", 2, 300
	createTopic(t, b.Admin(t), topic, parts, nil)
	cfg := saramaConfig()

	prod, err := sarama.NewSyncProducer([]string{b.KafkaAddr}, cfg)
	if err != nil {
		t.Fatalf("sarama.NewSyncProducer: %v", err)
	}
	defer prod.Close()
	var acked []ackedRecord
	for i := 0; i < n; i++ {
		key, val := fmt.Sprintf("key-%d", i%11), fmt.Sprintf("value-%d", i)
		p, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(val)})
		if err != nil {
			t.Fatalf("SendMessage %d: %v", i, err)
		}
		acked = append(acked, ackedRecord{p, off, key, val})
	}
	// A batch of messages in one call.
	var msgs []*sarama.ProducerMessage
	for i := n; i < n+50; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("key-%d", i%11)), Value: sarama.StringEncoder(fmt.Sprintf("value-%d", i))})
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("SendMessages: %v", err)
	}
	for _, m := range msgs {
		k, _ := m.Key.Encode()
		v, _ := m.Value.Encode()
		acked = append(acked, ackedRecord{m.Partition, m.Offset, string(k), string(v)})
	}
	checkPerPartitionOrder(t, acked)

	cons, err := sarama.NewConsumer([]string{b.KafkaAddr}, cfg)
	if err != nil {
		t.Fatalf("sarama.NewConsumer: %v", err)
	}
	defer cons.Close()
	perPart := map[int32]int{}
	for _, a := range acked {
		perPart[a.Partition]++
	}
	var got []ackedRecord
	for p := int32(0); p < parts; p++ {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition(%d, OffsetOldest): %v", p, err)
		}
		deadline := time.After(30 * time.Second)
		for read := 0; read < perPart[p]; {
			select {
			case m := <-pc.Messages():
				got = append(got, ackedRecord{m.Partition, m.Offset, string(m.Key), string(m.Value)})
				read++
			case e := <-pc.Errors():
				t.Fatalf("partition consumer %d: %v", p, e)
			case <-deadline:
				t.Fatalf("partition %d: read %d of %d records within 30s", p, read, perPart[p])
			}
		}
		pc.Close()
	}
	gotK := make([]pyRecord, len(got))
	for i, g := range got {
		gotK[i] = pyRecord{g.Partition, g.Offset, g.Key, g.Value}
	}
	checkAckedReadable(t, acked, toKgo(gotK))
}

// TestSaramaAdmin: ClusterAdmin CreateTopic (with a config), DescribeConfig, DeleteTopic.
func TestSaramaAdmin(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic = "sarama-admin"
	adm, err := sarama.NewClusterAdmin([]string{b.KafkaAddr}, saramaConfig())
	if err != nil {
		t.Fatalf("sarama.NewClusterAdmin: %v", err)
	}
	defer adm.Close()

	retention := "3600000"
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false)
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	topics, err := adm.ListTopics()
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != 3 {
		t.Errorf("ListTopics after CreateTopic: %s = %+v (listed: %v), want 3 partitions", topic, d, ok)
	}

	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("DescribeConfig: %v", err)
	}
	found := false
	for _, e := range entries {
		if e.Name == "retention.ms" {
			found = true
			if e.Value != retention {
				t.Errorf("DescribeConfig retention.ms = %q, want %q", e.Value, retention)
			}
			if e.Source != sarama.SourceTopic {
				t.Errorf("DescribeConfig retention.ms source = %v, want %v (set on the topic)", e.Source, sarama.SourceTopic)
			}
		}
	}
	if !found {
		t.Errorf("DescribeConfig of %s has no retention.ms among %d entries", topic, len(entries))
	}

	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	topics, err = adm.ListTopics()
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if _, ok := topics[topic]; ok {
		t.Errorf("ListTopics after DeleteTopic still lists %s", topic)
	}
}

// TestSaramaIdempotent: sarama's idempotent producer (InitProducerId, sequence numbers)
// with the async producer, read back by franz-go.
func TestSaramaIdempotent(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	const topic, n = "sarama-idem", 400
	createTopic(t, b.Admin(t), topic, 2, nil)
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Flush.Messages = 50
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	prod, err := sarama.NewAsyncProducer([]string{b.KafkaAddr}, cfg)
	if err != nil {
		t.Fatalf("sarama.NewAsyncProducer (idempotent): %v", err)
	}
	defer prod.Close()
	go func() {
		for i := 0; i < n; i++ {
			prod.Input() <- &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("key-%d", i%7)), Value: sarama.StringEncoder(fmt.Sprintf("value-%04d", i))}
		}
	}()
	var acked []ackedRecord
	timeout := time.After(60 * time.Second)
	for len(acked) < n {
		select {
		case m := <-prod.Successes():
			k, _ := m.Key.Encode()
			v, _ := m.Value.Encode()
			acked = append(acked, ackedRecord{m.Partition, m.Offset, string(k), string(v)})
		case e := <-prod.Errors():
			t.Fatalf("idempotent sarama producer: %v", e.Err)
		case <-timeout:
			t.Fatalf("%d of %d acknowledged within 60s", len(acked), n)
		}
	}
	checkPerPartitionOrder(t, acked)
	checkAckedReadable(t, acked, consumeAll(t, b, topic, 2, n))
}
