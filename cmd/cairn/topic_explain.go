package main

import (
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cairn-io/cairn/internal/contract"
)

// `cairn topic explain TOPIC`: the topic's effective durability contract, as the admin API
// computes it from the live cluster (GET /v1/topics/{topic}/contract). It talks to the
// admin API, not the Kafka port: the answer needs the ISR, the racks and the liveness of
// every replica, which no Kafka request carries together.

func newTopicExplainCmd(tf *topicFlags) *cobra.Command {
	cf := &clusterFlags{}
	var partition int
	cmd := &cobra.Command{
		Use:   "explain TOPIC",
		Short: "Say what an acknowledged write to the topic proves, what it survives, and what is weaker now",
		Long: `Explain the topic's durability contract, computed now from its settings and the live state of
its partitions: for each acks value what a success proves (appended on the leader; written or
fsynced on N replicas in R racks), which failures it survives (a minority crash, a whole-cluster
crash, a whole-cluster power cut, the loss of each rack and of each pair of racks), what write
caching may lose, the partitions where the state now is weaker than the promise, where each
setting came from, and the Kafka properties Cairn refuses with what to set instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cf.timeout = tf.timeout
			path := "/v1/topics/" + url.PathEscape(args[0]) + "/contract"
			if cmd.Flags().Changed("partition") {
				path += "?partition=" + strconv.Itoa(partition)
			}
			var c contract.Contract
			body, err := cf.get(cmd, path, &c)
			if err != nil {
				return err
			}
			if cf.json {
				return printRaw(cmd.OutOrStdout(), body)
			}
			contract.Render(cmd.OutOrStdout(), c)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cf.adminURL, "admin-url", defaultAdminURL,
		"a broker's admin HTTP API (http://host:port); $"+adminURLEnv+" is used when the flag is not given")
	cf.registerAdminAuth(f)
	f.BoolVar(&cf.json, "json", false, "print the admin API's JSON answer unchanged")
	f.IntVar(&partition, "partition", 0, "explain the live state of this partition only")
	return cmd
}
