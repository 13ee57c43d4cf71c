// Package admin owns the node's HTTP admin surface: readiness, the per-partition boundary
// view, the cluster health overview (health.go), the broker list, maintenance mode,
// leadership transfer and the leader balancer's status (brokers.go), decommission
// (decommission.go), partition moves (moves.go), SCRAM users (users.go), ACLs (acls.go),
// the web console's mount and its view of the broker (console.go; the pages are
// internal/console's), Prometheus metrics and pprof profiles, all behind authentication and authorisation when
// security is on (auth.go). Requests that change the cluster it hands to the broker's
// operations, which propose them to the controller or ask the partition's leader; it reads
// partitions but must never change partition state itself, decide or validate metadata, or
// speak the Kafka protocol.
package admin

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/partition"
)

// Metrics records Kafka request metrics and exposes partition boundaries as gauges.
type Metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	bytesIn     prometheus.Counter
	bytesOut    prometheus.Counter
	connections prometheus.Gauge
	// responseBytes counts response bytes by API; byKey holds each API's counter once it
	// served a request, so a request adds to it without the vector's lookup and lock.
	responseBytes *prometheus.CounterVec
	byKey         [kmsg.MaxKey + 2]atomic.Pointer[prometheus.Counter] // the last: unknown keys
}

// NewMetrics builds the registry for b.
func NewMetrics(b *broker.Broker) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_kafka_requests_total", Help: "Kafka requests served, by API.",
		}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cairn_kafka_request_duration_seconds",
			Help:    "Time from reading a Kafka request to writing its response, by API.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"api"}),
		bytesIn:     prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_kafka_bytes_in_total", Help: "Kafka request bytes read."}),
		bytesOut:    prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_kafka_bytes_out_total", Help: "Kafka response bytes written."}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_kafka_connections", Help: "Open Kafka connections."}),
		responseBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_kafka_response_bytes_total", Help: "Kafka response bytes written, by API (Fetch: what consumers read from this broker).",
		}, []string{"api"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.bytesIn, m.bytesOut, m.connections, m.responseBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&partitionCollector{b: b}, &rpcCollector{b: b}, &txnCollector{b: b}, &raftCollector{b: b})
	return m
}

// ObserveRequest implements kafka.Metrics.
func (m *Metrics) ObserveRequest(apiKey int16, d time.Duration, in, out int) {
	name := kmsg.NameForKey(apiKey)
	if name == "" {
		name = "Unknown"
	}
	m.requests.WithLabelValues(name).Inc()
	m.latency.WithLabelValues(name).Observe(d.Seconds())
	m.bytesIn.Add(float64(in))
	m.bytesOut.Add(float64(out))
	m.responseBytesOf(apiKey, name).Add(float64(out))
}

// responseBytesOf is the response-bytes counter of an API.
func (m *Metrics) responseBytesOf(apiKey int16, name string) prometheus.Counter {
	slot := &m.byKey[len(m.byKey)-1]
	if apiKey >= 0 && int(apiKey) < len(m.byKey)-1 {
		slot = &m.byKey[apiKey]
	}
	if c := slot.Load(); c != nil {
		return *c
	}
	c := m.responseBytes.WithLabelValues(name)
	slot.Store(&c)
	return c
}

// ConnectionOpened implements kafka.Metrics.
func (m *Metrics) ConnectionOpened() { m.connections.Inc() }

// ConnectionClosed implements kafka.Metrics.
func (m *Metrics) ConnectionClosed() { m.connections.Dec() }

var partitionLabels = []string{"topic", "partition"}

