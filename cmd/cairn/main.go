// Command cairn is Cairn's single binary: `cairn start` runs a broker, and the other
// subcommands (topic, produce, consume, group, security) are Kafka clients built on franz-go;
// `cairn cluster` runs cluster operations over a broker's admin HTTP API.
package main

import (
	"errors"
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
	root.AddCommand(newStartCmd(), newTopicCmd(), newProduceCmd(), newConsumeCmd(), newGroupCmd(), newTxnCmd(), newClusterCmd(), newSecurityCmd(), newBenchCmd(), newLabCmd())
	if err := root.Execute(); err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
			if ee.err == nil { // the command said all there was to say
				os.Exit(code)
			}
		}
		fmt.Fprintln(os.Stderr, "cairn:", err)
		os.Exit(code)
	}
}
