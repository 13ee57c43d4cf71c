package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-io/cairn/internal/broker"
)

// The transaction coordinator's metrics, read at each scrape.
var (
	descTxnOngoing  = prometheus.NewDesc("cairn_txn_ongoing", "Transactions open or being completed on the __transaction_state partitions this broker leads.", nil, nil)
	descTxnTimedOut = prometheus.NewDesc("cairn_txn_aborted_by_timeout_total", "Transactions this broker's coordinator aborted because they stayed open past their timeout.", nil, nil)
	descTxnMarkers  = prometheus.NewDesc("cairn_txn_markers_written_total", "Commit and abort markers this broker's coordinator had acknowledged by a partition leader.", nil, nil)
)

type txnCollector struct{ b *broker.Broker }

func (c *txnCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, descTxnOngoing, descTxnTimedOut, descTxnMarkers)
}

func (c *txnCollector) Collect(ch chan<- prometheus.Metric) {
	co := c.b.Txns()
	if co == nil {
		return
	}
	st := co.Stats()
	ch <- prometheus.MustNewConstMetric(descTxnOngoing, prometheus.GaugeValue, float64(st.Ongoing))
	ch <- prometheus.MustNewConstMetric(descTxnTimedOut, prometheus.CounterValue, float64(st.AbortsByTimeout))
	ch <- prometheus.MustNewConstMetric(descTxnMarkers, prometheus.CounterValue, float64(st.MarkersWritten))
}
