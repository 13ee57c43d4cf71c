package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/cairn-io/cairn/internal/lab"
)

func newLabCmd() *cobra.Command {
	var dir string
	var auto, keep bool
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "The durability lab: watch what each acknowledgement survives, on a cluster of its own",
		Long: `Start a three-broker cluster of its own (this binary, racks rack-a, rack-b and rack-c, under
--simulate-power-loss, on free loopback ports, in a scratch folder), then stop one write at
each boundary in turn: appended on the leader only (acks=1, followers paused), written on a
majority but not fsynced (write caching, fsyncs held), not acknowledged (strict, fsyncs held),
and fsynced on a majority, committed and visible (strict, one follower paused); then
min.insync.replicas=3, and then min.insync.racks=3, refusing acks=all while a follower is
down, as explain warns. Each step
removes brokers (kill -9 of the leader, or a power cut of all three), reads the topic back,
and prints what survived next to what the topic's contract (cairn topic explain) promised,
with every replica's five boundaries. It waits for Enter between steps unless --auto, and
exits non-zero if an outcome contradicts the contract. It touches no other cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			if dir == "" {
				if dir, err = lab.DefaultDir(); err != nil {
					return err
				}
				if !keep {
					defer os.RemoveAll(dir)
				}
			}
			return lab.Run(cmdContext(cmd), lab.Options{Binary: bin, Dir: dir, Auto: auto, In: cmd.InOrStdin(), Out: cmd.OutOrStdout()})
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "scratch folder for the brokers' data and logs (default: a new temporary one, removed at the end)")
	cmd.Flags().BoolVar(&auto, "auto", false, "run straight through without waiting for Enter")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temporary scratch folder (its path is printed)")
	return cmd
}
