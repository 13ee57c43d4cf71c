package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// `cairn security user create|delete|list`: SCRAM users through the Kafka APIs
// (AlterUserScramCredentials and DescribeUserScramCredentials, by kadm), so the commands
// work against any listener the client flags reach. The password is salted and derived on
// this side (kadm does PBKDF2); only the salted password crosses the network.

type securityFlags struct {
	clientFlags
	timeout time.Duration
}

func newSecurityCmd() *cobra.Command {
	sf := &securityFlags{}
	cmd := &cobra.Command{Use: "security", Short: "Manage SCRAM users and ACLs", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	sf.register(cmd, true)
	cmd.PersistentFlags().DurationVar(&sf.timeout, "timeout", defaultAdminTimeout, "time limit for the command's requests to the cluster")
	user := &cobra.Command{Use: "user", Short: "Create, delete and list SCRAM users", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	user.AddCommand(newUserCreateCmd(sf), newUserDeleteCmd(sf), newUserListCmd(sf))
	cmd.AddCommand(user, newACLCmd(sf))
	return cmd
}

// admin runs fn with an admin client of the seed brokers, within --timeout.
func (sf *securityFlags) admin(cmd *cobra.Command, fn func(ctx context.Context, adm *kadm.Client) error) error {
	return sf.kafka(cmd, func(ctx context.Context, cl *kgo.Client) error { return fn(ctx, kadm.NewClient(cl)) })
}

func parseMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("unknown mechanism %q (SCRAM-SHA-256 or SCRAM-SHA-512)", s)
}

func newUserCreateCmd(sf *securityFlags) *cobra.Command {
	var mech, password string
	var iterations int32
	var fromStdin bool
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a SCRAM user, or set a new password for one (--password-stdin reads it from standard input)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := parseMechanism(mech)
			if err != nil {
				return err
			}
			if iterations < 4096 || iterations > 16384 {
				return fmt.Errorf("--iterations %d is outside [4096, 16384]", iterations)
			}
			switch {
			case fromStdin && password != "":
				return errors.New("give --password or --password-stdin, not both")
			case fromStdin:
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("reading the password: %w", err)
				}
				password = strings.TrimRight(line, "\r\n")
			case password == "":
				return errors.New("no password: give --password-stdin (and pipe it in) or --password")
			}
			if password == "" {
				return errors.New("empty password")
			}
			return sf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: args[0], Mechanism: m, Iterations: iterations, Password: password}})
				if err != nil {
					return requestError(cmd, &sf.clientFlags, "creating user "+args[0], err)
				}
				if r := res[args[0]]; r.Err != nil {
					return brokerError(fmt.Errorf("creating user %s: %w", args[0], r.Err), r.ErrMessage)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s: %s credential set (%d iterations)\n", args[0], m, iterations)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&mech, "mechanism", "SCRAM-SHA-512", "SCRAM-SHA-256 or SCRAM-SHA-512")
	cmd.Flags().Int32Var(&iterations, "iterations", 4096, "PBKDF2 iterations, 4096 to 16384")
	cmd.Flags().StringVar(&password, "password", "", "the password (visible in the process list and shell history: prefer --password-stdin)")
	cmd.Flags().BoolVar(&fromStdin, "password-stdin", false, "read the password from the first line of standard input")
	return cmd
}

func newUserDeleteCmd(sf *securityFlags) *cobra.Command {
	var mech string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a SCRAM user's credential for --mechanism, or all of its credentials",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return sf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				var mechs []kadm.ScramMechanism
				if mech != "" {
					m, err := parseMechanism(mech)
					if err != nil {
						return err
					}
					mechs = append(mechs, m)
				} else {
					described, err := adm.DescribeUserSCRAMs(ctx, name)
					if err != nil {
						return requestError(cmd, &sf.clientFlags, "describing user "+name, err)
					}
					d, ok := described[name]
					if !ok || d.Err != nil {
						return fmt.Errorf("user %s has no SCRAM credential", name)
					}
					for _, c := range d.CredInfos {
						mechs = append(mechs, c.Mechanism)
					}
				}
				// One request per mechanism: Kafka refuses a user named twice in one.
				for _, m := range mechs {
					res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: name, Mechanism: m}}, nil)
					if err != nil {
						return requestError(cmd, &sf.clientFlags, "deleting user "+name, err)
					}
					if r := res[name]; r.Err != nil {
						return brokerError(fmt.Errorf("deleting user %s %s: %w", name, m, r.Err), r.ErrMessage)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "user %s: %s credential deleted\n", name, m)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&mech, "mechanism", "", "delete only this mechanism's credential (default: all)")
	return cmd
}

func newUserListCmd(sf *securityFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List SCRAM users with their mechanisms and iterations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeUserSCRAMs(ctx)
				if err != nil {
					return requestError(cmd, &sf.clientFlags, "listing users", err)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
				for _, d := range described.Sorted() {
					for _, c := range d.CredInfos {
						fmt.Fprintf(tw, "%s\t%s\t%d\n", d.User, c.Mechanism, c.Iterations)
					}
				}
				return tw.Flush()
			})
		},
	}
}