var (
	descLogStart  = prometheus.NewDesc("cairn_partition_log_start_offset", "First offset still readable.", partitionLabels, nil)
	descLogEnd    = prometheus.NewDesc("cairn_partition_log_end_offset", "Next offset past what is appended locally (possibly unflushed).", partitionLabels, nil)
	descFlushed   = prometheus.NewDesc("cairn_partition_flushed_offset", "Next offset past what is fsynced locally.", partitionLabels, nil)
	descMajority  = prometheus.NewDesc("cairn_partition_majority_replicated_offset", "Next offset past what a voting majority has written.", partitionLabels, nil)
	descCommitted = prometheus.NewDesc("cairn_partition_committed_offset", "Next offset past what is committed (flush-aware).", partitionLabels, nil)
	descVisible   = prometheus.NewDesc("cairn_partition_last_visible_offset", "High watermark: what Fetch may return.", partitionLabels, nil)
	descStable    = prometheus.NewDesc("cairn_partition_last_stable_offset", "Last stable offset: what a read_committed Fetch may return.", partitionLabels, nil)
	descStableLag = prometheus.NewDesc("cairn_partition_lso_lag", "Offsets between the last stable offset and the high watermark: held back from read_committed by open transactions.", partitionLabels, nil)
	descSize      = prometheus.NewDesc("cairn_partition_size_bytes", "Partition size on disk.", partitionLabels, nil)
	descFlushes   = prometheus.NewDesc("cairn_partition_flushes_total", "Fsync rounds run; fewer than produce requests when group commit shares them.", partitionLabels, nil)
	descLeader    = prometheus.NewDesc("cairn_partition_leader", "1 if this broker leads the partition, else 0.", partitionLabels, nil)
	descEpoch     = prometheus.NewDesc("cairn_partition_leader_epoch", "The partition's leader epoch (Raft term) as this replica knows it.", partitionLabels, nil)
	descReplicas  = prometheus.NewDesc("cairn_partition_replicas", "Voters of the partition's Raft group.", partitionLabels, nil)
	descISR       = prometheus.NewDesc("cairn_partition_isr", "In-sync replicas (leader only).", partitionLabels, nil)
	descUnderMin  = prometheus.NewDesc("cairn_partition_under_min_isr", "1 if the ISR is smaller than min.insync.replicas: acks=all produce is refused (leader only).", partitionLabels, nil)
	descAtMin     = prometheus.NewDesc("cairn_partition_at_min_isr", "1 if the ISR is exactly min.insync.replicas: one more loss refuses acks=all (leader only).", partitionLabels, nil)
	descUnderRepl = prometheus.NewDesc("cairn_partition_under_replicated", "1 if some voter is out of the ISR (leader only).", partitionLabels, nil)
	descUnderRack = prometheus.NewDesc("cairn_partition_under_min_rack_isr", "1 if the ISR spans fewer declared racks than min.insync.racks: acks=all produce is refused (leader only; 0 while min.insync.racks is 1).", partitionLabels, nil)
	descAtRack    = prometheus.NewDesc("cairn_partition_at_min_rack_isr", "1 if the ISR spans exactly min.insync.racks declared racks: one more rack lost refuses acks=all (leader only; 0 while min.insync.racks is 1).", partitionLabels, nil)

	descUnderMinCount  = prometheus.NewDesc("cairn_under_min_isr_partition_count", "Partitions this broker leads whose ISR is below min.insync.replicas.", nil, nil)
	descAtMinCount     = prometheus.NewDesc("cairn_at_min_isr_partition_count", "Partitions this broker leads whose ISR is exactly min.insync.replicas.", nil, nil)
	descUnderReplCount = prometheus.NewDesc("cairn_under_replicated_partitions", "Partitions this broker leads with a voter out of the ISR.", nil, nil)
	descUnderRackCount = prometheus.NewDesc("cairn_under_min_rack_isr_partition_count", "Partitions this broker leads whose ISR spans fewer racks than min.insync.racks.", nil, nil)
	descAtRackCount    = prometheus.NewDesc("cairn_at_min_rack_isr_partition_count", "Partitions this broker leads whose ISR spans exactly min.insync.racks racks.", nil, nil)
)

// partitionCollector reads boundaries at scrape time, so there is no gauge to keep in step.
type partitionCollector struct{ b *broker.Broker }

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, descLogStart, descLogEnd, descFlushed, descMajority, descCommitted, descVisible, descStable, descStableLag, descSize, descFlushes,
		descLeader, descEpoch, descReplicas, descISR, descUnderMin, descAtMin, descUnderRepl, descUnderRack, descAtRack,
		descUnderMinCount, descAtMinCount, descUnderReplCount, descUnderRackCount, descAtRackCount)
}

