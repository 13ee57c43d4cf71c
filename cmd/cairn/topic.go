package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicFlags are the flags shared by every `cairn topic` subcommand; they are
// persistent flags of `topic`, so both `cairn topic -b X list` and
// `cairn topic list -b X` work.
type topicFlags struct {
	clientFlags
	timeout time.Duration
}

func newTopicCmd() *cobra.Command {
	tf := &topicFlags{}
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, delete and configure topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	tf.register(cmd, true)
	cmd.PersistentFlags().DurationVar(&tf.timeout, "timeout", defaultAdminTimeout, "time limit for each admin request")
	cmd.AddCommand(
		newTopicCreateCmd(tf),
		newTopicListCmd(tf),
		newTopicDescribeCmd(tf),
		newTopicDeleteCmd(tf),
		newTopicAlterConfigCmd(tf),
		newTopicExplainCmd(tf),
	)
	return cmd
}

// admin runs fn with an admin client and a context bounded by --timeout.
func (tf *topicFlags) admin(cmd *cobra.Command, fn func(ctx context.Context, adm *kadm.Client) error) error {
	if tf.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %v", tf.timeout)
	}
	cl, err := tf.newClient(cmd)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(tf.timeout.Milliseconds(), int64(1<<31-1))))
	ctx, cancel := context.WithTimeout(cmdContext(cmd), tf.timeout)
	defer cancel()
	return fn(ctx, adm)
}

func newTopicCreateCmd(tf *topicFlags) *cobra.Command {
	var (
		partitions   int32
		replicas     int16
		configs      []string
		validateOnly bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME [NAME...]",
		Short: "Create topics",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			if partitions == 0 || partitions < -1 {
				return fmt.Errorf("--partitions must be positive or -1 (broker default), got %d", partitions)
			}
			if replicas == 0 || replicas < -1 {
				return fmt.Errorf("--replicas must be positive or -1 (broker default), got %d", replicas)
			}
			cfgs, err := parseConfigs(configs)
			if err != nil {
				return err
			}
			if err := checkTopicNames(names); err != nil {
				return err
			}
			return tf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				create := adm.CreateTopics
				verb := "created"
				if validateOnly {
					create = adm.ValidateCreateTopics
					verb = "validated"
				}
				resps, err := create(ctx, partitions, replicas, cfgs, names...)
				if err != nil {
					return requestError(cmd, &tf.clientFlags, "creating topics", err)
				}
				out := cmd.OutOrStdout()
				failed := 0
				for _, name := range names {
					r, ok := resps[name]
					switch {
					case !ok:
						failed++
						fmt.Fprintf(out, "%s: error: no answer for this topic from the broker\n", name)
					case r.Err != nil:
						failed++
						fmt.Fprintf(out, "%s: error: %v\n", name, brokerError(r.Err, r.ErrMessage))
					default:
						fmt.Fprintf(out, "%s topic %s (partitions: %s, replicas: %s)\n", verb, name,
							countOrDefault(int64(r.NumPartitions), int64(partitions)),
							countOrDefault(int64(r.ReplicationFactor), int64(replicas)))
					}
				}
				return failedCount(failed, len(names), "topics")
			})
		},
	}
	fs := cmd.Flags()
	fs.Int32VarP(&partitions, "partitions", "p", -1, "number of partitions (-1: broker default)")
	fs.Int16VarP(&replicas, "replicas", "r", -1, "replication factor (-1: broker default)")
	fs.StringArrayVarP(&configs, "config", "c", nil, "topic config key=value (repeatable)")
	fs.BoolVar(&validateOnly, "validate-only", false, "ask the broker to validate the request without creating anything")
	return cmd
}

// countOrDefault renders a partition or replica count from a create response.
// Brokers older than CreateTopics v5 answer -1; fall back to what was asked.
func countOrDefault(got, asked int64) string {
	switch {
	case got > 0:
		return strconv.FormatInt(got, 10)
	case asked > 0:
		return strconv.FormatInt(asked, 10)
	default:
		return "broker default"
	}
}

func failedCount(failed, total int, what string) error {
	if failed == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d %s failed", failed, total, what)
}

func checkTopicNames(names []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" {
			return errors.New("topic name must not be empty")
		}
		if seen[n] {
			return fmt.Errorf("topic %q given more than once", n)
		}
		seen[n] = true
	}
	return nil
}

