package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// `cairn txn`: list and describe transactions as their coordinators see them, through
// ListTransactions and DescribeTransactions (kadm finds each id's coordinator), like
// kafka-transactions.sh list|describe.

func newTxnCmd() *cobra.Command {
	gf := &groupFlags{}
	cmd := &cobra.Command{
		Use:   "txn",
		Short: "List and describe transactions (transactional ids) as their coordinators see them",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	gf.register(cmd, true)
	cmd.PersistentFlags().DurationVar(&gf.timeout, "timeout", defaultAdminTimeout, "time limit for the command's requests to the cluster")
	cmd.AddCommand(newTxnListCmd(gf), newTxnDescribeCmd(gf))
	return cmd
}

// txnStates are the states ListTransactions filters on, as Kafka names them.
var txnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"}

func newTxnListCmd(gf *groupFlags) *cobra.Command {
	var states []string
	var pids []int64
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List transactional ids with their producer id, state and coordinator",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range states {
				if !slices.Contains(txnStates, s) {
					return fmt.Errorf("--state %q: want one of %s", s, strings.Join(txnStates, ", "))
				}
			}
			return gf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				listed, err := adm.ListTransactions(ctx, pids, states)
				switch {
				case partialShardError(err):
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: some brokers did not list their transactions: %v\n", err)
				case err != nil:
					return gf.requestError(ctx, cmd, adm, "listing transactions", err, kmsg.ListTransactions)
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "TRANSACTIONAL-ID\tPRODUCER-ID\tSTATE\tCOORDINATOR")
				for _, l := range listed.Sorted() {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", l.TxnID, l.ProducerID, l.State, l.Coordinator)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only transactions in these states ("+strings.Join(txnStates, ", ")+")")
	cmd.Flags().Int64SliceVar(&pids, "producer-id", nil, "only transactions of these producer ids")
	return cmd
}

func newTxnDescribeCmd(gf *groupFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe TRANSACTIONAL-ID [TRANSACTIONAL-ID...]",
		Short: "Show a transaction's producer id and epoch, state, timeout, start time and partitions",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			for _, id := range ids {
				if id == "" {
					return errors.New("transactional id must not be empty")
				}
			}
			return gf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeTransactions(ctx, ids...)
				if err != nil && !partialShardError(err) && len(described) == 0 {
					return gf.requestError(ctx, cmd, adm, "describing transactions", err, kmsg.DescribeTransactions)
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "TRANSACTIONAL-ID\tPRODUCER-ID\tEPOCH\tSTATE\tTIMEOUT\tSTARTED\tCOORDINATOR\tPARTITIONS")
				var errs []error
				for _, id := range ids {
					d, ok := described[id]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("%s: no answer from its coordinator", id))
						continue
					case d.Err != nil:
						errs = append(errs, fmt.Errorf("%s: %w", id, d.Err))
						continue
					}
					started := "-"
					if d.StartTimestamp > 0 {
						started = time.UnixMilli(d.StartTimestamp).UTC().Format(time.RFC3339)
					}
					var parts []string
					for topic, ps := range d.Topics {
						for p := range ps {
							parts = append(parts, topic+"/"+strconv.Itoa(int(p)))
						}
					}
					sort.Strings(parts)
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%d\t%s\n", d.TxnID, d.ProducerID, d.ProducerEpoch, d.State,
						time.Duration(d.TimeoutMillis)*time.Millisecond, started, d.Coordinator, dash(strings.Join(parts, ",")))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				return errors.Join(errs...)
			})
		},
	}
}