// describe sends a collector's descriptors.
func describe(ch chan<- *prometheus.Desc, descs ...*prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	var counts [5]float64 // under min ISR, at min ISR, under-replicated, under min racks, at min racks
	for _, p := range c.b.Partitions() {
		bd := p.Boundaries()
		labels := []string{p.Topic(), strconv.Itoa(int(p.ID()))}
		for _, g := range []struct {
			d *prometheus.Desc
			v int64
		}{{descLogStart, bd.LogStart}, {descLogEnd, bd.LogEnd}, {descFlushed, bd.Flushed}, {descMajority, bd.MajorityReplicated}, {descCommitted, bd.Committed}, {descVisible, bd.LastVisible}, {descStable, bd.LastStable}, {descStableLag, max(0, bd.LastVisible-bd.LastStable)}, {descSize, p.SizeBytes()}} {
			ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, float64(g.v), labels...)
		}
		ch <- prometheus.MustNewConstMetric(descFlushes, prometheus.CounterValue, float64(p.Flushes()), labels...)
		ch <- prometheus.MustNewConstMetric(descLeader, prometheus.GaugeValue, b2f(bd.IsLeader), labels...)
		ch <- prometheus.MustNewConstMetric(descEpoch, prometheus.GaugeValue, float64(bd.LeaderEpoch), labels...)
		isr, minISR, voters, leads := p.InsyncState()
		ch <- prometheus.MustNewConstMetric(descReplicas, prometheus.GaugeValue, float64(voters), labels...)
		if !leads {
			continue
		}
		under, at, underRepl := isr < minISR, isr == minISR, isr < voters
		ch <- prometheus.MustNewConstMetric(descISR, prometheus.GaugeValue, float64(isr), labels...)
		ch <- prometheus.MustNewConstMetric(descUnderMin, prometheus.GaugeValue, b2f(under), labels...)
		ch <- prometheus.MustNewConstMetric(descAtMin, prometheus.GaugeValue, b2f(at), labels...)
		ch <- prometheus.MustNewConstMetric(descUnderRepl, prometheus.GaugeValue, b2f(underRepl), labels...)
		counts[0] += b2f(under)
		counts[1] += b2f(at)
		counts[2] += b2f(underRepl)
		if rs, ok := p.RackState(); ok {
			ch <- prometheus.MustNewConstMetric(descUnderRack, prometheus.GaugeValue, b2f(rs.Under), labels...)
			ch <- prometheus.MustNewConstMetric(descAtRack, prometheus.GaugeValue, b2f(rs.At), labels...)
			counts[3] += b2f(rs.Under)
			counts[4] += b2f(rs.At)
		}
	}
	ch <- prometheus.MustNewConstMetric(descUnderMinCount, prometheus.GaugeValue, counts[0])
	ch <- prometheus.MustNewConstMetric(descAtMinCount, prometheus.GaugeValue, counts[1])
	ch <- prometheus.MustNewConstMetric(descUnderReplCount, prometheus.GaugeValue, counts[2])
	ch <- prometheus.MustNewConstMetric(descUnderRackCount, prometheus.GaugeValue, counts[3])
	ch <- prometheus.MustNewConstMetric(descAtRackCount, prometheus.GaugeValue, counts[4])
}

var peerLabels = []string{"peer"}

var (
	descRPCSentMsgs  = prometheus.NewDesc("cairn_rpc_messages_sent_total", "Inter-broker messages written to a peer.", peerLabels, nil)
	descRPCSentBytes = prometheus.NewDesc("cairn_rpc_bytes_sent_total", "Inter-broker frame bytes written to a peer.", peerLabels, nil)
	descRPCRecvBytes = prometheus.NewDesc("cairn_rpc_bytes_received_total", "Inter-broker frame bytes read from a peer.", peerLabels, nil)
	descRPCDropped   = prometheus.NewDesc("cairn_rpc_messages_dropped_total", "Messages to a peer discarded: a failed write, the peer unreachable too long, or removed (Raft resends what it still needs).", peerLabels, nil)
	descRPCRefused   = prometheus.NewDesc("cairn_rpc_send_backpressure_total", "Sends to a peer refused because its queue was full (Raft probes the peer again).", peerLabels, nil)
	descRPCQueued    = prometheus.NewDesc("cairn_rpc_queued_bytes", "Encoded bytes queued for a peer, including the batch being written.", peerLabels, nil)
	descRPCConnected = prometheus.NewDesc("cairn_rpc_peer_connected", "1 if the outbound connection to a peer is open.", peerLabels, nil)
	descRPCTLSFailed = prometheus.NewDesc("cairn_rpc_tls_handshake_failures_total", "Dials to a peer whose TLS handshake failed (rpc.tls.enabled): its certificate is not from the cluster's CA, it refused ours, or it has TLS off. The log says which.", peerLabels, nil)
	descRPCInTLS     = prometheus.NewDesc("cairn_rpc_inbound_tls_failures_total", "Inbound inter-broker connections closed because their TLS handshake failed: no certificate, one the cluster's CA did not sign, a plaintext dialler, or garbage. Nothing they sent reached Raft.", nil, nil)
	descRPCInReject  = prometheus.NewDesc("cairn_rpc_inbound_rejected_total", "Inbound inter-broker connections refused at the hello: garbage, another cluster, or addressed to another node.", nil, nil)
	descRPCUnhandled = prometheus.NewDesc("cairn_rpc_messages_unhandled_total", "Inter-broker messages received and dropped because no handler is registered for their type: a type this release does not know (a newer broker's), or one that came while the node started. The log names the first of each type and its sender.", nil, nil)
)

