package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTopicLifecycle: auto-creation on produce, partition increase, topic configs and
// deletion as a user sees them, including across a restart; a topic deleted and created
// again starts empty.
func TestTopicLifecycle(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	adm := b.Admin(t)
	ctx := ctxFor(t, 60*time.Second)

	// A producer's Metadata request creates an unknown topic (auto-creation is on).
	prod := b.Client(t, kgo.AllowAutoTopicCreation())
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "auto-created", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce to a new topic with auto-creation: %v", err)
	}
	tds, err := adm.ListTopics(ctx, "auto-created")
	if err != nil || tds["auto-created"].Err != nil || len(tds["auto-created"].Partitions) == 0 {
		t.Fatalf("auto-created topic metadata: %v %+v", err, tds["auto-created"])
	}

	// Partitions 3 → 5: the new ones take records.
	createTopic(t, adm, "grow", 3, nil)
	cr, err := adm.UpdatePartitions(ctx, 5, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := cr.On("grow", nil); err != nil || r.Err != nil {
		t.Fatalf("CreatePartitions grow → 5: %v %v", err, r.Err)
	}
	manual := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := manual.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: 4, Value: []byte("p4")}).FirstErr(); err != nil {
		t.Fatalf("produce to new partition 4: %v", err)
	}

	// A topic config set at creation and one altered later.
	ret := "86400000"
	createTopic(t, adm, "configured", 1, map[string]*string{"retention.ms": &ret})
	alt, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.bytes", Value: kadm.StringPtr("123456789")}}, "configured")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := alt.On("configured", nil); err != nil || r.Err != nil {
		t.Fatalf("IncrementalAlterConfigs retention.bytes: %v %v %s", err, r.Err, r.ErrMessage)
	}

	// Delete and create again: the new topic starts at offset 0 with nothing in it.
	createTopic(t, adm, "reborn", 1, nil)
	produceSync(t, b.Client(t, kgo.DefaultProduceTopic("reborn")), "reborn", "old", 10)
	if r, err := adm.DeleteTopic(ctx, "reborn"); err != nil || r.Err != nil {
		t.Fatalf("DeleteTopics reborn: %v %v", err, r.Err)
	}
	createTopic(t, adm, "reborn", 1, nil)
	if e := endOffsets(t, adm, "reborn")[0]; e != 0 {
		t.Errorf("a topic deleted and created again has end offset %d, want 0", e)
	}
	acked := produceSync(t, b.Client(t, kgo.DefaultProduceTopic("reborn")), "reborn", "new", 3)
	if acked[0].Offset != 0 {
		t.Errorf("first record of the re-created topic at offset %d, want 0", acked[0].Offset)
	}
	// And one deleted for good.
	createTopic(t, adm, "gone", 2, nil)
	produceSync(t, b.Client(t, kgo.DefaultProduceTopic("gone")), "gone", "g", 5)
	if r, err := adm.DeleteTopic(ctx, "gone"); err != nil || r.Err != nil {
		t.Fatalf("DeleteTopics gone: %v %v", err, r.Err)
	}

	check := func(when string) {
		t.Helper()
		tds, err := adm.ListTopics(ctxFor(t, 15*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if tds.Has("gone") {
			t.Errorf("%s: the deleted topic 'gone' is listed", when)
		}
		if n := len(tds["grow"].Partitions); n != 5 {
			t.Errorf("%s: grow has %d partitions, want 5", when, n)
		}
		if e := endOffsets(t, adm, "grow")[4]; e != 1 {
			t.Errorf("%s: grow[4] end offset %d, want 1", when, e)
		}
		if e := endOffsets(t, adm, "reborn")[0]; e != 3 {
			t.Errorf("%s: reborn end offset %d, want 3 (only the records written after re-creation)", when, e)
		}
		got := consumeAll(t, b, "reborn", 1, 3)
		for i, r := range got {
			if string(r.Value) != acked[i].Value {
				t.Errorf("%s: reborn offset %d holds %q, want %q", when, r.Offset, r.Value, acked[i].Value)
			}
		}
		rcs, err := adm.DescribeTopicConfigs(ctxFor(t, 15*time.Second), "configured")
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On("configured", nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("%s: DescribeConfigs configured: %v %v", when, err, rc.Err)
		}
		want := map[string]string{"retention.ms": ret, "retention.bytes": "123456789"}
		for _, c := range rc.Configs {
			if w, ok := want[c.Key]; ok {
				if c.MaybeValue() != w {
					t.Errorf("%s: %s = %q, want %q", when, c.Key, c.MaybeValue(), w)
				}
				if c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
					t.Errorf("%s: %s source %v, want DYNAMIC_TOPIC_CONFIG", when, c.Key, c.Source)
				}
				delete(want, c.Key)
			}
		}
		for k := range want {
			t.Errorf("%s: DescribeConfigs of configured lacks %s", when, k)
		}
	}
	check("before the restart")
	b.Restart()
	check("after the restart")
	// A deleted topic is not resurrected by a restart, and its name can be created again.
	createTopic(t, adm, "gone", 1, nil)
	if e := endOffsets(t, adm, "gone")[0]; e != 0 {
		t.Errorf("'gone' created again after the restart has end offset %d, want 0", e)
	}
}
