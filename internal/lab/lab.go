package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cairn-io/cairn/internal/contract"
)

// Options configures a lab session.
type Options struct {
	Binary string // the cairn binary the brokers run (normally this one)
	Dir    string // scratch folder: the brokers' data and logs
	Auto   bool   // run straight through, without waiting for Enter
	In     io.Reader
	Out    io.Writer
}

// Run starts the lab's cluster, runs every step and stops the cluster. It fails when a
// step's outcome contradicts the topic's contract or does not show what the step sets out
// to show.
func Run(ctx context.Context, o Options) error {
	out := o.Out
	fmt.Fprintf(out, "Starting three brokers (racks %s) under --simulate-power-loss in %s ...\n", strings.Join(labRacks, ", "), o.Dir)
	c, err := startCluster(ctx, o.Binary, o.Dir, out)
	if err != nil {
		return err
	}
	defer c.close()
	in := bufio.NewReader(o.In)
	var failed []string
	for n, s := range steps() {
		fmt.Fprintf(out, "\n== Step %d of %d: %s\n\n", n+1, len(steps()), s.title)
		contract.Wrap(out, "", 0, s.explain)
		configs := map[string]*string{}
		for k, v := range s.configs {
			configs[k] = &v
		}
		if err := c.createTopic(ctx, s.topic, configs); err != nil {
			return err
		}
		ct, err := c.contractOf(s.topic)
		if err != nil {
			return err
		}
		promise, _ := ct.Promise(s.acks)
		fmt.Fprintf(out, "\nThe contract of %s (cairn topic explain): acks=%s proves %s\n", s.topic, s.acks, promise.Proves)
		fmt.Fprintf(out, "Boundaries of the replicas before the write:\n")
		c.boundaries(s.topic)
		if !o.Auto {
			fmt.Fprint(out, "\n[Enter] to write the record and inflict the fault ")
			if _, err := in.ReadString('\n'); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
		}
		got, err := s.run(ctx, c, s)
		if err != nil {
			return fmt.Errorf("step %d: %w", n+1, err)
		}
		kept := "gone"
		if got.kept {
			kept = "still there"
		}
		acked := "not acknowledged (no answer in time)"
		if got.acknowledged {
			acked = "acknowledged"
		}
		promised, cerr := s.check(ct, got)
		fmt.Fprintf(out, "\nObserved: the write was %s, and after the %s it is %s.\n", acked, s.failure, kept)
		fmt.Fprintf(out, "Promised for acks=%s after a %s: %s (%s).\n", s.acks, s.failure, promised.Kept, promised.Why)
		if cerr != nil {
			fmt.Fprintf(out, "FAILED: %v\n", cerr)
			failed = append(failed, fmt.Sprintf("step %d: %v", n+1, cerr))
		} else {
			fmt.Fprintln(out, "OK: the outcome is what the contract allows.")
		}
		if !o.Auto && n+1 < len(steps()) {
			fmt.Fprint(out, "\n[Enter] for the next step ")
			if _, err := in.ReadString('\n'); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the lab failed: %s", strings.Join(failed, "; "))
	}
	fmt.Fprintf(out, "\nEvery step's outcome matched the contract. The brokers' logs are in %s.\n", o.Dir)
	return nil
}

// DefaultDir is a fresh scratch folder for a session.
func DefaultDir() (string, error) { return os.MkdirTemp("", "cairn-lab-") }
