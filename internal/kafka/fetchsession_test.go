package kafka

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/security"
)

// The session cache, scripted (testdata/fetch_sessions). Commands:
//
//	fetch [as=P] id=N epoch=E [parts=t/0@5,...] [forget=t/0,...]
//	    admit a request; prints how it is read, or its error
//	answer [hw=t/0:10,...] [records=t/0,...] [errors=t/1,...] [logstart=t/0:3,...]
//	    the read of the last admitted request found this (a partition not named has the
//	    high watermark and log start it had, or 0); prints what the answer holds and the
//	    session id it carries
//	read
//	    which partitions of the last admitted incremental fetch are read now (toRead);
//	    the next answer then holds only what they found
//	replica t/0,...
//	    the broker holds these replicas (the first use of a name creates it)
//	move t/0,...
//	    a boundary of these replicas moved
//	wait D
//	    let time pass
//	stats
type sessionScript struct {
	c   *fetchSessions
	now time.Time
	ids int32
	// last admitted request, and who sent it
	ctx fetchContext
	as  security.Principal
	// what the partitions were last found to hold
	hw, logStart map[topicPartition]int64
	replicas     map[topicPartition]*fakeReplica
	read         bool
}

type fakeReplica struct{ v uint64 }

func (r *fakeReplica) Version() uint64 { return r.v }

func TestFetchSessionScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/fetch_sessions", func(t *testing.T, path string) {
		s := &sessionScript{now: time.Unix(1_000_000, 0), hw: map[topicPartition]int64{}, logStart: map[topicPartition]int64{},
			replicas: map[topicPartition]*fakeReplica{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string { return s.run(t, d) })
	})
}

func (s *sessionScript) cache(slots, maxParts int) {
	s.c = newFetchSessions(slots)
	s.c.maxParts = maxParts
	s.c.now = func() time.Time { return s.now }
	s.c.newID = func() int32 { s.ids++; return s.ids }
}

func (s *sessionScript) run(t *testing.T, d *datadriven.TestData) string {
	arg := func(k string) string {
		for _, a := range d.CmdArgs {
			if a.Key == k && len(a.Vals) > 0 {
				return strings.Join(a.Vals, ",")
			}
		}
		return ""
	}
	num := func(k string) int {
		n, err := strconv.Atoi(arg(k))
		if err != nil {
			d.Fatalf(t, "%s: %v", k, err)
		}
		return n
	}
	switch d.Cmd {
	case "cache":
		s.cache(num("slots"), num("partitions"))
		return "ok"
	case "fetch":
		s.as = security.UserPrincipal("alice")
		if p := arg("as"); p != "" {
			s.as = security.UserPrincipal(p)
		}
		var parts []fetchPartition
		for _, f := range splitList(arg("parts")) {
			tp, off, _ := strings.Cut(f, "@")
			o, _ := strconv.ParseInt(off, 10, 64)
			parts = append(parts, fetchPartition{tp: parseTP(t, d, tp), fetchOffset: o, maxBytes: 1 << 20})
		}
		var forgotten []topicPartition
		for _, f := range splitList(arg("forget")) {
			forgotten = append(forgotten, parseTP(t, d, f))
		}
		s.ctx, s.read = s.c.begin(s.as, int32(num("id")), int32(num("epoch")), parts, forgotten), false
		switch {
		case s.ctx.errCode != 0:
			return "error " + kerr.ErrorForCode(s.ctx.errCode).(*kerr.Error).Message
		case s.ctx.session != nil:
			return fmt.Sprintf("incremental session %d (next epoch %d): reads %s", s.ctx.session.id, s.ctx.session.epoch, partsString(s.ctx.parts))
		case s.ctx.open:
			return "full, opens a session: reads " + partsString(s.ctx.parts)
		}
		return "full, sessionless: reads " + partsString(s.ctx.parts)
	case "answer":
		records, errored := splitList(arg("records")), splitList(arg("errors"))
		for _, kv := range splitList(arg("hw")) {
			tp, v, _ := strings.Cut(kv, ":")
			s.hw[parseTP(t, d, tp)], _ = strconv.ParseInt(v, 10, 64)
		}
		for _, kv := range splitList(arg("logstart")) {
			tp, v, _ := strings.Cut(kv, ":")
			s.logStart[parseTP(t, d, tp)], _ = strconv.ParseInt(v, 10, 64)
		}
		var answers []fetchAnswer
		var answered []bool
		var held []string
		answers, answered = make([]fetchAnswer, len(s.ctx.parts)), make([]bool, len(s.ctx.parts))
		for i, fp := range s.ctx.parts {
			if s.read && !slices.Contains(s.ctx.readIdx, i) {
				continue
			}
			name := fmt.Sprintf("%s/%d", fp.tp.topic, fp.tp.partition)
			a := fetchAnswer{records: slices.Contains(records, name), errored: slices.Contains(errored, name),
				highWatermark: s.hw[fp.tp], logStart: s.logStart[fp.tp]}
			keep := s.ctx.mustAnswer(i, a)
			answers[i], answered[i] = a, keep
			if keep {
				held = append(held, name)
			}
		}
		id := s.c.end(s.as, s.ctx, answers, answered)
		return fmt.Sprintf("answers [%s], session id %d", strings.Join(held, " "), id)
	case "read":
		got := s.ctx.toRead(func(tp topicPartition) versioned {
			if r := s.replicas[tp]; r != nil {
				return r
			}
			return nil
		})
		s.read = true
		return "reads " + partsString(got)
	case "replica", "move":
		for _, name := range splitList(d.CmdArgs[0].Key) {
			tp := parseTP(t, d, name)
			if s.replicas[tp] == nil {
				s.replicas[tp] = &fakeReplica{}
			}
			if d.Cmd == "move" {
				s.replicas[tp].v++
			}
		}
		return "ok"
	case "wait":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			d.Fatalf(t, "wait: %v", err)
		}
		s.now = s.now.Add(dur)
		return "ok"
	case "stats":
		n, parts, ev := s.c.stats()
		return fmt.Sprintf("%d sessions, %d partitions, %d evictions", n, parts, ev)
	}
	d.Fatalf(t, "unknown command %s", d.Cmd)
	return ""
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func parseTP(t *testing.T, d *datadriven.TestData, s string) topicPartition {
	topic, p, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(p)
	if !ok || err != nil {
		d.Fatalf(t, "bad partition %q", s)
	}
	return topicPartition{topic, int32(n)}
}

func partsString(parts []fetchPartition) string {
	var out []string
	for _, p := range parts {
		out = append(out, fmt.Sprintf("%s/%d@%d", p.tp.topic, p.tp.partition, p.fetchOffset))
	}
	return "[" + strings.Join(out, " ") + "]"
}
