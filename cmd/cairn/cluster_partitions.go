package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// reconfiguration is one entry of GET /v1/partitions/reconfigurations: a partition move
// under way. Phase and the byte counts are filled by the move driver, and absent while it
// does not know them.
type reconfiguration struct {
	Topic      string  `json:"topic"`
	Partition  int32   `json:"partition"`
	Original   []int32 `json:"original"`
	Target     []int32 `json:"target"`
	Adding     []int32 `json:"adding"`
	Removing   []int32 `json:"removing"`
	Cancelled  bool    `json:"cancelled"`
	Final      bool    `json:"final"`
	Phase      string  `json:"phase"`
	BytesMoved *int64  `json:"bytes_moved"`
	BytesLeft  *int64  `json:"bytes_left"`
}

func (r reconfiguration) key() partitionKey { return partitionKey{r.Topic, r.Partition} }

func (r reconfiguration) name() string { return partitionRef{r.Topic, r.Partition}.String() }

func newClusterPartitionsCmd(cf *clusterFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "partitions",
		Short: "Move partitions to other brokers, follow and cancel moves, force-recover a lost majority",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newPartitionsMoveCmd(cf), newPartitionsMoveStatusCmd(cf), newPartitionsMoveCancelCmd(cf), newPartitionsForceRecoverCmd(cf))
	return cmd
}

func newPartitionsMoveCmd(cf *clusterFlags) *cobra.Command {
	var replicas string
	cmd := &cobra.Command{
		Use:   "move TOPIC/PARTITION --replicas 4,5,6",
		Short: "Move a partition to a new replica set (the first one is the preferred leader)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parsePartitionRef(args[0])
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("replicas") {
				return fmt.Errorf("--replicas is required: the new replica set, e.g. --replicas 4,5,6")
			}
			target, err := parseBrokerList(replicas)
			if err != nil {
				return fmt.Errorf("--replicas: %w", err)
			}
			body, err := cf.call(cmd, http.MethodPost, ref.path()+"/replicas", target)
			if err != nil {
				return err
			}
			if cf.json {
				return printRaw(cmd.OutOrStdout(), body)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "moving %s to replicas %s; follow it with `cairn cluster partitions move-status %s --watch`\n",
				ref, int32List(target), ref)
			return nil
		},
	}
	cmd.Flags().StringVar(&replicas, "replicas", "", "the new replicas, comma-separated broker ids")
	return cmd
}

func newPartitionsMoveCancelCmd(cf *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "move-cancel TOPIC/PARTITION",
		Short: "Cancel a partition move: the partition returns to its original replicas",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parsePartitionRef(args[0])
			if err != nil {
				return err
			}
			body, err := cf.call(cmd, http.MethodPost, ref.path()+"/cancel_reconfiguration", nil)
			if err != nil {
				return err
			}
			if cf.json {
				return printRaw(cmd.OutOrStdout(), body)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cancelling the move of %s: it returns to its original replicas; follow it with `cairn cluster partitions move-status %s --watch`\n", ref, ref)
			return nil
		},
	}
}

func newPartitionsMoveStatusCmd(cf *clusterFlags) *cobra.Command {
	var (
		watch    bool
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "move-status [TOPIC/PARTITION]",
		Short: "Show partition moves under way; --watch follows them with progress, rate and ETA",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var only *partitionKey
			if len(args) == 1 {
				ref, err := parsePartitionRef(args[0])
				if err != nil {
					return err
				}
				only = &partitionKey{ref.topic, ref.partition}
			}
			if watch && interval <= 0 {
				return fmt.Errorf("--interval must be positive, got %v", interval)
			}
			if watch && cf.json {
				return fmt.Errorf("--watch and --json do not go together: --json prints one answer")
			}
			s := &moveStatus{cf: cf, cmd: cmd, only: only, out: cmd.OutOrStdout(), terminal: isTerminal(cmd.OutOrStdout()),
				progress: newMoveProgress(), now: time.Now}
			if !watch {
				return s.once()
			}
			return s.watch(interval)
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "poll until the moves end, with a progress bar per move (plain lines when stdout is not a terminal)")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "time between polls with --watch")
	return cmd
}

// isTerminal reports whether w is a terminal, where --watch redraws its progress bars in
// place; elsewhere (a pipe, a file) it prints plain lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// moveStatus runs `partitions move-status`.
type moveStatus struct {
	cf       *clusterFlags
	cmd      *cobra.Command
	only     *partitionKey // nil: every move
	out      io.Writer
	terminal bool
	progress *moveProgress
	now      func() time.Time
	drawn    int // lines of the last redraw on a terminal, to overwrite
}

