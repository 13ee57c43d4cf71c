package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// `cairn cluster partitions force-recover`: the disaster procedure for partitions that
// lost a majority of their replicas for good (docs/operations.md, "Recovering from a lost
// majority"). It prints the plan the broker computes (GET /v1/partitions/majority_lost),
// asks for confirmation, then recovers what was confirmed, naming each partition's base
// so that a plan that changed meanwhile is refused rather than applied unseen.

// lostPartition is one entry of GET /v1/partitions/majority_lost.
type lostPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Dead      []int32 `json:"dead"`
	Survivors []struct {
		NodeID    int32 `json:"node_id"`
		Reachable bool  `json:"reachable"`
		Found     bool  `json:"found"`
		LogEnd    int64 `json:"log_end"`
		Flushed   int64 `json:"flushed"`
		Committed int64 `json:"committed"`
	} `json:"survivors"`
	Base            int32  `json:"base"`
	LastKnownCommit int64  `json:"last_known_commit"`
	MayLose         int64  `json:"may_lose"`
	Problem         string `json:"problem"`
}

// recoverRequest is the body of POST /v1/partitions/force_recover_from_nodes: each
// partition with the base the operator was shown, so that a changed plan is refused.
type recoverRequest struct {
	DeadNodes  []int32              `json:"dead_nodes"`
	Partitions []confirmedPartition `json:"partitions"`
}

type confirmedPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Base      int32  `json:"base"`
}

type recoverResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Base      int32  `json:"base"`
	MayLose   int64  `json:"may_lose"`
	Error     string `json:"error"`
}

func newPartitionsForceRecoverCmd(cf *clusterFlags) *cobra.Command {
	var (
		fromNodes string
		only      string
		yes       bool
	)
	cmd := &cobra.Command{
		Use:   "force-recover --from-nodes 2,3 [--partition TOPIC/PARTITION] [--yes]",
		Short: "Rebuild partitions that lost a majority of their replicas for good from a survivor (may lose data)",
		Long: `Rebuild every partition that has no majority of replicas without the given dead brokers
from its most up-to-date surviving replica. Raft cannot do this by itself: a majority must
agree to every change, and the majority is gone. The dead brokers must be stopped for good.
The command prints, for each partition, the survivor it rebuilds from and how many
committed offsets that survivor lacks (they are lost), and asks for confirmation. The other
survivors then copy the base's log again. Afterwards, restore the replication factor with
'cairn cluster partitions move' or decommission the dead brokers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dead, err := parseBrokerList(fromNodes)
			if err != nil || len(dead) == 0 {
				return fmt.Errorf("--from-nodes is required: the dead brokers, e.g. --from-nodes 2,3")
			}
			var ref *partitionRef
			if only != "" {
				r, err := parsePartitionRef(only)
				if err != nil {
					return err
				}
				ref = &r
			}
			var plan []lostPartition
			ids := make([]string, len(dead))
			for i, id := range dead {
				ids[i] = strconv.Itoa(int(id))
			}
			q := url.Values{"dead_nodes": {strings.Join(ids, ",")}}
			body, err := cf.get(cmd, "/v1/partitions/majority_lost?"+q.Encode(), &plan)
			if err != nil {
				return err
			}
			if ref != nil {
				var keep []lostPartition
				for _, lp := range plan {
					if lp.Topic == ref.topic && lp.Partition == ref.partition {
						keep = append(keep, lp)
					}
				}
				plan = keep
			}
			out := cmd.OutOrStdout()
			if cf.json && !yes {
				return printRaw(out, body) // the plan only: a machine confirms with --yes
			}
			if len(plan) == 0 {
				fmt.Fprintf(out, "no partition lost its majority with brokers %s gone: nothing to recover\n", int32List(dead))
				return nil
			}
			if !cf.json {
				printRecoveryPlan(out, plan)
			}
			req := recoverRequest{DeadNodes: dead}
			for _, lp := range plan {
				if lp.Problem == "" {
					req.Partitions = append(req.Partitions, confirmedPartition{lp.Topic, lp.Partition, lp.Base})
				}
			}
			if len(req.Partitions) == 0 {
				return fmt.Errorf("no partition can be recovered now (see the problems above)")
			}
			if !yes && !confirm(cmd.InOrStdin(), out, fmt.Sprintf("Force-recover %d partition(s)? Data shown under MAY LOSE is lost. Type 'yes' to go on: ", len(req.Partitions))) {
				return fmt.Errorf("not confirmed: nothing was changed")
			}
			body, err = cf.call(cmd, http.MethodPost, "/v1/partitions/force_recover_from_nodes", req)
			if err != nil {
				return err
			}
			if cf.json {
				return printRaw(out, body)
			}
			var results []recoverResult
			if err := json.Unmarshal(body, &results); err != nil {
				return fmt.Errorf("reading the answer: %w", err)
			}
			failed := 0
			for _, r := range results {
				ref := partitionRef{r.Topic, r.Partition}
				if r.Error != "" {
					failed++
					fmt.Fprintf(out, "%s: refused: %s\n", ref, r.Error)
					continue
				}
				fmt.Fprintf(out, "%s: rebuilding from broker %d\n", ref, r.Base)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d partition(s) were not recovered", failed, len(results))
			}
			fmt.Fprintln(out, "follow the survivors' catch-up with `cairn cluster partitions move-status --watch`")
			return nil
		},
	}
	cmd.Flags().StringVar(&fromNodes, "from-nodes", "", "the brokers lost for good, comma-separated ids")
	cmd.Flags().StringVar(&only, "partition", "", "recover only this partition (TOPIC/PARTITION)")
	cmd.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
	return cmd
}

func printRecoveryPlan(w io.Writer, plan []lostPartition) {
	tw := newTable(w)
	fmt.Fprintln(tw, "PARTITION\tREPLICAS\tDEAD\tBASE\tBASE LOG END\tLAST KNOWN COMMIT\tMAY LOSE\tPROBLEM")
	for _, lp := range plan {
		base, logEnd := "-", "-"
		for _, s := range lp.Survivors {
			if s.NodeID == lp.Base {
				base, logEnd = fmt.Sprint(s.NodeID), fmt.Sprint(s.LogEnd)
			}
		}
		mayLose := fmt.Sprintf("%d offsets", lp.MayLose)
		if lp.Problem != "" {
			mayLose = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", partitionRef{lp.Topic, lp.Partition}, int32List(lp.Replicas),
			int32List(lp.Dead), base, logEnd, lp.LastKnownCommit, mayLose, lp.Problem)
	}
	tw.Flush()
	fmt.Fprintln(w, "MAY LOSE counts committed offsets the base lacks, as far as the survivors know the commit;")
	fmt.Fprintln(w, "the dead leader may have acknowledged up to a heartbeat more that no survivor heard of.")
}

// confirm asks question on w and reports whether the answer read from r is "yes".
func confirm(r io.Reader, w io.Writer, question string) bool {
	fmt.Fprint(w, question)
	line, _ := bufio.NewReader(r).ReadString('\n')
	return strings.TrimSpace(line) == "yes"
}
