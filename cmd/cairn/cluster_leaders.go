package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newClusterLeadersCmd(cf *clusterFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "leaders",
		Short: "Move partition leaderships: one partition's, or every one back to its preferred replica",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newLeadersTransferCmd(cf), newLeadersBalanceCmd(cf))
	return cmd
}

func newLeadersTransferCmd(cf *clusterFlags) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "transfer TOPIC/PARTITION --to BROKER",
		Short: "Hand a partition's leadership to another of its in-sync replicas (Raft leadership transfer)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parsePartitionRef(args[0])
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("to") {
				return errors.New("--to is required: the broker that should lead the partition")
			}
			target, err := parseBrokerID(to)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			path := ref.path() + "/transfer_leadership?target=" + strconv.Itoa(int(target))
			body, err := cf.call(cmd, http.MethodPost, path, nil)
			if err != nil {
				return err
			}
			if cf.json {
				return printRaw(cmd.OutOrStdout(), body)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "leadership of %s handed to broker %d\n", ref, target)
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the broker id to lead the partition")
	return cmd
}

// electionOutcome is one partition's result of `leaders balance`.
type electionOutcome struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int32  `json:"from"` // the leader before; -1 none
	To        int32  `json:"to"`   // the preferred replica
	Moved     bool   `json:"moved"`
	Error     string `json:"error,omitempty"`
}

func newLeadersBalanceCmd(cf *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "balance",
		Short: "Move every leadership to its preferred replica now (ElectLeaders PREFERRED, through Kafka)",
		Long: `Ask for a preferred-replica election of every partition (Kafka's ElectLeaders, as
kafka-leader-election.sh --election-type PREFERRED does): each partition whose leader is not
its first replica hands its leadership to that replica. Prints what moved, and what could
not move and why. One shot; the leader balancer does the same on its own.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cf.kafka(cmd, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error {
				md, err := adm.Metadata(ctx)
				if err != nil {
					return requestError(cmd, &cf.clientFlags, "reading the current leaders", err)
				}
				res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
				if err != nil {
					return requestError(cmd, &cf.clientFlags, "electing preferred leaders", err)
				}
				outcomes := electionOutcomes(md, res)
				return printElections(cmd, cf.json, outcomes)
			})
		},
	}
}

// electionOutcomes pairs each election result with the partition's leader before it and
// its preferred replica, sorted by partition.
func electionOutcomes(md kadm.Metadata, res kadm.ElectLeadersResults) []electionOutcome {
	out := []electionOutcome{}
	for topic, ps := range res {
		for p, r := range ps {
			o := electionOutcome{Topic: topic, Partition: p, From: -1, To: -1}
			if td, ok := md.Topics[topic]; ok {
				if pd, ok := td.Partitions[p]; ok {
					o.From = pd.Leader
					if len(pd.Replicas) > 0 {
						o.To = pd.Replicas[0]
					}
				}
			}
			switch {
			case r.Err == nil:
				o.Moved = true
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
			default:
				o.Error = brokerError(r.Err, r.ErrMessage).Error()
			}
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

func printElections(cmd *cobra.Command, asJSON bool, outcomes []electionOutcome) error {
	out := cmd.OutOrStdout()
	moved, failed := 0, 0
	for _, o := range outcomes {
		switch {
		case o.Moved:
			moved++
		case o.Error != "":
			failed++
		}
	}
	if asJSON {
		b, err := json.Marshal(outcomes)
		if err != nil {
			return err
		}
		if err := printRaw(out, b); err != nil {
			return err
		}
	} else {
		if moved+failed > 0 {
			tw := newTable(out)
			fmt.Fprintln(tw, "PARTITION\tFROM\tTO\tRESULT")
			for _, o := range outcomes {
				if !o.Moved && o.Error == "" {
					continue // already on its preferred replica
				}
				result := "moved"
				if o.Error != "" {
					result = "not moved: " + o.Error
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", partitionRef{o.Topic, o.Partition}, leaderName(o.From), leaderName(o.To), result)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "%d leaderships moved to their preferred replica, %d already there, %d not moved\n",
			moved, len(outcomes)-moved-failed, failed)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d partitions could not move to their preferred replica", failed, len(outcomes))
	}
	return nil
}

func leaderName(id int32) string {
	if id < 0 {
		return "none"
	}
	return strconv.Itoa(int(id))
}