// fetch lists the moves under way (only the one asked for, when one was) and the admin
// API's JSON of those entries: the whole answer, or the one entry's bytes in an array.
func (s *moveStatus) fetch() ([]reconfiguration, []byte, error) {
	var raw []json.RawMessage
	body, err := s.cf.get(s.cmd, "/v1/partitions/reconfigurations", &raw)
	if err != nil {
		return nil, nil, err
	}
	all := make([]reconfiguration, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &all[i]); err != nil {
			return nil, nil, fmt.Errorf("GET /v1/partitions/reconfigurations: the admin API's answer is not what this cairn expects: %w", err)
		}
	}
	if s.only == nil {
		return all, body, nil
	}
	for i, r := range all {
		if r.key() == *s.only {
			return []reconfiguration{r}, append(append([]byte("["), raw[i]...), ']'), nil
		}
	}
	return nil, []byte("[]"), nil
}

func (s *moveStatus) nothing() string {
	if s.only != nil {
		return fmt.Sprintf("no move in progress for %s\n", partitionRef{s.only.Topic, s.only.Partition})
	}
	return "no partition moves in progress\n"
}

// once prints the moves under way as a table (--json: the admin API's answer).
func (s *moveStatus) once() error {
	moves, body, err := s.fetch()
	if err != nil {
		return err
	}
	if s.cf.json {
		return printRaw(s.out, body)
	}
	if len(moves) == 0 {
		_, err := io.WriteString(s.out, s.nothing())
		return err
	}
	tw := newTable(s.out)
	fmt.Fprintln(tw, "PARTITION\tFROM\tTO\tPHASE\tMOVED\tLEFT\tDONE")
	for _, m := range moves {
		moved, left, done := "?", "?", "?"
		if m.BytesMoved != nil {
			moved = humanBytes(*m.BytesMoved)
		}
		if m.BytesLeft != nil {
			left = humanBytes(*m.BytesLeft)
		}
		if f, ok := fraction(m); ok {
			done = fmt.Sprintf("%.0f%%", f*100)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.name(), int32List(m.Original), int32List(m.Target), phaseOf(m), moved, left, done)
	}
	return tw.Flush()
}

// watch polls every interval until no watched move is left or the command is interrupted.
func (s *moveStatus) watch(interval time.Duration) error {
	ctx, stop := signalContext(cmdContext(s.cmd))
	defer stop()
	s.cmd.SetContext(ctx)
	seen := map[partitionKey]reconfiguration{}
	for first := true; ; first = false {
		moves, _, err := s.fetch()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := s.now()
		current := map[partitionKey]bool{}
		for _, m := range moves {
			current[m.key()] = true
		}
		var ended []string
		for k, m := range seen {
			if !current[k] {
				ended = append(ended, endedLine(m))
				delete(seen, k)
				s.progress.forget(k)
			}
		}
		rows := make([]string, 0, len(moves))
		for _, m := range moves {
			seen[m.key()] = m
			rows = append(rows, s.progress.observe(now, m).render(m, s.terminal))
		}
		s.draw(ended, rows)
		if len(moves) == 0 {
			if first {
				_, err := io.WriteString(s.out, s.nothing())
				return err
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// draw prints the moves that ended (kept) and the current rows: on a terminal the rows
// replace the previous redraw; elsewhere every poll appends its lines.
func (s *moveStatus) draw(ended, rows []string) {
	var b strings.Builder
	if s.terminal && s.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", s.drawn) // up over the last redraw, clear to the end
	}
	for _, l := range ended {
		b.WriteString(l + "\n")
	}
	s.drawn = 0
	for _, r := range rows {
		b.WriteString(r + "\n")
		s.drawn += strings.Count(r, "\n") + 1
	}
	io.WriteString(s.out, b.String())
}

func endedLine(m reconfiguration) string {
	if m.Cancelled {
		return fmt.Sprintf("%s: cancelled, back on replicas %s", m.name(), int32List(m.Original))
	}
	return fmt.Sprintf("%s: move ended, no longer in progress (target %s)", m.name(), int32List(m.Target))
}

func phaseOf(m reconfiguration) string {
	p := m.Phase
	if p == "" {
		p = "in progress"
	}
	if m.Cancelled {
		p = "cancelling (" + p + ")"
	}
	return p
}

// fraction is how much of a move's data has moved, when the driver reports it.
func fraction(m reconfiguration) (float64, bool) {
	if m.BytesMoved == nil || m.BytesLeft == nil {
		return 0, false
	}
	total := *m.BytesMoved + *m.BytesLeft
	if total <= 0 {
		return 1, true
	}
	return float64(*m.BytesMoved) / float64(total), true
}
