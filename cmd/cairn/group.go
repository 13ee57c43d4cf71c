package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// `cairn group`: list, describe and delete consumer groups, and move a group's
// committed offsets (seek). Everything goes through kadm; the group APIs are
// answered by each group's coordinator, which kgo finds for us.

// groupFlags are the flags shared by every `cairn group` subcommand; like
// `cairn topic`'s they are persistent, so they go before or after the verb.
type groupFlags struct {
	clientFlags
	timeout time.Duration
}

func newGroupCmd() *cobra.Command {
	gf := &groupFlags{}
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe and delete consumer groups, and reset their committed offsets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	gf.register(cmd, true)
	cmd.PersistentFlags().DurationVar(&gf.timeout, "timeout", defaultAdminTimeout, "time limit for the command's requests to the cluster")
	cmd.AddCommand(
		newGroupListCmd(gf),
		newGroupDescribeCmd(gf),
		newGroupDeleteCmd(gf),
		newGroupSeekCmd(gf),
	)
	return cmd
}

// admin runs fn with an admin client and a context bounded by --timeout.
func (gf *groupFlags) admin(cmd *cobra.Command, fn func(ctx context.Context, adm *kadm.Client) error) error {
	if gf.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %v", gf.timeout)
	}
	cl, err := gf.newClient(cmd)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(gf.timeout.Milliseconds(), int64(1<<31-1))))
	ctx, cancel := context.WithTimeout(cmdContext(cmd), gf.timeout)
	defer cancel()
	return fn(ctx, adm)
}

// groupKeys are the group APIs every group subcommand relies on; each
// subcommand adds the ones it sends itself.
var groupKeys = []kmsg.Key{kmsg.FindCoordinator}

// requestError is the package's requestError for a failed group request. A
// broker that does not serve an API fails the request before sending it, with
// an error that does not say which API; when that is the cause (the brokers'
// ApiVersions lack a key the command needs) it says so instead.
func (gf *groupFlags) requestError(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, what string, err error, keys ...kmsg.Key) error {
	if ctx.Err() == nil {
		if missing := missingAPIs(ctx, adm, append(append([]kmsg.Key{}, groupKeys...), keys...)); len(missing) > 0 {
			return fmt.Errorf("%s: the brokers do not support consumer groups (they do not serve %s)", what, strings.Join(missing, ", "))
		}
	}
	return requestError(cmd, &gf.clientFlags, what, err)
}

// missingAPIs returns the names of the keys that some reachable broker does
// not advertise, or nothing when that cannot be told.
func missingAPIs(ctx context.Context, adm *kadm.Client, keys []kmsg.Key) []string {
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return nil
	}
	var missing []string
	seen := make(map[kmsg.Key]bool)
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			continue
		}
		for _, k := range keys {
			if _, ok := v.KeyMaxVersion(int16(k)); !ok && !seen[k] {
				seen[k] = true
				missing = append(missing, k.Name())
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// checkGroupNames rejects empty and repeated group names.
func checkGroupNames(names []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" {
			return errors.New("group name must not be empty")
		}
		if seen[n] {
			return fmt.Errorf("group %q given more than once", n)
		}
		seen[n] = true
	}
	return nil
}

// partialShardError reports whether err is a *kadm.ShardErrors from a request
// that some brokers did answer, so that the answers are worth showing.
func partialShardError(err error) bool {
	var se *kadm.ShardErrors
	return errors.As(err, &se) && !se.AllFailed
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newGroupListCmd(gf *groupFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List consumer groups with their state, protocol type and member count",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return gf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				errOut := cmd.ErrOrStderr()
				listed, err := adm.ListGroups(ctx)
				switch {
				case partialShardError(err):
					fmt.Fprintf(errOut, "warning: some brokers did not list their groups: %v\n", err)
				case err != nil:
					return gf.requestError(ctx, cmd, adm, "listing groups", err, kmsg.ListGroups)
				}
				// ListGroups has no member counts; DescribeGroups does.
				var described kadm.DescribedGroups
				if names := listed.Groups(); len(names) > 0 {
					described, err = adm.DescribeGroups(ctx, names...)
					if err != nil {
						fmt.Fprintf(errOut, "warning: describing groups: %v\n", err)
					}
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE\tMEMBERS")
				for _, l := range listed.Sorted() {
					state, members := l.State, "?"
					if d, ok := described[l.Group]; ok && d.Err == nil {
						members = strconv.Itoa(len(d.Members))
						if state == "" { // brokers before Kafka 2.6 list no state
							state = d.State
						}
					} else if ok {
						fmt.Fprintf(errOut, "warning: describing group %s: %v\n", l.Group, brokerError(d.Err, d.ErrMessage))
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Group, dash(state), dash(l.ProtocolType), members)
				}
				return tw.Flush()
			})
		},
	}
}

