package e2e

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLabFsyncHold: on a broker started with --simulate-power-loss, PUT /v1/lab/fsync_hold
// stops its fsyncs. A write-caching topic then acknowledges acks=all writes that are written
// and visible but never flushed, and a kill -9 (a power cut here) loses exactly those; the
// writes flushed before the hold survive. A broker on a real disk does not serve the gate.
func TestLabFsyncHold(t *testing.T) {
	t.Parallel()
	plain := startBroker(t, BrokerOpts{})
	if code := labRequest(t, plain, http.MethodPut); code != http.StatusNotFound {
		t.Fatalf("fsync hold on a broker on a real disk: HTTP %d, want 404", code)
	}

	b := startBroker(t, BrokerOpts{Args: []string{"--simulate-power-loss"}})
	const topic = "held"
	caching := "true"
	createTopic(t, b.Admin(t), topic, 1, map[string]*string{"write.caching": &caching})
	cl := b.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	produceN := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := cl.ProduceSync(ctxFor(t, 20*time.Second), kgo.StringRecord("r"+strconv.Itoa(i))).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produceN(0, 10)
	waitFor(t, 30*time.Second, func() bool { st := b.Partition(t, topic, 0); return st.Flushed == 10 && st.LogEnd == 10 })

	if code := labRequest(t, b, http.MethodPut); code != http.StatusOK {
		t.Fatalf("hold: HTTP %d", code)
	}
	produceN(10, 5) // acknowledged: written on the (only) replica, not fsynced
	st := b.Partition(t, topic, 0)
	if st.LogEnd != 15 || st.LastVisible != 15 || st.Flushed != 10 {
		t.Fatalf("while fsyncs are held: %+v, want log end and visible 15, flushed 10", st)
	}

	b.Kill9()
	b.Restart()
	waitFor(t, 30*time.Second, func() bool { st := b.Partition(t, topic, 0); return st.IsLeader && st.LastVisible == 10 })
	if st := b.Partition(t, topic, 0); st.LogEnd != 10 {
		t.Fatalf("after the power cut: %+v, want the 10 flushed records only", st)
	}
}

func labRequest(t *testing.T, b *Broker, method string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t, 5*time.Second), method, "http://"+b.AdminAddr+"/v1/lab/fsync_hold", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
