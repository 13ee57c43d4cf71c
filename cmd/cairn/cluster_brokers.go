package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"
)

// brokerStatus is one entry of GET /v1/brokers.
type brokerStatus struct {
	NodeID      int32  `json:"node_id"`
	KafkaAddr   string `json:"kafka_addr"`
	RPCAddr     string `json:"rpc_addr"`
	Rack        string `json:"rack"`
	IsAlive     bool   `json:"is_alive"`
	Maintenance bool   `json:"maintenance"`
	Membership  string `json:"membership_status"`
	Leaders     int64  `json:"leaders"`
	Replicas    int64  `json:"replicas"`
}

func newClusterBrokersCmd(cf *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "brokers",
		Short: "List the registered brokers: addresses, rack, liveness, membership, maintenance, leaders and replicas",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var brokers []brokerStatus
			body, err := cf.get(cmd, "/v1/brokers", &brokers)
			if err != nil {
				return err
			}
			if cf.json {
				return printRaw(cmd.OutOrStdout(), body)
			}
			sort.Slice(brokers, func(i, j int) bool { return brokers[i].NodeID < brokers[j].NodeID })
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "ID\tKAFKA\tRPC\tRACK\tSTATUS\tMEMBERSHIP\tMAINTENANCE\tLEADERS\tREPLICAS")
			for _, b := range brokers {
				status, rack, maint := "up", b.Rack, "no"
				if !b.IsAlive {
					status = "DOWN"
				}
				if rack == "" {
					rack = "-"
				}
				if b.Maintenance {
					maint = "yes"
				}
				membership := b.Membership
				if membership == "" {
					membership = "active" // a broker from before decommission
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", b.NodeID, b.KafkaAddr, b.RPCAddr, rack, status, membership, maint, b.Leaders, b.Replicas)
			}
			return tw.Flush()
		},
	}
}
