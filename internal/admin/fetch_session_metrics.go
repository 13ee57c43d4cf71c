package admin

import "github.com/prometheus/client_golang/prometheus"

var (
	descFetchSessions = prometheus.NewDesc("cairn_fetch_sessions",
		"Fetch sessions (KIP-227) this broker keeps for its consumers (max.incremental.fetch.session.cache.slots bounds them).", nil, nil)
	descFetchSessionPartitions = prometheus.NewDesc("cairn_fetch_session_partitions",
		"Partitions the fetch sessions cache, all sessions together (at most 500,000).", nil, nil)
	descFetchSessionEvictions = prometheus.NewDesc("cairn_fetch_session_evictions_total",
		"Fetch sessions evicted to make room for a new one: a steady rise means more consumers than slots, whose fetches then fall back to full ones.", nil, nil)
)

type fetchSessionCollector struct {
	stats func() (sessions, partitions int, evictions uint64)
}

func (c fetchSessionCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, descFetchSessions, descFetchSessionPartitions, descFetchSessionEvictions)
}

func (c fetchSessionCollector) Collect(ch chan<- prometheus.Metric) {
	n, parts, ev := c.stats()
	ch <- prometheus.MustNewConstMetric(descFetchSessions, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(descFetchSessionPartitions, prometheus.GaugeValue, float64(parts))
	ch <- prometheus.MustNewConstMetric(descFetchSessionEvictions, prometheus.CounterValue, float64(ev))
}

// RegisterFetchSessions exposes the Kafka server's fetch session cache, read from stats at
// each scrape. Call it once.
func (m *Metrics) RegisterFetchSessions(stats func() (sessions, partitions int, evictions uint64)) {
	m.reg.MustRegister(fetchSessionCollector{stats: stats})
}
