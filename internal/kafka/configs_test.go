package kafka

import (
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cairn-io/cairn/internal/broker"
)

// configTestBroker is a test broker and a client of it, closed with the test.
func configTestBroker(t *testing.T) (*Server, *broker.Broker, *kgo.Client) {
	t.Helper()
	s, b, addr := serveTestBroker(t, nil, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return s, b, cl
}

// An alter builds the new overrides from this broker's view of the current ones. A change
// made through another broker that the view had not shown yet (kadm sends each cluster
// alter to any broker) is kept, not undone: the chaos suite once lost super.users this way
// when authorizer.class.name was set through a different broker right after it.
func TestAlterKeepsAChangeItsViewHadNotShown(t *testing.T) {
	s, b, cl := configTestBroker(t)
	ctx := adminCtx(t)
	adm := kadm.NewClient(cl)
	if got := createTopics(t, ctx, cl, "t")["t"]; got.ErrorCode != 0 {
		t.Fatalf("creating t: code %d", got.ErrorCode)
	}

	var attempts []int
	s.beforeConfigChange = func(attempt int) {
		attempts = append(attempts, attempt)
		if attempt > 0 {
			return
		}
		// The change through "another broker", landing between our read and our proposal.
		if cur := b.ClusterConfigOverrides(); len(cur) == 0 {
			if err := b.SetClusterConfig(map[string]string{"super.users": "User:admin"}); err != nil {
				t.Error(err)
			}
			return
		}
		cur, _, _ := b.TopicConfigOverrides("t")
		cur["segment.ms"] = "600000"
		if err := b.SetTopicConfig("t", cur); err != nil {
			t.Error(err)
		}
	}
	set := func(name, value string) []kadm.AlterConfig {
		return []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}}
	}
	if _, err := adm.AlterBrokerConfigs(ctx, set("log.retention.ms", "7200000")); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"super.users": "User:admin", "log.retention.ms": "7200000"}
	if got := b.ClusterConfigOverrides(); !maps.Equal(got, want) {
		t.Fatalf("cluster overrides %v, want %v", got, want)
	}
	if len(attempts) != 2 {
		t.Fatalf("cluster alter attempts %v, want one refused and one that applied", attempts)
	}

	attempts = nil
	resp, err := adm.AlterTopicConfigs(ctx, set("retention.ms", "3600000"), "t")
	if err == nil {
		err = resp[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := b.TopicConfigOverrides("t"); !maps.Equal(got, map[string]string{"segment.ms": "600000", "retention.ms": "3600000"}) {
		t.Fatalf("topic overrides %v", got)
	}
}

// An alter that meets a concurrent change on every attempt gives up with a clear error and
// stores nothing of its own.
func TestAlterGivesUpUnderEndlessConcurrentChanges(t *testing.T) {
	s, b, cl := configTestBroker(t)
	ctx := adminCtx(t)
	n := 0
	s.beforeConfigChange = func(int) {
		n++
		if err := b.SetClusterConfig(map[string]string{"log.retention.ms": strings.Repeat("1", n)}); err != nil {
			t.Error(err)
		}
	}
	resp, err := kadm.NewClient(cl).AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.segment.bytes", Value: kadm.StringPtr("1048576")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp[0].Err != kerr.InvalidUpdateVersion || !strings.Contains(resp[0].ErrMessage, "try again") {
		t.Fatalf("got %v (%s), want INVALID_UPDATE_VERSION saying to try again", resp[0].Err, resp[0].ErrMessage)
	}
	if got := b.ClusterConfigOverrides(); !maps.Equal(got, map[string]string{"log.retention.ms": strings.Repeat("1", alterAttempts)}) {
		t.Fatalf("cluster overrides %v: the refused alter stored something", got)
	}
}