// rpcCollector exports the inter-broker transport's counters: a full queue or dropped
// messages explain stalled replication and unexpected elections.
type rpcCollector struct{ b *broker.Broker }

func (c *rpcCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, descRPCSentMsgs, descRPCSentBytes, descRPCRecvBytes, descRPCDropped, descRPCRefused, descRPCQueued, descRPCConnected, descRPCUnhandled,
		descRPCTLSFailed, descRPCInTLS, descRPCInReject)
}

func (c *rpcCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descRPCUnhandled, prometheus.CounterValue, float64(c.b.UnhandledRPCMessages()))
	st := c.b.RPCStats()
	ch <- prometheus.MustNewConstMetric(descRPCInTLS, prometheus.CounterValue, float64(st.InboundTLSFailures))
	ch <- prometheus.MustNewConstMetric(descRPCInReject, prometheus.CounterValue, float64(st.InboundRejected))
	for _, p := range st.Peers {
		peer := strconv.Itoa(int(p.ID))
		for _, m := range []struct {
			d *prometheus.Desc
			t prometheus.ValueType
			v float64
		}{
			{descRPCSentMsgs, prometheus.CounterValue, float64(p.MessagesSent)},
			{descRPCSentBytes, prometheus.CounterValue, float64(p.BytesSent)},
			{descRPCRecvBytes, prometheus.CounterValue, float64(p.BytesReceived)},
			{descRPCDropped, prometheus.CounterValue, float64(p.Dropped)},
			{descRPCRefused, prometheus.CounterValue, float64(p.Backpressured)},
			{descRPCQueued, prometheus.GaugeValue, float64(p.QueuedBytes)},
			{descRPCConnected, prometheus.GaugeValue, b2f(p.Connected)},
			{descRPCTLSFailed, prometheus.CounterValue, float64(p.TLSFailures)},
		} {
			ch <- prometheus.MustNewConstMetric(m.d, m.t, m.v, peer)
		}
	}
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// Server is the admin HTTP handler.
type Server struct {
	b     *broker.Broker
	m     *Metrics
	ready atomic.Bool
	mux   *http.ServeMux
	auth  *authenticator // nil: every request served, as before admin.auth existed
}

