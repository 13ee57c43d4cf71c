package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Wire tests of min.insync.racks as a property: what real clients may set, and the
// INVALID_CONFIG answers (with messages) for what no partition could meet. Enforcement on
// produce is tested elsewhere.

const invalidConfig = 40

// racksValue returns a topic's min.insync.racks and its source, as DescribeConfigs says.
func racksValue(t *testing.T, adm *kadm.Client, topic string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxFor(t, 15*time.Second), topic)
	if err != nil {
		t.Fatalf("DescribeConfigs %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeConfigs %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == "min.insync.racks" {
			return c.MaybeValue(), c.Source
		}
	}
	t.Fatalf("DescribeConfigs %s: no min.insync.racks", topic)
	return "", 0
}

// wantRefused fails the test unless err is INVALID_CONFIG with every one of want in msg.
func wantRefused(t *testing.T, what string, err error, msg string, want ...string) {
	t.Helper()
	if !isCode(err, invalidConfig) {
		t.Errorf("%s: %v (%q), want INVALID_CONFIG", what, err, msg)
		return
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: message %q does not contain %q", what, msg, w)
		}
	}
}

// alterTopic sets min.insync.racks on topic through each of the alter paths a client has
// (IncrementalAlterConfigs and the legacy AlterConfigs, each also validate-only) and calls
// check with each answer.
func alterTopic(t *testing.T, adm *kadm.Client, topic, value string, check func(path string, err error, msg string)) {
	t.Helper()
	alter := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.racks", Value: kadm.StringPtr(value)}}
	for _, p := range []struct {
		name string
		f    func(context.Context, []kadm.AlterConfig, ...string) (kadm.AlterConfigsResponses, error)
	}{
		{"IncrementalAlterConfigs", adm.AlterTopicConfigs},
		{"IncrementalAlterConfigs validate-only", adm.ValidateAlterTopicConfigs},
		{"AlterConfigs", adm.AlterTopicConfigsState},
		{"AlterConfigs validate-only", adm.ValidateAlterTopicConfigsState},
	} {
		resps, err := p.f(ctxFor(t, 15*time.Second), alter, topic)
		if err != nil {
			t.Fatalf("%s %s: %v", p.name, topic, err)
		}
		r, _ := resps.On(topic, nil)
		check(p.name+" min.insync.racks="+value, r.Err, r.ErrMessage)
	}
}