func newTopicListCmd(tf *topicFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List topics with their partition count and replication factor",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return tf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				tds, err := adm.ListTopicsWithInternal(ctx)
				if err != nil {
					return requestError(cmd, &tf.clientFlags, "listing topics", err)
				}
				if !all {
					tds.FilterInternal()
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICAS")
				for _, td := range tds.Sorted() {
					name := td.Topic
					if td.IsInternal {
						name += " (internal)"
					}
					if td.Err != nil {
						fmt.Fprintf(tw, "%s\t-\t-\terror: %v\n", name, td.Err)
						continue
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\n", name, len(td.Partitions), replicationFactor(td.Partitions))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "include internal topics")
	return cmd
}

// replicationFactor is the largest replica count among a topic's partitions
// (they are normally all equal; during a reassignment one may be larger).
func replicationFactor(ps kadm.PartitionDetails) int {
	rf := 0
	for _, p := range ps {
		rf = max(rf, len(p.Replicas))
	}
	return rf
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

func newTopicDescribeCmd(tf *topicFlags) *cobra.Command {
	var allConfigs bool
	cmd := &cobra.Command{
		Use:   "describe NAME [NAME...]",
		Short: "Show a topic's partitions, offsets and configs",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			if err := checkTopicNames(names); err != nil {
				return err
			}
			return tf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				for i, name := range names {
					if i > 0 {
						fmt.Fprintln(cmd.OutOrStdout())
					}
					if err := describeTopic(ctx, cmd, tf, adm, name, allConfigs); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&allConfigs, "all-configs", false, "show every config, not only those that differ from the defaults")
	return cmd
}

func describeTopic(ctx context.Context, cmd *cobra.Command, tf *topicFlags, adm *kadm.Client, name string, allConfigs bool) error {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	md, err := adm.Metadata(ctx, name)
	if err != nil {
		return requestError(cmd, &tf.clientFlags, "describing topic "+name, err)
	}
	td, ok := md.Topics[name]
	if !ok {
		return fmt.Errorf("topic %s: not in the broker's metadata answer", name)
	}
	if td.Err != nil {
		return fmt.Errorf("topic %s: %w", name, td.Err)
	}

	// Offsets and configs are best effort: show what was answered and say
	// on stderr what was not.
	starts, err := adm.ListStartOffsets(ctx, name)
	if err != nil {
		fmt.Fprintf(errOut, "warning: listing log start offsets of %s: %v\n", name, err)
	}
	ends, err := adm.ListEndOffsets(ctx, name)
	if err != nil {
		fmt.Fprintf(errOut, "warning: listing high watermarks of %s: %v\n", name, err)
	}
	rcs, cfgErr := adm.DescribeTopicConfigs(ctx, name)

	fmt.Fprintf(out, "Topic: %s\n", name)
	if td.ID != (kadm.TopicID{}) {
		fmt.Fprintf(out, "ID: %s\n", td.ID)
	}
	fmt.Fprintf(out, "Partitions: %d\n", len(td.Partitions))
	fmt.Fprintf(out, "Replication factor: %d\n", replicationFactor(td.Partitions))
	if td.IsInternal {
		fmt.Fprintln(out, "Internal: true")
	}
	fmt.Fprintln(out)

	tw := newTable(out)
	racks, minimums := brokerRacks(md.Brokers), topicMinimums(rcs, name)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tLOG-START\tHIGH-WATERMARK\tRACKS\tMIN-ISR\tMIN-RACKS")
	for _, p := range td.Partitions.Sorted() {
		leader := strconv.Itoa(int(p.Leader))
		if p.Leader < 0 {
			leader = "none"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s", p.Partition, leader, p.LeaderEpoch,
			int32List(p.Replicas), int32List(p.ISR), offsetCell(starts, name, p.Partition), offsetCell(ends, name, p.Partition),
			rackList(p.Replicas, racks), minISRCell(p, minimums), minRacksCell(p, racks, minimums))
		if p.Err != nil {
			fmt.Fprintf(tw, "\terror: %v", p.Err)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(out)
	rc, err := rcs.On(name, nil)
	switch {
	case cfgErr != nil:
		fmt.Fprintf(errOut, "warning: describing configs of %s: %v\n", name, cfgErr)
		return nil
	case err != nil:
		fmt.Fprintf(errOut, "warning: describing configs of %s: no answer for this topic\n", name)
		return nil
	case rc.Err != nil:
		fmt.Fprintf(errOut, "warning: describing configs of %s: %v\n", name, brokerError(rc.Err, rc.ErrMessage))
		return nil
	}
	cfgs := make([]kadm.Config, 0, len(rc.Configs))
	for _, c := range rc.Configs {
		if allConfigs || !isDefaultConfig(c) {
			cfgs = append(cfgs, c)
		}
	}
	if len(cfgs) == 0 {
		fmt.Fprintln(out, "Configs: all defaults (use --all-configs to list them)")
		return nil
	}
	sort.Slice(cfgs, func(i, j int) bool { return cfgs[i].Key < cfgs[j].Key })
	tw = newTable(out)
	fmt.Fprintln(tw, "CONFIG\tVALUE\tSOURCE")
	for _, c := range cfgs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Key, configValue(c), c.Source)
	}
	return tw.Flush()
}

// isDefaultConfig reports whether a topic config is the built-in default, that
// is, nobody set it for this topic or the brokers.
func isDefaultConfig(c kadm.Config) bool {
	return c.Source == kmsg.ConfigSourceDefaultConfig || c.Source == kmsg.ConfigSourceUnknown
}

func configValue(c kadm.Config) string {
	switch {
	case c.Sensitive:
		return "(sensitive)"
	case c.Value == nil:
		return "(null)"
	case *c.Value == "":
		return `""`
	default:
		return *c.Value
	}
}

func offsetCell(l kadm.ListedOffsets, topic string, p int32) string {
	o, ok := l.Lookup(topic, p)
	switch {
	case !ok:
		return "?"
	case o.Err != nil:
		if ke := (*kerr.Error)(nil); errors.As(o.Err, &ke) {
			return ke.Message
		}
		return "error"
	default:
		return strconv.FormatInt(o.Offset, 10)
	}
}

func int32List(is []int32) string {
	s := make([]string, len(is))
	for i, v := range is {
		s[i] = strconv.Itoa(int(v))
	}
	return "[" + strings.Join(s, ",") + "]"
}

func newTopicDeleteCmd(tf *topicFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "delete NAME [NAME...]",
		Aliases: []string{"rm"},
		Short:   "Delete topics",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			if err := checkTopicNames(names); err != nil {
				return err
			}
			return tf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteTopics(ctx, names...)
				if err != nil {
					return requestError(cmd, &tf.clientFlags, "deleting topics", err)
				}
				out := cmd.OutOrStdout()
				failed := 0
				for _, name := range names {
					r, ok := resps[name]
					switch {
					case !ok:
						failed++
						fmt.Fprintf(out, "%s: error: no answer for this topic from the broker\n", name)
					case r.Err != nil:
						failed++
						fmt.Fprintf(out, "%s: error: %v\n", name, brokerError(r.Err, r.ErrMessage))
					default:
						fmt.Fprintf(out, "deleted topic %s\n", name)
					}
				}
				return failedCount(failed, len(names), "topics")
			})
		},
	}
	return cmd
}

func newTopicAlterConfigCmd(tf *topicFlags) *cobra.Command {
	var (
		sets, deletes []string
		validateOnly  bool
	)
	cmd := &cobra.Command{
		Use:   "alter-config NAME --set k=v... --delete k...",
		Short: "Set or remove topic configs (IncrementalAlterConfigs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			alters, err := buildAlterConfigs(sets, deletes)
			if err != nil {
				return err
			}
			return tf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				alter := adm.AlterTopicConfigs
				verb := "altered"
				if validateOnly {
					alter = adm.ValidateAlterTopicConfigs
					verb = "validated"
				}
				resps, err := alter(ctx, alters, name)
				if err != nil {
					return requestError(cmd, &tf.clientFlags, "altering configs of topic "+name, err)
				}
				r, err := resps.On(name, nil)
				if err != nil {
					return fmt.Errorf("altering configs of topic %s: no answer for this topic from the broker", name)
				}
				if r.Err != nil {
					return fmt.Errorf("altering configs of topic %s: %w", name, brokerError(r.Err, r.ErrMessage))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s configs of topic %s: %s\n", verb, name, describeAlters(alters))
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&sets, "set", nil, "config to set, key=value (repeatable)")
	fs.StringArrayVar(&deletes, "delete", nil, "config to remove, reverting it to its default (repeatable)")
	fs.BoolVar(&validateOnly, "validate-only", false, "ask the broker to validate the change without applying it")
	return cmd
}

// buildAlterConfigs turns --set and --delete into incremental alter ops,
// rejecting malformed entries and keys that are named twice.
func buildAlterConfigs(sets, deletes []string) ([]kadm.AlterConfig, error) {
	if len(sets) == 0 && len(deletes) == 0 {
		return nil, errors.New("nothing to alter: give at least one --set k=v or --delete k")
	}
	seen := make(map[string]bool)
	var out []kadm.AlterConfig
	for _, s := range sets {
		k, v, err := parseKeyValue(s)
		if err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, fmt.Errorf("config %q given more than once", k)
		}
		seen[k] = true
		out = append(out, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
	}
	for _, k := range deletes {
		k = strings.TrimSpace(k)
		if k == "" || strings.Contains(k, "=") {
			return nil, fmt.Errorf("invalid --delete %q: want a config name", k)
		}
		if seen[k] {
			return nil, fmt.Errorf("config %q given more than once", k)
		}
		seen[k] = true
		out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return out, nil
}

func describeAlters(alters []kadm.AlterConfig) string {
	parts := make([]string, len(alters))
	for i, a := range alters {
		if a.Op == kadm.DeleteConfig {
			parts[i] = "deleted " + a.Name
		} else {
			parts[i] = "set " + a.Name + "=" + *a.Value
		}
	}
	return strings.Join(parts, ", ")
}
