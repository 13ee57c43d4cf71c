package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// maintenanceStatus is GET /v1/brokers/{id}/maintenance.
type maintenanceStatus struct {
	Draining    bool     `json:"draining"`
	Finished    bool     `json:"finished"`
	LeadersLeft int64    `json:"leaders_left"`
	Failed      int64    `json:"failed"`
	Errors      []string `json:"errors"`
}

func newClusterMaintenanceCmd(cf *clusterFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "maintenance",
		Short: "Move every leadership off a broker before taking it down (enable, disable, status)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	change := func(use, short, method, verb string) *cobra.Command {
		return &cobra.Command{
			Use:   use + " BROKER",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				id, err := parseBrokerID(args[0])
				if err != nil {
					return err
				}
				body, err := cf.call(cmd, method, maintenancePath(id), nil)
				if err != nil {
					return err
				}
				if cf.json {
					return printRaw(cmd.OutOrStdout(), body)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", strings.ReplaceAll(verb, "BROKER", strconv.Itoa(int(id))))
				return nil
			},
		}
	}
	cmd.AddCommand(
		change("enable", "Put a broker in maintenance mode: its leaderships move away and it wins no election", http.MethodPut,
			"maintenance mode on for broker BROKER: its leaderships are moving away (follow with `cairn cluster maintenance status BROKER`)"),
		change("disable", "Take a broker out of maintenance mode", http.MethodDelete,
			"maintenance mode off for broker BROKER: it may lead again"),
		&cobra.Command{
			Use:   "status BROKER",
			Short: "Show a broker's maintenance drain: leaderships left, failures",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				id, err := parseBrokerID(args[0])
				if err != nil {
					return err
				}
				var st maintenanceStatus
				body, err := cf.get(cmd, maintenancePath(id), &st)
				if err != nil {
					return err
				}
				if cf.json {
					return printRaw(cmd.OutOrStdout(), body)
				}
				out := cmd.OutOrStdout()
				state := "not in maintenance"
				switch {
				case st.Draining && st.Finished:
					state = "in maintenance, drained"
				case st.Draining:
					state = "in maintenance, draining"
				}
				fmt.Fprintf(out, "Broker %d: %s\n", id, state)
				fmt.Fprintf(out, "Leaderships left: %d\n", st.LeadersLeft)
				fmt.Fprintf(out, "Failed transfers: %d\n", st.Failed)
				for _, e := range st.Errors {
					fmt.Fprint(out, wrap("  error: ", e, outputWidth))
				}
				return nil
			},
		},
	)
	return cmd
}

func maintenancePath(id int32) string {
	return "/v1/brokers/" + strconv.Itoa(int(id)) + "/maintenance"
}
