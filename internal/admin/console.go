package admin

import (
	"context"
	"log/slog"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/console"
	"github.com/cairn-io/cairn/internal/contract"
)

// EnableConsole serves the web console (internal/console) under /console, behind the same
// authentication and authorisation as the rest of the admin API: its pages are GETs
// (DESCRIBE on the cluster), its one action a POST (ALTER). lab is nil unless the broker
// runs under --simulate-power-loss. Call it before serving.
func (s *Server) EnableConsole(lab console.Lab, lg *slog.Logger) {
	h := console.New(consoleSource{s}, lab, lg)
	s.mux.Handle("/console", h)
	s.mux.Handle("/console/", h)
}

// consoleSource is what the console reads: the broker, and the admin API's own views.
type consoleSource struct{ s *Server }

func (c consoleSource) NodeID() int32                           { return c.s.b.NodeID() }
func (c consoleSource) ClusterID() string                       { return c.s.b.ClusterID() }
func (c consoleSource) HealthOverview() broker.HealthOverview   { return c.s.b.HealthOverview() }
func (c consoleSource) BrokerSummaries() []broker.BrokerSummary { return c.s.b.BrokerSummaries() }
func (c consoleSource) Topics() []broker.TopicInfo              { return c.s.b.Topics() }
func (c consoleSource) PartitionViews(topic string) []broker.PartitionView {
	return c.s.b.PartitionViews(topic)
}
func (c consoleSource) NodeViews(ctx context.Context, q broker.NodeViewQuery) []broker.NodeView {
	return c.s.b.NodeViews(ctx, q)
}
func (c consoleSource) Contract(topic string) (contract.Contract, bool) {
	return c.s.topicContract(topic, -1)
}

func (c consoleSource) Reconfigurations() []console.Reconfiguration {
	var out []console.Reconfiguration
	for _, m := range c.s.b.PartitionReassignments(nil) {
		rc := console.Reconfiguration{Topic: m.Topic, Partition: m.Partition, From: m.Original, To: m.Target,
			Adding: m.Adding, Removing: m.Removing, Cancelled: m.Cancelled, BytesLeft: -1}
		if pr := m.Progress; pr != nil {
			rc.Phase, rc.BytesMoved, rc.BytesLeft, rc.Waiting = pr.Phase, pr.BytesMoved, pr.BytesLeft, pr.Waiting
		}
		out = append(out, rc)
	}
	return out
}