func newGroupDescribeCmd(gf *groupFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP [GROUP...]",
		Short: "Show a group's members, their assignments, and committed offsets and lag per partition",
		Long: `Describe shows, for each GROUP, its state, protocol and coordinator; each member
(member id, instance id if static, client id, host) with the partitions assigned
to it; and for every partition the group is assigned or has committed to, the
committed offset, the log end offset (high watermark) and the lag between them.
A partition without a commit lags by everything in its log.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			if err := checkGroupNames(names); err != nil {
				return err
			}
			return gf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				lags, err := adm.Lag(ctx, names...)
				if err != nil && !partialShardError(err) {
					return gf.requestError(ctx, cmd, adm, "describing groups", err, kmsg.DescribeGroups, kmsg.OffsetFetch)
				}
				out := cmd.OutOrStdout()
				var errs []error
				printed := 0
				for _, name := range names {
					l, ok := lags[name]
					var gerr error
					switch {
					case !ok:
						gerr = errors.New("no answer for this group from the broker")
					case l.DescribeErr != nil:
						gerr = l.DescribeErr
					case l.State == "Dead":
						gerr = errors.New("no such group")
					}
					if gerr != nil {
						errs = append(errs, fmt.Errorf("group %s: %w", name, gerr))
						continue
					}
					if printed > 0 {
						fmt.Fprintln(out)
					}
					printed++
					if err := printGroup(out, l); err != nil {
						return err
					}
					if l.FetchErr != nil {
						errs = append(errs, fmt.Errorf("group %s: fetching committed offsets: %w", name, l.FetchErr))
					}
				}
				return errors.Join(errs...)
			})
		},
	}
}

// printGroup writes one described group with its members and lag.
func printGroup(out io.Writer, l kadm.DescribedGroupLag) error {
	fmt.Fprintf(out, "Group: %s\n", l.Group)
	fmt.Fprintf(out, "State: %s\n", dash(l.State))
	fmt.Fprintf(out, "Protocol type: %s\n", dash(l.ProtocolType))
	fmt.Fprintf(out, "Protocol: %s\n", dash(l.Protocol))
	c := l.Coordinator
	fmt.Fprintf(out, "Coordinator: %d (%s)\n", c.NodeID, net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))))
	fmt.Fprintf(out, "Members: %d\n", len(l.Members))

	if len(l.Members) > 0 {
		fmt.Fprintln(out)
		tw := newTable(out)
		fmt.Fprintln(tw, "MEMBER-ID\tINSTANCE-ID\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range l.Members {
			inst := "-"
			if m.InstanceID != nil {
				inst = *m.InstanceID
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, inst, dash(m.ClientID), dash(m.ClientHost), memberAssignment(m))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(out)
	rows := l.Lag.Sorted()
	if len(rows) == 0 {
		fmt.Fprintln(out, "No assigned partitions and no committed offsets.")
		return nil
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tMEMBER-ID\tCOMMITTED\tLOG-END\tLAG")
	for _, r := range rows {
		member := "-"
		if r.Member != nil {
			member = r.Member.MemberID
		}
		committed := "-"
		if r.Commit.At >= 0 {
			committed = strconv.FormatInt(r.Commit.At, 10)
		}
		end, lag := "?", "?"
		if r.End.Err == nil {
			end = strconv.FormatInt(r.End.Offset, 10)
		}
		if r.Err == nil {
			lag = strconv.FormatInt(r.Lag, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s", r.Topic, r.Partition, member, committed, end, lag)
		if r.Err != nil {
			fmt.Fprintf(tw, "\terror: %v", r.Err)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "Total lag: %d\n", l.Lag.Total())
	return nil
}

// memberAssignment renders what a member was assigned, decoded from the
// consumer protocol: "orders[0,2] payments[1]", topics sorted.
func memberAssignment(m kadm.DescribedGroupMember) string {
	if a, ok := m.Assigned.AsConsumer(); ok {
		topics := make([]kmsg.ConsumerMemberAssignmentTopic, 0, len(a.Topics))
		for _, t := range a.Topics {
			if len(t.Partitions) > 0 {
				topics = append(topics, t)
			}
		}
		if len(topics) == 0 {
			return "-"
		}
		sort.Slice(topics, func(i, j int) bool { return topics[i].Topic < topics[j].Topic })
		parts := make([]string, len(topics))
		for i, t := range topics {
			ps := append([]int32(nil), t.Partitions...)
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			parts[i] = t.Topic + int32List(ps)
		}
		return strings.Join(parts, " ")
	}
	if raw, ok := m.Assigned.Raw(); ok && len(raw) > 0 {
		return fmt.Sprintf("(%d bytes, not the consumer protocol)", len(raw))
	}
	return "-"
}

func newGroupDeleteCmd(gf *groupFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "delete GROUP [GROUP...]",
		Aliases: []string{"rm"},
		Short:   "Delete consumer groups and their committed offsets (only groups without members)",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			if err := checkGroupNames(names); err != nil {
				return err
			}
			return gf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteGroups(ctx, names...)
				if err != nil && !partialShardError(err) {
					return gf.requestError(ctx, cmd, adm, "deleting groups", err, kmsg.DeleteGroups)
				}
				out := cmd.OutOrStdout()
				failed := 0
				for _, name := range names {
					r, ok := resps[name]
					switch {
					case !ok && err != nil:
						failed++
						fmt.Fprintf(out, "%s: error: %v\n", name, err)
					case !ok:
						failed++
						fmt.Fprintf(out, "%s: error: no answer for this group from the broker\n", name)
					case r.Err != nil:
						failed++
						fmt.Fprintf(out, "%s: error: %v%s\n", name, brokerError(r.Err, r.ErrMessage), deleteHint(r.Err))
					default:
						fmt.Fprintf(out, "deleted group %s\n", name)
					}
				}
				return failedCount(failed, len(names), "groups")
			})
		},
	}
}

func deleteHint(err error) string {
	if errors.Is(err, kerr.NonEmptyGroup) {
		return " (the group still has members: stop its consumers, then delete it)"
	}
	return ""
}

// seekMode is where `group seek` moves the offsets to.
type seekMode int

const (
	seekEarliest seekMode = iota + 1
	seekLatest
	seekTimestamp
	seekOffset
)

type seekFlags struct {
	topic       string
	partitions  string
	toEarliest  bool
	toLatest    bool
	toTimestamp int64
	toOffset    int64
	dryRun      bool
}

// mode picks the one --to-* flag that was given.
func (sf *seekFlags) mode(cmd *cobra.Command) (seekMode, error) {
	var given []string
	var mode seekMode
	pick := func(set bool, name string, m seekMode) {
		if set {
			given = append(given, "--"+name)
			mode = m
		}
	}
	fs := cmd.Flags()
	pick(sf.toEarliest, "to-earliest", seekEarliest)
	pick(sf.toLatest, "to-latest", seekLatest)
	pick(fs.Changed("to-timestamp"), "to-timestamp", seekTimestamp)
	pick(fs.Changed("to-offset"), "to-offset", seekOffset)
	const choose = "one of --to-earliest, --to-latest, --to-timestamp MS or --to-offset N"
	switch {
	case len(given) == 0:
		return 0, errors.New("say where to move the offsets: give " + choose)
	case len(given) > 1:
		return 0, fmt.Errorf("%s cannot be combined: give only %s", strings.Join(given, " and "), choose)
	case mode == seekTimestamp && sf.toTimestamp < 0:
		return 0, fmt.Errorf("invalid --to-timestamp %d: want milliseconds since the Unix epoch", sf.toTimestamp)
	case mode == seekOffset && sf.toOffset < 0:
		return 0, fmt.Errorf("invalid --to-offset %d: must not be negative", sf.toOffset)
	}
	return mode, nil
}

// parsePartitionList parses --partitions: comma-separated partition numbers,
// each at most once. Empty input means all partitions (nil).
func parsePartitionList(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int32
	seen := make(map[int32]bool)
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("invalid --partitions %q: %q is not a partition number (want e.g. 0,1,2)", s, f)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("invalid --partitions %q: partition %d given more than once", s, n)
		}
		seen[int32(n)] = true
		out = append(out, int32(n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func newGroupSeekCmd(gf *groupFlags) *cobra.Command {
	sf := &seekFlags{}
	cmd := &cobra.Command{
		Use:   "seek GROUP --topic T (--to-earliest | --to-latest | --to-timestamp MS | --to-offset N)",
		Short: "Reset a group's committed offsets on a topic (the group must have no members)",
		Long: `Seek commits new offsets for GROUP on the partitions of --topic (all of them, or
those in --partitions), and prints each partition's old and new committed offset.

  --to-earliest     the log start offset
  --to-latest       the log end offset (high watermark): skip everything so far
  --to-timestamp MS the first record at or after MS milliseconds since the Unix
                    epoch, or the log end if there is none
  --to-offset N     offset N, clamped to the log's bounds

Offsets can only be reset while the group is Empty: stop its consumers first
(the broker rejects commits from outside the group's generation while it has
members). A group that does not exist yet is created by the commit. With
--dry-run nothing is committed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGroupSeek(cmd, gf, sf, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&sf.topic, "topic", "t", "", "reset the offsets on `TOPIC` (required)")
	fs.StringVarP(&sf.partitions, "partitions", "p", "", "comma-separated `LIST` of partitions to reset (default: all of the topic's)")
	fs.BoolVar(&sf.toEarliest, "to-earliest", false, "reset to the log start offset")
	fs.BoolVar(&sf.toLatest, "to-latest", false, "reset to the log end offset")
	fs.Int64Var(&sf.toTimestamp, "to-timestamp", 0, "reset to the first offset at or after time `MS` (milliseconds since the Unix epoch)")
	fs.Int64Var(&sf.toOffset, "to-offset", 0, "reset to offset `N` (clamped to the log's bounds)")
	fs.BoolVar(&sf.dryRun, "dry-run", false, "show the new offsets without committing them")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

// seekRow is one partition of a seek: where the group was, where it goes.
type seekRow struct {
	partition int32
	old       int64 // -1: nothing committed
	new       int64
	note      string
}

func runGroupSeek(cmd *cobra.Command, gf *groupFlags, sf *seekFlags, group string) error {
	if group == "" {
		return errors.New("group name must not be empty")
	}
	if sf.topic == "" {
		return errors.New("--topic must not be empty")
	}
	mode, err := sf.mode(cmd)
	if err != nil {
		return err
	}
	only, err := parsePartitionList(sf.partitions)
	if err != nil {
		return err
	}
	topic := sf.topic
	return gf.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
		exists, err := checkGroupEmpty(ctx, cmd, gf, adm, group)
		if err != nil {
			return err
		}

		partitions, err := seekPartitions(ctx, cmd, gf, adm, topic, only)
		if err != nil {
			return err
		}
		targets, err := seekTargets(ctx, adm, mode, sf, topic, partitions)
		if err != nil {
			return requestError(cmd, &gf.clientFlags, "listing offsets of topic "+topic, err)
		}

		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return gf.requestError(ctx, cmd, adm, "fetching committed offsets of group "+group, err, kmsg.OffsetFetch)
		}
		for i := range targets {
			targets[i].old = -1
			if o, ok := committed.Lookup(topic, targets[i].partition); ok && o.Err == nil && o.At >= 0 {
				targets[i].old = o.At
			}
		}

		out := cmd.OutOrStdout()
		if !exists {
			fmt.Fprintf(cmd.ErrOrStderr(), "note: group %s does not exist; committing offsets creates it\n", group)
		}
		if sf.dryRun {
			if err := printSeek(out, topic, targets, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "dry run: nothing committed for group %s\n", group)
			return nil
		}

		offsets := make(kadm.Offsets)
		for _, r := range targets {
			offsets.Add(kadm.Offset{Topic: topic, Partition: r.partition, At: r.new, LeaderEpoch: -1})
		}
		resps, err := adm.CommitOffsets(ctx, group, offsets)
		if err != nil {
			return gf.requestError(ctx, cmd, adm, "committing offsets of group "+group, err, kmsg.OffsetCommit)
		}
		errs := make(map[int32]error)
		for _, r := range targets {
			o, ok := resps.Lookup(topic, r.partition)
			switch {
			case !ok:
				errs[r.partition] = errors.New("no answer for this partition from the broker")
			case o.Err != nil:
				errs[r.partition] = o.Err
			}
		}
		if err := printSeek(out, topic, targets, errs); err != nil {
			return err
		}
		if len(errs) > 0 {
			return fmt.Errorf("%d of %d partitions failed%s", len(errs), len(targets), commitHint(errs))
		}
		fmt.Fprintf(out, "committed new offsets for %d partitions of %s for group %s\n", len(targets), topic, group)
		return nil
	})
}

