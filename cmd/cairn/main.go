// Command cairn is Cairn's single binary: `cairn start` runs a broker, and the other
// subcommands (topic, produce, consume, group) are Kafka clients built on franz-go.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "cairn",
		Short:         "Cairn: a Kafka-API-compatible streaming broker",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newStartCmd(), newTopicCmd(), newProduceCmd(), newConsumeCmd(), newGroupCmd(), newBenchCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "cairn:", err)
		os.Exit(1)
	}
}
