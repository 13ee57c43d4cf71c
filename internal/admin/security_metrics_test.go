package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/storage"
)

type countingAuth struct{ n atomic.Int64 }

func (c *countingAuth) AuthenticationFailures() int64 { return c.n.Load() }

// /metrics reports the Kafka server's failed authentications as they are at the scrape.
func TestAuthenticationFailuresMetric(t *testing.T) {
	b, err := broker.New(broker.Config{DataDir: "/d", KafkaAddr: "127.0.0.1:9092", FS: storage.NewMemFS()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := NewMetrics(b)
	var failures countingAuth
	m.WatchAuthentication(&failures)
	srv := httptest.NewServer(NewServer(b, m))
	defer srv.Close()
	failures.n.Store(3)
	code, body := get(t, srv, "/metrics")
	if code != http.StatusOK || !strings.Contains(body, "\ncairn_kafka_authentication_failures_total 3\n") {
		t.Fatalf("/metrics %d lacks the failure count:\n%s", code, body)
	}
}
