package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnLibrdkafka: librdkafka's transactional producer (confluent-kafka-python) commits
// one transaction and aborts another; its read_committed consumer reads only the committed
// one, and read_uncommitted reads both.
func TestTxnLibrdkafka(t *testing.T) {
	t.Parallel()
	requirePython(t, "confluent_kafka")
	b := startBroker(t, BrokerOpts{})
	const topic = "txn-librdkafka"
	createTopic(t, b.Admin(t), topic, 1, nil)
	var out struct {
		ReadCommitted   []string `json:"read_committed"`
		ReadUncommitted []string `json:"read_uncommitted"`
	}
	if r := runPython(t, 3*time.Minute, &out, "txn_confluent.py", b.KafkaAddr, topic, "20", "10"); r.Err != nil {
		t.Fatalf("txn_confluent.py: %s", r)
	}
	var committed, all []string
	for i := range 20 {
		committed = append(committed, fmt.Sprintf("c-%d", i))
	}
	all = append(all, committed...)
	for i := range 10 {
		all = append(all, fmt.Sprintf("a-%d", i))
	}
	committed, all = append(committed, "end"), append(all, "end")
	if !slices.Equal(out.ReadCommitted, committed) {
		t.Errorf("read_committed read %v, want %v", out.ReadCommitted, committed)
	}
	if !slices.Equal(out.ReadUncommitted, all) {
		t.Errorf("read_uncommitted read %v, want %v", out.ReadUncommitted, all)
	}
}

// TestTxnKcat: kcat with isolation.level=read_committed reads the committed transaction
// and the plain record after it, and none of the aborted one; read_uncommitted reads the
// aborted records too.
func TestTxnKcat(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	b := startBroker(t, BrokerOpts{})
	const topic = "txn-kcat"
	createTopic(t, b.Admin(t), topic, 1, nil)
	p := b.Client(t, kgo.TransactionalID("kcat-txn"))
	want := runTxn(t, p, topic, "committed", 5, true)
	runTxn(t, p, topic, "aborted", 5, false)
	plain := b.Client(t)
	if err := plain.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want = append(want, "plain")
	r := run(t, 60*time.Second, "", kcat, "-C", "-b", b.KafkaAddr, "-t", topic, "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_committed", "-f", "%s\n")
	if r.Err != nil {
		t.Fatalf("kcat: %s", r)
	}
	if got := lines(r.Stdout); !slices.Equal(got, want) {
		t.Errorf("kcat read_committed read %v, want %v", got, want)
	}
	r = run(t, 60*time.Second, "", kcat, "-C", "-b", b.KafkaAddr, "-t", topic, "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_uncommitted", "-f", "%s\n")
	if r.Err != nil || !strings.Contains(r.Stdout, "aborted-0") {
		t.Errorf("kcat read_uncommitted does not read the aborted records: %s", r)
	}
}