// TestRackConfigRefusals: on three brokers in racks r1, r2 and r3, min.insync.racks is
// accepted up to the racks a partition's replicas span, and every bad value (negative, zero,
// not a number, above the racks) is refused on every path with INVALID_CONFIG and a message
// that says why, and nothing is stored.
func TestRackConfigRefusals(t *testing.T) {
	t.Parallel()
	bs := startClusterInRacks(t, []string{"r1", "r2", "r3"})
	adm := kadm.NewClient(clusterClient(t, bs))
	three := "3"
	if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 2, 3, map[string]*string{"min.insync.racks": &three}, "spread"); err != nil || resp.Err != nil {
		t.Fatalf("CreateTopics spread rf 3, min.insync.racks=3 over 3 racks: %v %v %s", err, resp.Err, resp.ErrMessage)
	}
	createReplicatedTopic(t, adm, "pair", 1, 2)

	bad := map[string]string{
		"-1":  `invalid value "-1" for min.insync.racks: out of range; valid values: >= 1`,
		"0":   `invalid value "0" for min.insync.racks: out of range; valid values: >= 1`,
		"two": `invalid value "two" for min.insync.racks: not a whole number (an int); valid values: >= 1`,
		"4":   "min.insync.racks=4 cannot be met by partition spread-0: its replicas ",
	}
	for value, want := range bad {
		for _, validate := range []bool{false, true} {
			v := value
			create, what := adm.CreateTopics, "CreateTopics"
			if validate {
				create, what = adm.ValidateCreateTopics, "CreateTopics validate-only"
			}
			resps, err := create(ctxFor(t, 30*time.Second), 1, 3, map[string]*string{"min.insync.racks": &v}, "refused")
			if err != nil {
				t.Fatal(err)
			}
			r := resps["refused"]
			wantRefused(t, what+" min.insync.racks="+value, r.Err, r.ErrMessage,
				strings.ReplaceAll(want, "spread-0", "refused-0"))
		}
		alterTopic(t, adm, "spread", value, func(path string, err error, msg string) {
			wantRefused(t, path, err, msg, want)
		})
	}
	// The message names each replica's rack and the racks they span.
	alterTopic(t, adm, "pair", "3", func(path string, err error, msg string) {
		wantRefused(t, path, err, msg, "min.insync.racks=3 cannot be met by partition pair-0: its replicas ", " (rack r", " span 2 declared racks; it is not capped")
	})
	two := "2"
	resps, err := adm.CreateTopics(ctxFor(t, 30*time.Second), 1, 2, map[string]*string{"min.insync.racks": &three}, "refused")
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "CreateTopics rf 2, min.insync.racks=3", resps["refused"].Err, resps["refused"].ErrMessage, "span 2 declared racks")

	// The cluster default is refused naming the topics that take it, and only those.
	for _, validate := range []bool{false, true} {
		alter := adm.AlterBrokerConfigs
		if validate {
			alter = adm.ValidateAlterBrokerConfigs
		}
		rs, err := alter(ctxFor(t, 15*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.racks", Value: &three}})
		if err != nil {
			t.Fatal(err)
		}
		wantRefused(t, "cluster min.insync.racks=3", rs[0].Err, rs[0].ErrMessage,
			"min.insync.racks=3 (cluster default) cannot be met by the topics that take it (pair): partition pair-0: ")
		if strings.Contains(rs[0].ErrMessage, "spread") {
			t.Errorf("cluster default refusal names spread, which has its own value: %q", rs[0].ErrMessage)
		}
		// The cluster default takes the topic's rules for a value that is no number of racks.
		for _, value := range []string{"-1", "0", "two"} {
			rs, err := alter(ctxFor(t, 15*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.racks", Value: kadm.StringPtr(value)}})
			if err != nil {
				t.Fatal(err)
			}
			wantRefused(t, "cluster min.insync.racks="+value, rs[0].Err, rs[0].ErrMessage, bad[value])
		}
	}

	// Nothing refused was stored.
	if v, src := racksValue(t, adm, "spread"); v != "3" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("spread after refusals: min.insync.racks=%s (%v), want 3 DYNAMIC_TOPIC_CONFIG", v, src)
	}
	if v, src := racksValue(t, adm, "pair"); v != "1" || src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("pair after refusals: min.insync.racks=%s (%v), want 1 DEFAULT_CONFIG", v, src)
	}
	if tds, err := adm.ListTopics(ctxFor(t, 15*time.Second)); err != nil || tds.Has("refused") {
		t.Errorf("a refused CreateTopics left a topic behind (%v)", err)
	}

	// Values the replicas can meet are accepted, and described with their source.
	alterTopic(t, adm, "pair", "2", func(path string, err error, msg string) {
		if err != nil {
			t.Errorf("%s: %v %s", path, err, msg)
		}
	})
	setCluster(t, adm, "min.insync.racks", two)
	if v, src := racksValue(t, adm, "pair"); v != "2" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("pair: min.insync.racks=%s (%v), want 2 DYNAMIC_TOPIC_CONFIG", v, src)
	}
}

// TestRackConfigWithoutRacks: where no broker declares a rack, the default (1, off) leaves
// acks=all as it was, and any value above 1 is refused, for a topic and as the cluster
// default, naming the internal topic that would take it.
func TestRackConfigWithoutRacks(t *testing.T) {
	t.Parallel()
	bs := startClusterInRacks(t, []string{"", "", ""})
	cl := clusterClient(t, bs, kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	createReplicatedTopic(t, adm, "plain", 1, 3)
	if v, src := racksValue(t, adm, "plain"); v != "1" || src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("plain: min.insync.racks=%s (%v), want 1 DEFAULT_CONFIG", v, src)
	}
	if err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: "plain", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("acks=all with the default min.insync.racks and no racks: %v", err)
	}
	alterTopic(t, adm, "plain", "2", func(path string, err error, msg string) {
		wantRefused(t, path, err, msg, "min.insync.racks=2 cannot be met by partition plain-0: its replicas ", "(no rack)", " span 0 declared racks")
	})
	if fc := adm.FindGroupCoordinators(ctxFor(t, 30*time.Second), "g"); fc.Error() != nil {
		t.Fatalf("FindCoordinator (creates __consumer_offsets): %v", fc.Error())
	}
	rs, err := adm.AlterBrokerConfigs(ctxFor(t, 15*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.racks", Value: kadm.StringPtr("2")}})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "cluster min.insync.racks=2", rs[0].Err, rs[0].ErrMessage,
		"min.insync.racks=2 (cluster default) cannot be met by the topics that take it (__consumer_offsets, plain): partition __consumer_offsets-0: ", "; and ")
	if v, _ := racksValue(t, adm, "plain"); v != "1" {
		t.Errorf("plain after refusals: min.insync.racks=%s, want 1", v)
	}
}
