package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// setCluster sets cluster-wide properties (IncrementalAlterConfigs on the default broker
// resource) and fails the test unless the broker accepts them.
func setCluster(t *testing.T, adm *kadm.Client, kvs ...string) {
	t.Helper()
	var alters []kadm.AlterConfig
	for i := 0; i < len(kvs); i += 2 {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: kvs[i], Value: kadm.StringPtr(kvs[i+1])})
	}
	resps, err := adm.AlterBrokerConfigs(ctxFor(t, 15*time.Second), alters)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs cluster %v: %v", kvs, err)
	}
	for _, r := range resps {
		if r.Err != nil {
			t.Fatalf("IncrementalAlterConfigs cluster %v: %v %s", kvs, r.Err, r.ErrMessage)
		}
	}
}

// TestConfigRefusals: properties Cairn does not enforce, and values it does not support,
// are refused with INVALID_CONFIG and a message, at creation and when altered.
func TestConfigRefusals(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	adm := b.Admin(t)
	createTopic(t, adm, "plain", 1, nil)
	for _, c := range [][2]string{
		{"min.compaction.lag.ms", "0"},
		{"compression.type", "gzip"},
		{"flush.messages", "1"},
		{"message.format.version", "2.8"},
		{"no.such.property", "1"},
	} {
		v := c[1]
		name := "refused-" + strings.ReplaceAll(c[0], ".", "-")
		resps, err := adm.CreateTopics(ctxFor(t, 15*time.Second), 1, 1, map[string]*string{c[0]: &v}, name)
		if err != nil {
			t.Fatal(err)
		}
		resp := resps[name]
		if !isCode(resp.Err, 40) || resp.ErrMessage == "" {
			t.Errorf("CreateTopics with %s=%s: %v (message %q), want INVALID_CONFIG with a message", c[0], c[1], resp.Err, resp.ErrMessage)
		}
		alt, err := adm.AlterTopicConfigs(ctxFor(t, 15*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: c[0], Value: &v}}, "plain")
		if err != nil {
			t.Fatal(err)
		}
		if r, err := alt.On("plain", nil); err != nil || !isCode(r.Err, 40) || r.ErrMessage == "" {
			t.Errorf("IncrementalAlterConfigs %s=%s: %v (message %q), want INVALID_CONFIG with a message", c[0], c[1], r.Err, r.ErrMessage)
		}
	}
	tds, err := adm.ListTopics(ctxFor(t, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range tds.Names() {
		if strings.HasPrefix(name, "refused-") {
			t.Errorf("refused CreateTopics created %s", name)
		}
	}
}

func isCode(err error, code int16) bool {
	return err != nil && strings.Contains(err.Error(), kerrName(code)[:strings.Index(kerrName(code), "(")])
}

// TestWriteCachingDisabledCluster: write_caching_default=disabled, set at run time, turns
// write caching off for a topic that asked for it, and DescribeConfigs says where that
// comes from; acks=all is then strict (flushed before acknowledged).
func TestWriteCachingDisabledCluster(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	adm := b.Admin(t)
	on := "true"
	createTopic(t, adm, "wants-caching", 1, map[string]*string{"write.caching": &on})
	if st := b.Partition(t, "wants-caching", 0); st.WriteCaching == nil || !*st.WriteCaching {
		t.Fatalf("write.caching=true topic: admin API write_caching %v", st.WriteCaching)
	}
	setCluster(t, adm, "write_caching_default", "disabled")
	if st := b.Partition(t, "wants-caching", 0); st.WriteCaching == nil || *st.WriteCaching {
		t.Errorf("after write_caching_default=disabled, admin API write_caching = %v, want false", st.WriteCaching)
	}
	rcs, err := adm.DescribeTopicConfigs(ctxFor(t, 15*time.Second), "wants-caching")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On("wants-caching", nil)
	for _, c := range rc.Configs {
		if c.Key == "write.caching" && (c.MaybeValue() != "false" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig) {
			t.Errorf("DescribeConfigs write.caching = %q from %v, want false from DYNAMIC_DEFAULT_BROKER_CONFIG", c.MaybeValue(), c.Source)
		}
	}
	prod := b.Client(t, kgo.DefaultProduceTopic("wants-caching"))
	for i := 0; i < 10; i++ {
		a := produceSync(t, prod, "wants-caching", fmt.Sprint("d", i), 1)
		if st := b.Partition(t, "wants-caching", 0); st.Flushed < a[0].Offset+1 {
			t.Fatalf("write caching disabled cluster-wide: acks=all success of offset %d with flushed_offset %d", a[0].Offset, st.Flushed)
		}
	}
}

// TestRetentionEnforced: retention.bytes and retention.ms delete old segments (the log
// start advances, readers start there). The retention check interval is a cluster property
// changed at run time, which applies without a restart.
func TestRetentionEnforced(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	adm := b.Admin(t)
	seg, size, age := "1024", "4096", "1000"
	createTopic(t, adm, "by-size", 1, map[string]*string{"segment.bytes": &seg, "retention.bytes": &size})
	createTopic(t, adm, "by-age", 1, map[string]*string{"segment.bytes": &seg, "retention.ms": &age})

	value := bytes.Repeat([]byte("r"), 600)
	prod := b.Client(t, kgo.ProducerBatchCompression(kgo.NoCompression())) // sizes on disk as written
	old := time.Now().Add(-time.Hour)
	for i := 0; i < 40; i++ {
		for _, r := range []*kgo.Record{
			{Topic: "by-size", Value: value},
			{Topic: "by-age", Value: value, Timestamp: old},
		} {
			if err := prod.ProduceSync(ctxFor(t, 15*time.Second), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	trimmed := func() bool {
		return b.Partition(t, "by-size", 0).LogStart > 0 && b.Partition(t, "by-age", 0).LogStart > 0
	}
	if trimmed() {
		t.Fatalf("retention ran before its first check interval (default 5 minutes) was changed")
	}
	setCluster(t, adm, "log.retention.check.interval.ms", "100")
	if !eventually(15*time.Second, trimmed) {
		t.Errorf("log.retention.check.interval.ms changed from its default 300000 to 100 at run time: no retention within 15s "+
			"(by-size log start %d, by-age log start %d); the change does not apply until the old interval ends",
			b.Partition(t, "by-size", 0).LogStart, b.Partition(t, "by-age", 0).LogStart)
		// A restart reads the stored cluster value, so enforcement itself is still checked.
		b.Restart()
		waitFor(t, 30*time.Second, trimmed)
	}
	for _, topic := range []string{"by-size", "by-age"} {
		st := b.Partition(t, topic, 0)
		if st.LogEnd != 40 {
			t.Errorf("%s: log end %d after retention, want 40 (retention never renumbers)", topic, st.LogEnd)
		}
		if o := startOffsets(t, adm, topic)[0]; o != st.LogStart {
			t.Errorf("%s: ListOffsets earliest %d, admin API log_start_offset %d", topic, o, st.LogStart)
		}
		got := consumeAll(t, b, topic, 1, int(40-st.LogStart))
		if got[0].Offset != st.LogStart {
			t.Errorf("%s: reading from the start begins at %d, want the log start %d", topic, got[0].Offset, st.LogStart)
		}
		t.Logf("%s: log start %d", topic, st.LogStart)
	}
	// 40 uncompressed records of ~670 bytes: retention.bytes=4096 keeps a few segments of
	// 1 KiB, far fewer than 20 records; by age only the active segment may stay.
	if st := b.Partition(t, "by-size", 0); st.LogStart < 20 {
		t.Errorf("by-size: log start %d, so %d records of ~670 bytes remain under retention.bytes=4096", st.LogStart, 40-st.LogStart)
	}
	if st := b.Partition(t, "by-age", 0); st.LogStart < 35 {
		t.Errorf("by-age: log start %d; every record is an hour older than retention.ms=1000, so only the active segment may remain", st.LogStart)
	}
}

// eventually polls cond until it holds or timeout passes, and reports which.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMinInsyncCappedAtRF: min.insync.replicas=2 on a topic with one replica is capped at
// the replication factor, so acks=all still succeeds.
func TestMinInsyncCappedAtRF(t *testing.T) {
	t.Parallel()
	b := startBroker(t, BrokerOpts{})
	two := "2"
	createTopic(t, b.Admin(t), "mir2", 1, map[string]*string{"min.insync.replicas": &two})
	acked := produceSync(t, b.Client(t, kgo.DefaultProduceTopic("mir2")), "mir2", "m", 20)
	checkAckedReadable(t, acked, consumeAll(t, b, "mir2", 1, 20))
}
