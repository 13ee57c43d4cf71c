package main

import "github.com/spf13/cobra"

// TEMPORARY STUB; the CLI implementer replaces it.
func newConsumeCmd() *cobra.Command { return &cobra.Command{Use: "consume"} }
