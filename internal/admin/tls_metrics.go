package admin

import "github.com/prometheus/client_golang/prometheus"

// TLSRefusals are the connections the Kafka TLS listeners closed before serving a request,
// by reason; HandshakeFailures includes PlaintextClients.
type TLSRefusals struct {
	HandshakeFailures, PlaintextClients, UnmappedPrincipals uint64
}

var descTLSRefused = prometheus.NewDesc("cairn_kafka_tls_refused_connections_total",
	"Connections to a Kafka TLS listener closed before any request was served, by reason: handshake (every failed TLS handshake: no or a bad client certificate, an old protocol, garbage, silence past the 10 s deadline), plaintext (a client that spoke plaintext on the TLS port; also counted in handshake), unmapped_principal (a client certificate that no ssl.principal.mapping.rules rule maps).",
	[]string{"reason"}, nil)

type tlsCollector struct{ stats func() TLSRefusals }

func (c tlsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descTLSRefused }

func (c tlsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for _, r := range []struct {
		reason string
		n      uint64
	}{{"handshake", st.HandshakeFailures}, {"plaintext", st.PlaintextClients}, {"unmapped_principal", st.UnmappedPrincipals}} {
		ch <- prometheus.MustNewConstMetric(descTLSRefused, prometheus.CounterValue, float64(r.n), r.reason)
	}
}

// RegisterTLSRefusals exposes the Kafka TLS listeners' refusal counters, read from stats at
// each scrape. Call it once, when the node serves a TLS listener.
func (m *Metrics) RegisterTLSRefusals(stats func() TLSRefusals) {
	m.reg.MustRegister(tlsCollector{stats: stats})
}
