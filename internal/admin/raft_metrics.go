package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-io/cairn/internal/broker"
)

// The raft host's view across all of a broker's replicas: how many elections its replicas
// start and win, and how much work waits for its workers and flushers. An election storm
// (terms that move while nobody keeps a leadership) shows as campaigns far above wins, and
// its cause as queues that do not drain within an election timeout.
var (
	descRaftPreCampaigns   = prometheus.NewDesc("cairn_raft_precampaigns_total", "Replicas on this broker that became pre-candidate (a pre-vote, which moves no term).", nil, nil)
	descRaftCampaigns      = prometheus.NewDesc("cairn_raft_campaigns_total", "Replicas on this broker that became candidate: an election at a new term.", nil, nil)
	descRaftWins           = prometheus.NewDesc("cairn_raft_elections_won_total", "Replicas on this broker that became leader.", nil, nil)
	descRaftReadyQueued    = prometheus.NewDesc("cairn_raft_ready_queued_groups", "Raft groups waiting for a worker of this broker's raft host now.", nil, nil)
	descRaftFlushQueued    = prometheus.NewDesc("cairn_raft_flush_queued_groups", "Raft groups waiting for a flusher (an fsync round) now.", nil, nil)
	descRaftLeaderless     = prometheus.NewDesc("cairn_raft_leaderless_replicas", "Replicas on this broker that know no leader now (neither lead nor follow one): elections under way.", nil, nil)
	descRaftElectionWrites = prometheus.NewDesc("cairn_raft_election_writes_queued", "Queued writes an election waits on (a new term or vote, a vote answer); above the election backlog, leaderless replicas stop their election clocks.", nil, nil)
)

type raftCollector struct{ b *broker.Broker }

func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, descRaftPreCampaigns, descRaftCampaigns, descRaftWins, descRaftReadyQueued, descRaftFlushQueued, descRaftElectionWrites, descRaftLeaderless)
}

func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.b.RaftStats()
	ch <- prometheus.MustNewConstMetric(descRaftPreCampaigns, prometheus.CounterValue, float64(st.PreCampaigns))
	ch <- prometheus.MustNewConstMetric(descRaftCampaigns, prometheus.CounterValue, float64(st.Campaigns))
	ch <- prometheus.MustNewConstMetric(descRaftWins, prometheus.CounterValue, float64(st.Wins))
	ch <- prometheus.MustNewConstMetric(descRaftReadyQueued, prometheus.GaugeValue, float64(st.ReadyQueued))
	ch <- prometheus.MustNewConstMetric(descRaftFlushQueued, prometheus.GaugeValue, float64(st.FlushQueued))
	ch <- prometheus.MustNewConstMetric(descRaftElectionWrites, prometheus.GaugeValue, float64(st.ElectionWrites))
	ch <- prometheus.MustNewConstMetric(descRaftLeaderless, prometheus.GaugeValue, float64(st.Leaderless))
}