// checkGroupEmpty refuses to go on unless group has no members: it is Empty,
// or it does not exist (then committing creates it, as Kafka's own tool
// allows). It reports whether the group exists.
func checkGroupEmpty(ctx context.Context, cmd *cobra.Command, gf *groupFlags, adm *kadm.Client, group string) (bool, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return false, gf.requestError(ctx, cmd, adm, "describing group "+group, err, kmsg.DescribeGroups)
	}
	d, ok := described[group]
	switch {
	case !ok:
		return false, fmt.Errorf("describing group %s: no answer for this group from the broker", group)
	case errors.Is(d.Err, kerr.GroupIDNotFound), d.Err == nil && d.State == "Dead":
		return false, nil
	case d.Err != nil:
		return false, fmt.Errorf("describing group %s: %w", group, brokerError(d.Err, d.ErrMessage))
	case d.State != "Empty" || len(d.Members) > 0:
		static := ""
		for _, m := range d.Members {
			if m.InstanceID != nil {
				static = " (static members, those with an instance id, stay until their session times out or they are removed)"
				break
			}
		}
		return false, fmt.Errorf("group %s is %s with %d member(s): offsets can only be reset while the group is Empty; stop its consumers first%s",
			group, dash(d.State), len(d.Members), static)
	}
	return true, nil
}

