package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes of `cairn cluster health`, for scripts and probes.
const (
	exitHealthy   = 0
	exitUnhealthy = 1
	exitUnknown   = 2 // the admin API could not be asked, or answered an error
)

// healthOverview is GET /v1/cluster/health_overview.
type healthOverview struct {
	Healthy         bool           `json:"healthy"`
	ControllerID    int32          `json:"controller_id"`
	AllNodes        []int32        `json:"all_nodes"`
	NodesDown       []int32        `json:"nodes_down"`
	Leaderless      []partitionKey `json:"leaderless_partitions"`
	UnderReplicated []partitionKey `json:"under_replicated_partitions"`
	UnderMinISR     []partitionKey `json:"under_min_isr_partitions"`
	UnderMinRacks   []partitionKey `json:"under_min_racks_partitions"`
}

// partitionKey is a partition as the admin API names it.
type partitionKey struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// leaderBalancer is GET /v1/cluster/leader_balancer.
type leaderBalancer struct {
	Enabled         bool             `json:"enabled"`
	IntervalSeconds int64            `json:"interval_seconds"`
	LastRun         string           `json:"last_run"`
	Moves           int64            `json:"moves"`
	Leaders         map[string]int64 `json:"leaders"`
}

// Output limits of the human report: it fits 100 columns, and a list names at most
// maxPartitionsShown partitions (--json has every one).
const (
	outputWidth        = 100
	healthLabelWidth   = 18
	maxPartitionsShown = 20
)

func newClusterHealthCmd(cf *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "health",
		Short: "Report down brokers, leaderless and under-replicated partitions, min ISR and racks, the controller",
		Long: `Report the cluster's health as the broker behind --admin-url sees it: the brokers that are
down, the partitions without a leader, under-replicated, under min.insync.replicas or under
min.insync.racks, the controller, and the leader balancer's status.

Exit status: 0 healthy, 1 unhealthy, 2 the health could not be read (the admin API is
unreachable or answered an error).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var h healthOverview
			body, err := cf.get(cmd, "/v1/cluster/health_overview", &h)
			if err != nil {
				return &exitError{code: exitUnknown, err: err}
			}
			out := cmd.OutOrStdout()
			if cf.json {
				if err := printRaw(out, body); err != nil {
					return err
				}
			} else {
				var lb *leaderBalancer
				var lbErr error
				var got leaderBalancer
				if _, err := cf.get(cmd, "/v1/cluster/leader_balancer", &got); err == nil {
					lb = &got
				} else if !notServed(err) {
					lbErr = err
				}
				if err := printHealth(out, h, lb, lbErr); err != nil {
					return err
				}
			}
			if !h.Healthy {
				return &exitError{code: exitUnhealthy}
			}
			return nil
		},
	}
}

// printHealth writes the human health report. lb is nil when the broker has no leader
// balancer endpoint (lbErr says why when it failed otherwise).
func printHealth(w io.Writer, h healthOverview, lb *leaderBalancer, lbErr error) error {
	var b strings.Builder
	state := "healthy"
	if !h.Healthy {
		state = "UNHEALTHY"
	}
	line := func(label, value string) {
		b.WriteString(wrap(fmt.Sprintf("%-*s", healthLabelWidth, label), value, outputWidth))
	}
	line("Cluster:", state)
	controller := "none (no controller leader)"
	if h.ControllerID >= 0 {
		controller = "broker " + strconv.Itoa(int(h.ControllerID))
	}
	line("Controller:", controller)
	line("Brokers:", idList(h.AllNodes))
	down := "none"
	if len(h.NodesDown) > 0 {
		down = idList(h.NodesDown)
	}
	line("Down:", down)
	line("Leaderless:", partitionList(h.Leaderless))
	line("Under-replicated:", partitionList(h.UnderReplicated))
	line("Under min ISR:", partitionList(h.UnderMinISR))
	line("Under min racks:", partitionList(h.UnderMinRacks))
	switch {
	case lb != nil:
		line("Leader balancer:", balancerSummary(*lb))
	case lbErr != nil:
		line("Leader balancer:", "status unavailable: "+lbErr.Error())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func idList(ids []int32) string {
	if len(ids) == 0 {
		return "none"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ", ")
}

// partitionList renders a health list: "none", or the count and the first partitions.
func partitionList(ps []partitionKey) string {
	if len(ps) == 0 {
		return "none"
	}
	noun := "partitions"
	if len(ps) == 1 {
		noun = "partition"
	}
	names := make([]string, 0, min(len(ps), maxPartitionsShown))
	for _, p := range ps[:min(len(ps), maxPartitionsShown)] {
		names = append(names, p.Topic+"/"+strconv.Itoa(int(p.Partition)))
	}
	s := fmt.Sprintf("%d %s: %s", len(ps), noun, strings.Join(names, ", "))
	if len(ps) > maxPartitionsShown {
		s += fmt.Sprintf(" and %d more (--json lists every one)", len(ps)-maxPartitionsShown)
	}
	return s
}

func balancerSummary(lb leaderBalancer) string {
	if !lb.Enabled {
		return "off"
	}
	s := "on"
	if lb.IntervalSeconds > 0 {
		s += fmt.Sprintf(", every %ds", lb.IntervalSeconds)
	}
	if lb.LastRun == "" {
		s += ", not run yet"
	} else {
		s += ", last run " + lb.LastRun
	}
	s += fmt.Sprintf(", %d moves", lb.Moves)
	if len(lb.Leaders) > 0 {
		ids := make([]int, 0, len(lb.Leaders))
		for k := range lb.Leaders {
			if id, err := strconv.Atoi(k); err == nil {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprintf("%d:%d", id, lb.Leaders[strconv.Itoa(id)])
		}
		s += "; leaders per broker " + strings.Join(parts, " ")
	}
	return s
}

// wrap writes prefix then value, breaking value at spaces so that no line is wider than
// width; continuation lines are indented by the prefix's width.
func wrap(prefix, value string, width int) string {
	var b strings.Builder
	indent := strings.Repeat(" ", len(prefix))
	cur := prefix
	for i, word := range strings.Fields(value) {
		if i > 0 && len(cur)+1+len(word) > width {
			b.WriteString(strings.TrimRight(cur, " ") + "\n")
			cur = indent + word
			continue
		}
		if i > 0 {
			cur += " "
		}
		cur += word
	}
	b.WriteString(strings.TrimRight(cur, " ") + "\n")
	return b.String()
}
