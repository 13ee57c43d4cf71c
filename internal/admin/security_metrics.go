package admin

import "github.com/prometheus/client_golang/prometheus"

// AuthenticationCounter is what the Kafka server counts of SASL authentications
// (kafka.Server implements it); the metric reads it at each scrape.
type AuthenticationCounter interface {
	AuthenticationFailures() int64
}

// WatchAuthentication exports the Kafka server's failed SASL authentications as
// cairn_kafka_authentication_failures_total. Call it once, when the server exists: the
// metrics are built before it.
func (m *Metrics) WatchAuthentication(k AuthenticationCounter) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "cairn_kafka_authentication_failures_total",
		Help: "SASL authentications that failed (wrong password, unknown user or mechanism, malformed exchange, a re-authentication as another user); each closed its connection.",
	}, func() float64 { return float64(k.AuthenticationFailures()) }))
}
