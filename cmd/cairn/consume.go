package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type consumeFlags struct {
	clientFlags
	offset    string
	partition int32
	num       int
	idle      time.Duration
	format    string
}

func newConsumeCmd() *cobra.Command {
	cf := &consumeFlags{}
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of a topic (direct partition consumption, no group)",
		Long: `Consume reads records of TOPIC directly from its partitions (no consumer group,
nothing is committed) and prints each one through the --format template.

--offset is where to start in each partition:
  beginning   the oldest record still in the log (default)
  end         only records produced from now on
  N           offset N (clamped to the log's bounds)
  -N          N records before the end of each partition

--format verbs: %t topic, %p partition, %o offset, %k key, %v value,
%T timestamp (ms since the epoch), %h headers (k=v,k=v), %% a literal %;
escapes: \n newline, \t tab, \r carriage return, \\ backslash.

It runs until interrupted (^C), until --num records were printed, or until no
record arrived for --timeout.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConsume(cmd, cf, args[0])
		},
	}
	cf.register(cmd, false)
	fs := cmd.Flags()
	fs.StringVarP(&cf.offset, "offset", "o", "beginning", "start offset: beginning, end, N, or -N (N before the end)")
	fs.Int32VarP(&cf.partition, "partition", "p", -1, "consume only this partition (-1: all partitions)")
	fs.IntVarP(&cf.num, "num", "n", 0, "exit after printing this many records (0: no limit)")
	fs.DurationVar(&cf.idle, "timeout", 0, "exit when no record arrived for this long (0: run until interrupted)")
	fs.StringVarP(&cf.format, "format", "f", `%v\n`, "output template (see --help)")
	return cmd
}

// parseOffset parses --offset into a franz-go offset.
func parseOffset(s string) (kgo.Offset, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "beginning", "start", "earliest", "oldest":
		return kgo.NewOffset().AtStart(), nil
	case "end", "latest", "newest":
		return kgo.NewOffset().AtEnd(), nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return kgo.Offset{}, fmt.Errorf("invalid --offset %q: want beginning, end, an offset N, or -N for N before the end", s)
	}
	if n < 0 {
		return kgo.NewOffset().AtEnd().Relative(n), nil
	}
	return kgo.NewOffset().At(n), nil
}

// formatPart is one piece of a parsed --format template: literal text, or a
// verb (one of the letters below) to be replaced per record.
type formatPart struct {
	lit  string
	verb byte
}

// recordFormat is a parsed --format template.
type recordFormat []formatPart

// parseFormat parses a kcat-style template; unknown verbs and escapes, and a
// dangling % or \, are errors.
func parseFormat(s string) (recordFormat, error) {
	var (
		parts recordFormat
		lit   strings.Builder
	)
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, formatPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '%':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("invalid --format %q: dangling %% at the end (use %%%% for a literal %%)", s)
			}
			i++
			switch v := s[i]; v {
			case '%':
				lit.WriteByte('%')
			case 't', 'p', 'o', 'k', 'v', 'T', 'h':
				flush()
				parts = append(parts, formatPart{verb: v})
			default:
				return nil, fmt.Errorf("invalid --format %q: unknown verb %%%c (known: %%t %%p %%o %%k %%v %%T %%h %%%%)", s, v)
			}
		case '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf(`invalid --format %q: dangling \ at the end (use \\ for a literal \)`, s)
			}
			i++
			switch e := s[i]; e {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '\\':
				lit.WriteByte('\\')
			default:
				return nil, fmt.Errorf(`invalid --format %q: unknown escape \%c (known: \n \t \r \\)`, s, e)
			}
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return parts, nil
}

// render appends r rendered through f to buf.
func (f recordFormat) render(buf []byte, r *kgo.Record) []byte {
	for _, p := range f {
		switch p.verb {
		case 0:
			buf = append(buf, p.lit...)
		case 't':
			buf = append(buf, r.Topic...)
		case 'p':
			buf = strconv.AppendInt(buf, int64(r.Partition), 10)
		case 'o':
			buf = strconv.AppendInt(buf, r.Offset, 10)
		case 'k':
			buf = append(buf, r.Key...)
		case 'v':
			buf = append(buf, r.Value...)
		case 'T':
			ts := int64(-1)
			if !r.Timestamp.IsZero() {
				ts = r.Timestamp.UnixMilli()
			}
			buf = strconv.AppendInt(buf, ts, 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, h.Key...)
				buf = append(buf, '=')
				buf = append(buf, h.Value...)
			}
		}
	}
	return buf
}

func runConsume(cmd *cobra.Command, cf *consumeFlags, topic string) error {
	if topic == "" {
		return errors.New("topic name must not be empty")
	}
	format, err := parseFormat(cf.format)
	if err != nil {
		return err
	}
	offset, err := parseOffset(cf.offset)
	if err != nil {
		return err
	}
	if cf.partition < -1 {
		return fmt.Errorf("invalid --partition %d: want a partition number or -1 for all", cf.partition)
	}
	if cf.num < 0 {
		return fmt.Errorf("invalid --num %d: must not be negative", cf.num)
	}
	if cf.idle < 0 {
		return fmt.Errorf("invalid --timeout %v: must not be negative", cf.idle)
	}

	var consumeOpt kgo.Opt
	if cf.partition >= 0 {
		consumeOpt = kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {cf.partition: offset}})
	} else {
		consumeOpt = kgo.ConsumeTopics(topic)
	}
	cl, err := cf.newClient(cmd, consumeOpt, kgo.ConsumeResetOffset(offset))
	if err != nil {
		return err
	}
	defer cl.Close()

	ctx, stop := signalContext(cmdContext(cmd))
	defer stop()

	if err := checkConsumable(ctx, cmd, cf, cl, topic); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while looking the topic up
		}
		return err
	}

	out := bufio.NewWriter(cmd.OutOrStdout())
	errOut := cmd.ErrOrStderr()
	var buf []byte
	printed := 0
	for {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if cf.idle > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, cf.idle)
		}
		limit := 0
		if cf.num > 0 {
			limit = cf.num - printed
		}
		fetches := cl.PollRecords(pollCtx, limit)
		idle := pollCtx.Err() != nil
		cancel()

		if fetches.IsClientClosed() || ctx.Err() != nil {
			// Interrupted: the records of this poll are still ours
			// to print, then stop cleanly.
			_, err := writeRecords(out, format, fetches, &buf, cf.num, &printed)
			return errors.Join(err, out.Flush())
		}
		var fatal error
		fetches.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			var loss *kgo.ErrDataLoss
			if errors.As(err, &loss) {
				fmt.Fprintf(errOut, "warning: %v\n", err)
				return
			}
			if fatal == nil {
				fatal = fmt.Errorf("consuming %s partition %d: %w", t, p, err)
			}
		})
		n, err := writeRecords(out, format, fetches, &buf, cf.num, &printed)
		if err == nil {
			err = out.Flush()
		}
		switch {
		case err != nil:
			return fmt.Errorf("writing output: %w", err)
		case fatal != nil:
			return fatal
		case cf.num > 0 && printed >= cf.num:
			return nil
		case idle && n == 0:
			return nil // --timeout passed without a record
		}
	}
}

// writeRecords renders the records of fetches to w, stopping once printed
// reaches limit (if limit > 0). It returns how many it wrote.
func writeRecords(w io.Writer, f recordFormat, fetches kgo.Fetches, buf *[]byte, limit int, printed *int) (int, error) {
	n := 0
	var err error
	fetches.EachRecord(func(r *kgo.Record) {
		if err != nil || (limit > 0 && *printed >= limit) {
			return
		}
		*buf = f.render((*buf)[:0], r)
		if _, err = w.Write(*buf); err == nil {
			n++
			*printed++
		}
	})
	return n, err
}

// checkConsumable fails fast when the topic (or the chosen partition) does not
// exist, instead of waiting forever for it to appear.
func checkConsumable(ctx context.Context, cmd *cobra.Command, cf *consumeFlags, cl *kgo.Client, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, defaultAdminTimeout)
	defer cancel()
	tds, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return requestError(cmd, &cf.clientFlags, "looking up topic "+topic, err)
	}
	td, ok := tds[topic]
	if !ok {
		return fmt.Errorf("topic %s: not in the broker's metadata answer", topic)
	}
	if td.Err != nil {
		return fmt.Errorf("topic %s: %w", topic, td.Err)
	}
	if cf.partition >= 0 {
		if _, ok := td.Partitions[cf.partition]; !ok {
			return fmt.Errorf("topic %s has no partition %d (it has %d)", topic, cf.partition, len(td.Partitions))
		}
	}
	return nil
}
