package main

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// `cluster decommission`, `decommission-status` and `recommission` (admin API
// /v1/brokers/{id}/decommission and .../recommission).

// decommissionStatus is GET /v1/brokers/{id}/decommission.
type decommissionStatus struct {
	Finished           bool     `json:"finished"`
	ReplicasLeft       int64    `json:"replicas_left"`
	AllocationFailures []string `json:"allocation_failures"`
	Partitions         []struct {
		Topic      string  `json:"topic"`
		Partition  int32   `json:"partition"`
		MovingTo   []int32 `json:"moving_to"`
		BytesMoved int64   `json:"bytes_moved"`
		BytesLeft  int64   `json:"bytes_left"`
	} `json:"partitions"`
}

func brokerPath(id int32, what string) string {
	return "/v1/brokers/" + strconv.Itoa(int(id)) + "/" + what
}

func newClusterDecommissionCmds(cf *clusterFlags) []*cobra.Command {
	change := func(use, short, what, done string) *cobra.Command {
		return &cobra.Command{
			Use:   use + " BROKER",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				id, err := parseBrokerID(args[0])
				if err != nil {
					return err
				}
				body, err := cf.call(cmd, http.MethodPut, brokerPath(id, what), nil)
				if err != nil {
					return err
				}
				if cf.json {
					return printRaw(cmd.OutOrStdout(), body)
				}
				fmt.Fprintln(cmd.OutOrStdout(), strings.ReplaceAll(done, "BROKER", strconv.Itoa(int(id))))
				return nil
			},
		}
	}
	var (
		watch    bool
		interval time.Duration
	)
	status := &cobra.Command{
		Use:   "decommission-status BROKER",
		Short: "Show a decommission: replicas left, partitions moving and bytes, partitions that could not be placed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseBrokerID(args[0])
			if err != nil {
				return err
			}
			if watch && interval <= 0 {
				return fmt.Errorf("--interval must be positive")
			}
			if watch && cf.json {
				return fmt.Errorf("--watch and --json do not go together: --json prints one answer")
			}
			ctx, stop := signalContext(cmdContext(cmd))
			defer stop()
			cmd.SetContext(ctx)
			for {
				var st decommissionStatus
				body, err := cf.get(cmd, brokerPath(id, "decommission"), &st)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				if cf.json {
					return printRaw(cmd.OutOrStdout(), body)
				}
				printDecommission(cmd.OutOrStdout(), id, st)
				if !watch || st.Finished {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
				fmt.Fprintln(cmd.OutOrStdout())
			}
		},
	}
	status.Flags().BoolVarP(&watch, "watch", "w", false, "poll until the decommission finishes")
	status.Flags().DurationVar(&interval, "interval", 2*time.Second, "time between polls with --watch")
	return []*cobra.Command{
		change("decommission", "Move every replica off a broker (rack-aware), then take it out of the controller group", "decommission",
			"decommissioning broker BROKER: its replicas are moving to the other brokers (follow with `cairn cluster decommission-status BROKER --watch`)"),
		status,
		change("recommission", "Stop a decommission before it finishes: moves that can still be cancelled go back", "recommission",
			"broker BROKER recommissioned: it takes replicas again"),
	}
}

func printDecommission(out io.Writer, id int32, st decommissionStatus) {
	state := "draining"
	if st.Finished {
		state = "decommissioned: it holds no replica and has left the controller group; it can be stopped"
	}
	fmt.Fprintf(out, "Broker %d: %s\n", id, state)
	fmt.Fprintf(out, "Replicas left: %d\n", st.ReplicasLeft)
	if len(st.Partitions) > 0 {
		tw := newTable(out)
		fmt.Fprintln(tw, "PARTITION\tMOVING TO\tMOVED\tLEFT")
		for _, p := range st.Partitions {
			to := make([]string, len(p.MovingTo))
			for i, id := range p.MovingTo {
				to[i] = strconv.Itoa(int(id))
			}
			fmt.Fprintf(tw, "%s/%d\t%s\t%d B\t%d B\n", p.Topic, p.Partition, strings.Join(to, ","), p.BytesMoved, p.BytesLeft)
		}
		tw.Flush()
	}
	for _, f := range st.AllocationFailures {
		fmt.Fprint(out, wrap("  cannot place: ", f, outputWidth))
	}
}
