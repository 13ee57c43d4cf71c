package contract

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Render writes c for a terminal: what each acks value proves, the failures as a table,
// what may be lost, the warnings of now, then where the settings came from and the refused
// Kafka properties. The first screen answers the question; the rest is reference.
func Render(w io.Writer, c Contract) {
	fmt.Fprintf(w, "Topic %s: %s\n", c.Topic, plural(c.Partitions, "partition", "partitions"))
	for _, s := range c.Settings {
		if s.Name == "write.caching" || s.Name == "min.insync.replicas" || s.Name == "min.insync.racks" {
			fmt.Fprintf(w, "  %s=%s (%s)\n", s.Name, s.Value, s.Source)
		}
	}
	fmt.Fprintln(w, "\nA success proves:")
	for _, p := range c.Promises {
		Wrap(w, fmt.Sprintf("  %-10s", "acks="+p.Acks), 12, p.Proves)
	}

	if len(c.Promises) > 0 && len(c.Promises[0].Survives) > 0 {
		fmt.Fprintln(w, "\nAn acknowledged write, after:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "  failure")
		for _, p := range c.Promises {
			fmt.Fprintf(tw, "\tacks=%s", p.Acks)
		}
		fmt.Fprintln(tw)
		for i, o := range c.Promises[0].Survives {
			fmt.Fprintf(tw, "  %s", o.Failure)
			for _, p := range c.Promises {
				k := "-"
				if i < len(p.Survives) {
					k = string(p.Survives[i].Kept)
				}
				fmt.Fprintf(tw, "\t%s", k)
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
		if all := c.Promises[len(c.Promises)-1]; len(all.Survives) > 0 {
			fmt.Fprintf(w, "\nWhy, for acks=%s:\n", all.Acks)
			for _, o := range all.Survives {
				Wrap(w, "  ", 4, o.Failure+": "+o.Why)
			}
		}
	}
	fmt.Fprintln(w)
	Wrap(w, "May lose: ", 4, c.MayLose)

	fmt.Fprintln(w, "\nNow:")
	if len(c.Warnings) == 0 {
		fmt.Fprintln(w, "  every partition meets the promise")
	}
	for _, wn := range c.Warnings {
		Wrap(w, "  ", 4, fmt.Sprintf("WARNING partition %d: %s", wn.Partition, wn.What))
	}

	fmt.Fprintln(w, "\nSettings (and where they came from):")
	var set []string
	for _, s := range c.Settings {
		set = append(set, fmt.Sprintf("%s=%s (%s)", s.Name, s.Value, s.Source))
	}
	Wrap(w, "  ", 4, strings.Join(set, ", "))
	if len(c.Refused) > 0 {
		fmt.Fprintln(w, "\nKafka properties Cairn refuses, and what to set instead:")
		for _, r := range c.Refused {
			Wrap(w, "  ", 4, r.Name+": "+r.Instead)
		}
	}
}

// width is the terminal width the human form keeps to, as `cairn cluster health` does.
const width = 100

// Wrap writes text after lead, broken at spaces to fit width, each further line indented
// by hang spaces.
func Wrap(w io.Writer, lead string, hang int, text string) {
	indent := strings.Repeat(" ", hang)
	line := lead
	fresh := true
	for _, word := range strings.Fields(text) {
		if !fresh && len(line)+1+len(word) > width {
			fmt.Fprintln(w, line)
			line, fresh = indent, true
		}
		if fresh {
			line += word
			fresh = false
		} else {
			line += " " + word
		}
	}
	fmt.Fprintln(w, line)
}