// seekPartitions returns the partitions of topic to reset: only, checked to
// exist, or all of them.
func seekPartitions(ctx context.Context, cmd *cobra.Command, gf *groupFlags, adm *kadm.Client, topic string, only []int32) ([]int32, error) {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, requestError(cmd, &gf.clientFlags, "looking up topic "+topic, err)
	}
	td, ok := tds[topic]
	if !ok {
		return nil, fmt.Errorf("topic %s: not in the broker's metadata answer", topic)
	}
	if td.Err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, td.Err)
	}
	if len(only) == 0 {
		ps := td.Partitions.Numbers()
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		return ps, nil
	}
	for _, p := range only {
		if _, ok := td.Partitions[p]; !ok {
			return nil, fmt.Errorf("topic %s has no partition %d (it has %d)", topic, p, len(td.Partitions))
		}
	}
	return only, nil
}

// seekTargets lists the offsets each partition moves to. Any partition whose
// offset cannot be listed fails the whole seek before anything is committed.
func seekTargets(ctx context.Context, adm *kadm.Client, mode seekMode, sf *seekFlags, topic string, partitions []int32) ([]seekRow, error) {
	var (
		listed, starts, ends kadm.ListedOffsets
		err                  error
	)
	switch mode {
	case seekEarliest:
		listed, err = adm.ListStartOffsets(ctx, topic)
	case seekLatest:
		listed, err = adm.ListEndOffsets(ctx, topic)
	case seekTimestamp:
		listed, err = adm.ListOffsetsAfterMilli(ctx, sf.toTimestamp, topic)
	case seekOffset:
		if starts, err = adm.ListStartOffsets(ctx, topic); err == nil {
			ends, err = adm.ListEndOffsets(ctx, topic)
		}
	}
	if err != nil {
		return nil, err
	}
	lookup := func(l kadm.ListedOffsets, p int32) (int64, error) {
		o, ok := l.Lookup(topic, p)
		switch {
		case !ok:
			return 0, fmt.Errorf("partition %d: no answer from the broker", p)
		case o.Err != nil:
			return 0, fmt.Errorf("partition %d: %w", p, o.Err)
		case o.Offset < 0:
			return 0, fmt.Errorf("partition %d: the broker found no offset", p)
		}
		return o.Offset, nil
	}
	rows := make([]seekRow, 0, len(partitions))
	for _, p := range partitions {
		r := seekRow{partition: p}
		if mode != seekOffset {
			if r.new, err = lookup(listed, p); err != nil {
				return nil, err
			}
			rows = append(rows, r)
			continue
		}
		start, err := lookup(starts, p)
		if err != nil {
			return nil, err
		}
		end, err := lookup(ends, p)
		if err != nil {
			return nil, err
		}
		r.new = sf.toOffset
		switch {
		case r.new < start:
			r.new, r.note = start, fmt.Sprintf("(clamped: the log starts at %d)", start)
		case r.new > end:
			r.new, r.note = end, fmt.Sprintf("(clamped: the log ends at %d)", end)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// printSeek writes the old → new table; errs holds failed partitions.
func printSeek(out io.Writer, topic string, rows []seekRow, errs map[int32]error) error {
	tw := newTable(out)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tOLD\tNEW")
	for _, r := range rows {
		old := "-"
		if r.old >= 0 {
			old = strconv.FormatInt(r.old, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d", topic, r.partition, old, r.new)
		if err := errs[r.partition]; err != nil {
			fmt.Fprintf(tw, "\terror: %v", err)
		} else if r.note != "" {
			fmt.Fprintf(tw, "\t%s", r.note)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// commitHint explains the commit errors that mean members joined the group
// after it was checked.
func commitHint(errs map[int32]error) string {
	for _, err := range errs {
		if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.RebalanceInProgress) {
			return " (the group gained members after it was checked: stop its consumers and try again)"
		}
	}
	return ""
}
