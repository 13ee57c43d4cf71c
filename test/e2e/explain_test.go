package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/cairn-io/cairn/internal/contract"
)

// TestTopicExplain: `cairn topic explain` against three brokers in three racks. A strict
// RF=3 topic proves fsynced on 2 replicas in 2 racks and survives the loss of any one rack;
// with write caching set on the topic the power cut costs the flush window; once a broker is
// killed, the partitions it held are named with the replica down. An unknown topic is an
// error that says so.
func TestTopicExplain(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3)
	const topic = "explained"
	adm := kadm.NewClient(clusterClient(t, bs))
	createReplicatedTopic(t, adm, topic, 2, 3)
	waitFor(t, 60*time.Second, func() bool { return allInSync(bs, topic, 2, 3) })

	explain := func(args ...string) contract.Contract {
		t.Helper()
		r := run(t, 60*time.Second, "", cairnBin, append([]string{"topic", "explain", topic, "--json", "--admin-url", bs[0].AdminAddr}, args...)...)
		var c contract.Contract
		if r.Err != nil || json.Unmarshal([]byte(r.Stdout), &c) != nil {
			t.Fatalf("topic explain: %s", r)
		}
		return c
	}
	kept := func(c contract.Contract, failure string) contract.Kept {
		all, _ := c.Promise("all")
		o, ok := all.Outcome(failure)
		if !ok {
			t.Fatalf("no outcome for %q in %+v", failure, all.Survives)
		}
		return o.Kept
	}

	c := explain()
	if all := c.Promises[2]; all.Stage != "fsynced" || all.Replicas != 2 || all.Racks != 2 || len(c.Warnings) != 0 {
		t.Fatalf("strict RF=3 over three racks: %+v, warnings %+v", all, c.Warnings)
	}
	if kept(c, "loss of rack rack-1") != contract.KeptYes || kept(c, "loss of racks rack-1 and rack-2") != contract.KeptNo ||
		kept(c, contract.ClusterPowerCut) != contract.KeptYes {
		t.Fatalf("outcomes %+v", c.Promises[2].Survives)
	}

	human := run(t, 60*time.Second, "", cairnBin, "topic", "explain", topic, "--admin-url", bs[0].AdminAddr)
	if human.Err != nil || !strings.Contains(human.Stdout, "acks=all  fsynced on at least 2 replicas in at least 2 declared racks") ||
		!strings.Contains(human.Stdout, "every partition meets the promise") {
		t.Fatalf("human form: %s", human)
	}

	cairnCLI(t, bs[0], "", "topic", "alter-config", topic, "--set", "write.caching=true")
	waitFor(t, 30*time.Second, func() bool { return explain().Promises[2].Stage == "written" })
	if c := explain(); kept(c, contract.ClusterPowerCut) != contract.KeptWindow || !strings.Contains(c.MayLose, "flush.ms=") {
		t.Fatalf("write caching: %+v, may lose %q", c.Promises[2].Survives, c.MayLose)
	}

	bs[2].Kill9()
	waitFor(t, 60*time.Second, func() bool {
		c := explain()
		down := map[int32]bool{}
		for _, w := range c.Warnings {
			if strings.Contains(w.What, "replica 3 (rack rack-3) is down") {
				down[w.Partition] = true
			}
		}
		return down[0] && down[1]
	})

	r := run(t, 60*time.Second, "", cairnBin, "topic", "explain", "no-such-topic", "--admin-url", bs[0].AdminAddr)
	if r.Err == nil || !strings.Contains(r.Stderr, `no such topic "no-such-topic"`) {
		t.Fatalf("unknown topic: %s", r)
	}
}