// NewServer builds the admin handler; it reports ready once SetReady(true) is called.
func NewServer(b *broker.Broker, m *Metrics) *Server {
	s := &Server{b: b, m: m, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /v1/status/ready", s.handleReady)
	s.mux.HandleFunc("GET /v1/partitions/{topic}/{partition}", s.handlePartition)
	s.mux.HandleFunc("GET /v1/cluster", s.handleCluster)
	s.mux.HandleFunc("GET /v1/topics/{topic}/contract", s.handleContract)
	s.mux.HandleFunc("POST /v1/partitions/{topic}/{partition}/replicas", s.handleMoveReplicas)
	s.mux.HandleFunc("POST /v1/partitions/{topic}/{partition}/cancel_reconfiguration", s.handleCancelMove)
	s.mux.HandleFunc("GET /v1/partitions/reconfigurations", s.handleReconfigurations)
	s.mux.HandleFunc("GET /v1/partitions/majority_lost", s.handleMajorityLost)
	s.mux.HandleFunc("POST /v1/partitions/force_recover_from_nodes", s.handleForceRecover)
	s.mux.HandleFunc("GET /v1/cluster/health_overview", s.handleHealthOverview)
	s.mux.HandleFunc("GET /v1/cluster/leader_balancer", s.handleLeaderBalancer)
	s.mux.HandleFunc("GET /v1/security/users", s.handleListUsers)
	s.mux.HandleFunc("POST /v1/security/users", s.handleCreateUser)
	s.mux.HandleFunc("DELETE /v1/security/users/{name}", s.handleDeleteUser)
	s.mux.HandleFunc("GET /v1/security/acls", s.handleListACLs)
	s.mux.HandleFunc("POST /v1/security/acls", s.handleCreateACLs)
	s.mux.HandleFunc("DELETE /v1/security/acls", s.handleDeleteACLs)
	s.mux.HandleFunc("GET /v1/brokers", s.handleBrokers)
	s.mux.HandleFunc("GET /v1/brokers/{id}/maintenance", s.handleMaintenanceStatus)
	s.mux.HandleFunc("PUT /v1/brokers/{id}/maintenance", s.handleMaintenance(true))
	s.mux.HandleFunc("DELETE /v1/brokers/{id}/maintenance", s.handleMaintenance(false))
	s.mux.HandleFunc("PUT /v1/brokers/{id}/decommission", s.handleDecommission)
	s.mux.HandleFunc("GET /v1/brokers/{id}/decommission", s.handleDecommissionStatus)
	s.mux.HandleFunc("PUT /v1/brokers/{id}/recommission", s.handleRecommission)
	s.mux.HandleFunc("POST /v1/partitions/{topic}/{partition}/transfer_leadership", s.handleTransferLeadership)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("/debug/pprof/", pprof.Index)
	s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return s
}

// SetReady flips readiness.
func (s *Server) SetReady(v bool) { s.ready.Store(v) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.auth != nil && !s.auth.admit(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// PartitionStatus is the admin API's view of one partition.
type PartitionStatus struct {
	Topic              string  `json:"topic"`
	Partition          int32   `json:"partition"`
	Leader             int32   `json:"leader"`
	LeaderEpoch        int32   `json:"leader_epoch"`
	Replicas           []int32 `json:"replicas"`
	ISR                []int32 `json:"isr"`
	IsLeader           bool    `json:"is_leader"`
	LogStart           int64   `json:"log_start_offset"`
	LogEnd             int64   `json:"log_end_offset"`
	Flushed            int64   `json:"flushed_offset"`
	MajorityReplicated int64   `json:"majority_replicated_offset"`
	Committed          int64   `json:"committed_offset"`
	LastVisible        int64   `json:"last_visible_offset"`
	WriteCaching       bool    `json:"write_caching"`
	SizeBytes          int64   `json:"size_bytes"`
	// ReplicaRacks is each replica's declared rack ("": none), in the order of Replicas.
	ReplicaRacks []ReplicaRack `json:"replica_racks"`
	// ISRRacks are the distinct declared racks the ISR spans, sorted.
	ISRRacks []string `json:"isr_racks"`
	// MinInsyncReplicas is the effective min.insync.replicas: the topic's value capped by
	// the replica count (DESIGN.md §3).
	MinInsyncReplicas int `json:"min_insync_replicas"`
	// MinInsyncRacks is the topic's min.insync.racks, uncapped (1: off).
	MinInsyncRacks int `json:"min_insync_racks"`
}

// ReplicaRack is one replica's broker id and declared rack.
type ReplicaRack struct {
	ID   int32  `json:"id"`
	Rack string `json:"rack"`
}

// replicaRacks pairs each replica with its declared rack.
func replicaRacks(replicas []int32, racks partition.Racks) []ReplicaRack {
	out := make([]ReplicaRack, len(replicas))
	for i, id := range replicas {
		out[i] = ReplicaRack{ID: id, Rack: racks[uint64(id)]}
	}
	return out
}

func (s *Server) handlePartition(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "partition must be a number"})
		return
	}
	p, kerrv := s.b.Partition(r.PathValue("topic"), int32(id))
	if kerrv != nil {
		msg := "no such topic or partition"
		if kerrv == kerr.NotLeaderForPartition {
			msg = "this broker holds no replica of the partition; ask one that does"
		}
		writeJSON(w, http.StatusNotFound, map[string]string{"error": msg})
		return
	}
	bd := p.Boundaries()
	views := s.b.PartitionViews(p.Topic())
	view := views[p.ID()]
	cfg, racks := p.Config(), p.Racks()
	writeJSON(w, http.StatusOK, PartitionStatus{
		Topic: p.Topic(), Partition: p.ID(), Leader: view.Leader, LeaderEpoch: bd.LeaderEpoch,
		IsLeader: bd.IsLeader, Replicas: view.Replicas, ISR: view.ISR,
		LogStart: bd.LogStart, LogEnd: bd.LogEnd, Flushed: bd.Flushed, MajorityReplicated: bd.MajorityReplicated,
		Committed: bd.Committed, LastVisible: bd.LastVisible, WriteCaching: cfg.WriteCaching, SizeBytes: p.SizeBytes(),
		ReplicaRacks: replicaRacks(view.Replicas, racks), ISRRacks: partition.SpannedRacks(racks, view.ISR),
		MinInsyncReplicas: max(1, min(cfg.MinInsyncReplicas, len(view.Replicas))), MinInsyncRacks: cfg.MinInsyncRacks,
	})
}

// handleCluster answers this broker's own view (its controller replica), not the
// controller leader's: comparing brokers' answers shows which one lags.
func (s *Server) handleCluster(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.b.ClusterStatus())
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
