package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster properties are the broker resource's configs: the cluster-wide default resource
// ("") reads and writes them, through DescribeConfigs and IncrementalAlterConfigs, as every
// Kafka tool does. The answer also holds the answering broker's own node properties, which
// are read-only (set at `cairn start`); `config get` leaves them out unless --all or named.
// kadm sets them; reading them is a DescribeConfigs of our own (see
// describeClusterProperties).

// configEntry is one property as `config get --json` prints it.
type configEntry struct {
	Name     string  `json:"name"`
	Value    *string `json:"value"`
	Source   string  `json:"source"`
	ReadOnly bool    `json:"read_only"`
}

func newClusterConfigCmd(cf *clusterFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Read and change cluster properties (through Kafka, --brokers)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newClusterConfigGetCmd(cf), newClusterConfigSetCmd(cf))
	return cmd
}

func newClusterConfigGetCmd(cf *clusterFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "get [NAME...]",
		Short: "Show cluster properties with their values and sources (all of them, or those named)",
		RunE: func(cmd *cobra.Command, names []string) error {
			return cf.kafka(cmd, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
				cfgs, err := describeClusterProperties(ctx, cl)
				if err != nil {
					return requestError(cmd, &cf.clientFlags, "describing cluster properties", err)
				}
				byName := make(map[string]configEntry, len(cfgs))
				for _, c := range cfgs {
					byName[c.Name] = c
				}
				var picked []configEntry
				if len(names) > 0 {
					var unknown []string
					for _, n := range names {
						c, ok := byName[n]
						if !ok {
							unknown = append(unknown, strconv.Quote(n))
							continue
						}
						picked = append(picked, c)
					}
					if len(unknown) > 0 {
						return fmt.Errorf("unknown cluster property %s (`cairn cluster config get` lists them)", strings.Join(unknown, ", "))
					}
				} else {
					for _, c := range cfgs {
						if all || !c.ReadOnly {
							picked = append(picked, c)
						}
					}
					sort.Slice(picked, func(i, j int) bool { return picked[i].Name < picked[j].Name })
				}
				return printConfigs(cmd, cf.json, picked)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also show the answering broker's node properties (read-only, set at start)")
	return cmd
}

// describeClusterProperties reads the cluster-wide broker resource. It sends
// DescribeConfigs itself rather than through kadm, whose answer drops the read-only flag
// that tells a broker's own node properties from cluster properties.
func describeClusterProperties(ctx context.Context, cl *kgo.Client) ([]configEntry, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("the broker answered %d resources for the one asked", len(resp.Resources))
	}
	r := resp.Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return nil, brokerError(err, msg)
	}
	out := make([]configEntry, 0, len(r.Configs))
	for _, c := range r.Configs {
		e := configEntry{Name: c.Name, Value: c.Value, Source: sourceName(c.Source), ReadOnly: c.ReadOnly}
		if c.IsSensitive {
			e.Value = nil
		}
		out = append(out, e)
	}
	return out, nil
}

func printConfigs(cmd *cobra.Command, asJSON bool, cfgs []configEntry) error {
	out := cmd.OutOrStdout()
	if asJSON {
		if cfgs == nil {
			cfgs = []configEntry{}
		}
		b, err := json.Marshal(cfgs)
		if err != nil {
			return err
		}
		return printRaw(out, b)
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "NAME\tVALUE\tSOURCE")
	for _, c := range cfgs {
		src := c.Source
		if c.ReadOnly {
			src += " (read-only)"
		}
		v := "(null)"
		switch {
		case c.Value == nil:
		case *c.Value == "":
			v = `""`
		default:
			v = *c.Value
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, v, src)
	}
	return tw.Flush()
}

// sourceName says where a value comes from, in an operator's words.
func sourceName(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig, kmsg.ConfigSourceDynamicBrokerConfig:
		return "cluster"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "node"
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	default:
		return strings.ToLower(s.String())
	}
}

func newClusterConfigSetCmd(cf *clusterFlags) *cobra.Command {
	var (
		deletes      []string
		validateOnly bool
	)
	cmd := &cobra.Command{
		Use:   "set NAME=VALUE... [--delete NAME...]",
		Short: "Set cluster properties, or return them to their defaults with --delete",
		RunE: func(cmd *cobra.Command, sets []string) error {
			if len(sets) == 0 && len(deletes) == 0 {
				return fmt.Errorf("nothing to change: give NAME=VALUE or --delete NAME")
			}
			alters, err := buildAlterConfigs(sets, deletes)
			if err != nil {
				return err
			}
			return cf.kafka(cmd, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error {
				alter, verb := adm.AlterBrokerConfigs, "changed"
				if validateOnly {
					alter, verb = adm.ValidateAlterBrokerConfigs, "validated"
				}
				resps, err := alter(ctx, alters)
				if err != nil {
					return requestError(cmd, &cf.clientFlags, "changing cluster properties", err)
				}
				r, err := resps.On("", nil)
				if err != nil {
					return fmt.Errorf("changing cluster properties: no answer for the cluster resource from the broker")
				}
				if r.Err != nil {
					return fmt.Errorf("changing cluster properties (nothing changed): %w", brokerError(r.Err, r.ErrMessage))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s cluster properties: %s\n", verb, describeAlters(alters))
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&deletes, "delete", nil, "property to return to its default (repeatable)")
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "ask the broker to validate the change without applying it")
	return cmd
}
