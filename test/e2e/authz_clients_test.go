package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAuthzClients: each real client reports Kafka's specific error when an ACL is
// missing. User:ANONYMOUS may READ topic readonly and WRITE topic writeonly (each implies
// DESCRIBE, so Metadata answers and the refusal comes from the Produce or Fetch itself),
// and READ every group (confluent-kafka's assign() consumer still has a group). Producing
// to readonly and consuming writeonly must fail with TOPIC_AUTHORIZATION_FAILED as each
// client names it, and store nothing; kcat -L lists only the topics it may describe. A
// group whose READ is denied is refused GROUP_AUTHORIZATION_FAILED, as kcat and sarama
// name it.
func TestAuthzClients(t *testing.T) {
	t.Parallel()
	bs := startAuthzBrokers(t, 1)
	b := bs[0]
	adm := b.Admin(t)
	createTopic(t, adm, "readonly", 1, nil)
	createTopic(t, adm, "writeonly", 1, nil)
	createTopic(t, adm, "hidden", 1, nil)
	produceSync(t, b.Client(t), "writeonly", "seed", 3)
	postACLs(t, bs, b, denyProbe(), allowTopic("readonly", kmsg.ACLOperationRead), allowTopic("writeonly", kmsg.ACLOperationWrite),
		anonACL(kmsg.ACLResourceTypeGroup, "*", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
		anonACL(kmsg.ACLResourceTypeGroup, "denied-group", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeDeny))
	enableAuthz(t, bs, false)

	t.Run("kcat", func(t *testing.T) {
		kcat := requireKcat(t)
		r := run(t, 60*time.Second, "a\nb\n", kcat, "-P", "-b", b.KafkaAddr, "-t", "readonly")
		if !strings.Contains(r.Stderr, "Topic authorization failed") {
			t.Errorf("kcat -P to readonly: want its stderr to say Topic authorization failed: %s", r)
		}
		// Metadata for every topic lists the describable ones only.
		r = run(t, 30*time.Second, "", kcat, "-L", "-b", b.KafkaAddr)
		if r.Err != nil || !strings.Contains(r.Stdout, `topic "readonly" with 1 partitions`) || !strings.Contains(r.Stdout, `topic "writeonly" with 1 partitions`) || strings.Contains(r.Stdout, `"hidden"`) {
			t.Errorf("kcat -L: want readonly and writeonly listed, hidden not: %s", r)
		}
		r = run(t, 60*time.Second, "", kcat, "-C", "-b", b.KafkaAddr, "-t", "writeonly", "-o", "beginning", "-e")
		if !strings.Contains(r.Stderr, "Topic authorization failed") || strings.Contains(r.Stdout, "seed-") {
			t.Errorf("kcat -C of writeonly: want no records and its stderr to say Topic authorization failed: %s", r)
		}
	})

	// denied-group: READ is denied, DESCRIBE is not (ALLOW READ on every group implies
	// it), so the coordinator is found and JoinGroup is refused.
	t.Run("kcat group", func(t *testing.T) {
		kcat := requireKcat(t)
		r := run(t, 30*time.Second, "", kcat, "-b", b.KafkaAddr, "-G", "denied-group", "readonly", "-e")
		if r.Err == nil || !strings.Contains(r.Stderr, "Group authorization failed") {
			t.Errorf("kcat -G denied-group: want it to fail saying Group authorization failed: %s", r)
		}
	})

	t.Run("sarama group", func(t *testing.T) {
		cg, err := sarama.NewConsumerGroup([]string{b.KafkaAddr}, "denied-group", saramaConfig())
		if err != nil {
			t.Fatalf("sarama.NewConsumerGroup: %v", err)
		}
		defer cg.Close()
		err = cg.Consume(ctxFor(t, 30*time.Second), []string{"readonly"}, refusedGroupHandler{t})
		if !errors.Is(err, sarama.ErrGroupAuthorizationFailed) {
			t.Errorf("sarama consumer group denied-group: %v, want %v", err, sarama.ErrGroupAuthorizationFailed)
		}
	})

	t.Run("sarama", func(t *testing.T) {
		cfg := saramaConfig()
		cfg.Producer.Retry.Max = 1
		prod, err := sarama.NewSyncProducer([]string{b.KafkaAddr}, cfg)
		if err != nil {
			t.Fatalf("sarama.NewSyncProducer: %v", err)
		}
		defer prod.Close()
		_, _, err = prod.SendMessage(&sarama.ProducerMessage{Topic: "readonly", Value: sarama.StringEncoder("x")})
		if !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
			t.Errorf("sarama SendMessage to readonly: %v, want %v", err, sarama.ErrTopicAuthorizationFailed)
		}

		cons, err := sarama.NewConsumer([]string{b.KafkaAddr}, cfg)
		if err != nil {
			t.Fatalf("sarama.NewConsumer: %v", err)
		}
		defer cons.Close()
		pc, err := cons.ConsumePartition("writeonly", 0, sarama.OffsetOldest)
		if err != nil {
			if !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
				t.Errorf("sarama ConsumePartition of writeonly: %v, want %v", err, sarama.ErrTopicAuthorizationFailed)
			}
			return
		}
		defer pc.Close()
		select {
		case cerr := <-pc.Errors():
			if !errors.Is(cerr.Err, sarama.ErrTopicAuthorizationFailed) {
				t.Errorf("sarama consumer of writeonly: %v, want %v", cerr.Err, sarama.ErrTopicAuthorizationFailed)
			}
		case m := <-pc.Messages():
			t.Errorf("sarama consumer of writeonly read %q at offset %d without READ", m.Value, m.Offset)
		case <-time.After(30 * time.Second):
			t.Errorf("sarama consumer of writeonly: no error within 30s")
		}
	})

	t.Run("confluent_kafka", func(t *testing.T) {
		requirePython(t, "confluent_kafka")
		var pr pyProduceResult
		r := runPython(t, 90*time.Second, &pr, "confluent_client.py", "produce", b.KafkaAddr, "readonly", "3")
		if len(pr.Delivered) != 0 || len(pr.Errors) == 0 || !strings.Contains(pr.Errors[0], "TOPIC_AUTHORIZATION_FAILED") {
			t.Errorf("confluent_kafka produce to readonly: delivered %v, errors %q; want every record refused with TOPIC_AUTHORIZATION_FAILED (%s)", pr.Delivered, pr.Errors, r)
		}
		var cr pyConsumeResult
		r = runPython(t, 60*time.Second, &cr, "confluent_client.py", "consume", b.KafkaAddr, "writeonly", "3", "5")
		if len(cr.Records) != 0 || len(cr.Errors) == 0 || !strings.Contains(cr.Errors[0], "TOPIC_AUTHORIZATION_FAILED") {
			t.Errorf("confluent_kafka consume of writeonly: records %v, errors %q; want none read and TOPIC_AUTHORIZATION_FAILED (%s)", cr.Records, cr.Errors, r)
		}
	})

	t.Run("kafka_python", func(t *testing.T) {
		requirePython(t, "kafka")
		var pr pyProduceResult
		r := runPython(t, 90*time.Second, &pr, "kafka_python_client.py", "produce", b.KafkaAddr, "readonly", "3")
		if len(pr.Delivered) != 0 || len(pr.Errors) != 3 || !strings.Contains(pr.Errors[0], "TopicAuthorizationFailedError") {
			t.Errorf("kafka-python produce to readonly: delivered %v, errors %q; want every record refused with TopicAuthorizationFailedError (%s)", pr.Delivered, pr.Errors, r)
		}
		// The consumer raises the error out of poll(): the script dies with its traceback.
		var cr pyConsumeResult
		r = runPython(t, 60*time.Second, &cr, "kafka_python_client.py", "consume", b.KafkaAddr, "writeonly", "3", "5")
		if r.Err == nil || len(cr.Records) != 0 || !strings.Contains(r.Stderr, "TopicAuthorizationFailedError") {
			t.Errorf("kafka-python consume of writeonly: records %v; want none read and TopicAuthorizationFailedError (%s)", cr.Records, r)
		}
	})

	if ends := endOffsets(t, adm, "readonly"); ends[0] != 0 {
		t.Errorf("readonly holds %d records after only refused produces", ends[0])
	}
}

// refusedGroupHandler is the handler of a sarama group session that must never start.
type refusedGroupHandler struct{ t *testing.T }

func (h refusedGroupHandler) Setup(sarama.ConsumerGroupSession) error {
	h.t.Errorf("sarama joined a group whose READ is denied")
	return errors.New("joined a denied group")
}
func (refusedGroupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (refusedGroupHandler) ConsumeClaim(sarama.ConsumerGroupSession, sarama.ConsumerGroupClaim) error {
	return nil
}
