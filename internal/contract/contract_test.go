package contract

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestExplainScript runs testdata/*.txt. Each `explain` describes a topic and prints its
// contract as `cairn topic explain` shows it (`json` prints the promises' machine form):
//
//	explain [caching] [min-isr=N] [min-racks=N] [json]
//	p0 leader=1: 1@a 2@b 3@c      a replica: id@rack ("-": none), ! down, ~ out of sync
func TestExplainScript(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "explain" {
				t.Fatalf("unknown command %q", d.Cmd)
			}
			top := Topic{Name: "t", MinInsyncReplicas: 1, MinInsyncRacks: 1, FlushMs: 100, FlushBytes: 262144}
			if d.HasArg("min-isr") {
				d.ScanArgs(t, "min-isr", &top.MinInsyncReplicas)
			}
			if d.HasArg("min-racks") {
				d.ScanArgs(t, "min-racks", &top.MinInsyncRacks)
			}
			top.WriteCaching = d.HasArg("caching")
			top.Settings = []Setting{
				{Name: "write.caching", Value: strconv.FormatBool(top.WriteCaching), Source: "topic"},
				{Name: "min.insync.replicas", Value: strconv.Itoa(top.MinInsyncReplicas), Source: "cluster"},
				{Name: "min.insync.racks", Value: strconv.Itoa(top.MinInsyncRacks), Source: "default"},
			}
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				if line != "" {
					top.Partitions = append(top.Partitions, parsePartition(t, line))
				}
			}
			c := Explain(top, nil)
			if d.HasArg("json") {
				b, err := json.MarshalIndent(c.Promises[2], "", " ")
				if err != nil {
					t.Fatal(err)
				}
				return string(b) + "\n"
			}
			var out strings.Builder
			Render(&out, c)
			return out.String()
		})
	})
}

func parsePartition(t *testing.T, line string) Partition {
	head, reps, ok := strings.Cut(line, ":")
	if !ok {
		t.Fatalf("partition line %q: want pN leader=N: replicas", line)
	}
	var p Partition
	fields := strings.Fields(head)
	id, err := strconv.Atoi(strings.TrimPrefix(fields[0], "p"))
	if err != nil || len(fields) != 2 || !strings.HasPrefix(fields[1], "leader=") {
		t.Fatalf("partition line %q", line)
	}
	leader, err := strconv.Atoi(strings.TrimPrefix(fields[1], "leader="))
	if err != nil {
		t.Fatalf("partition line %q: %v", line, err)
	}
	p.ID, p.Leader = int32(id), int32(leader)
	for _, r := range strings.Fields(reps) {
		rep := Replica{Live: true, InSync: true}
		if s, ok := strings.CutSuffix(r, "!"); ok {
			r, rep.Live, rep.InSync = s, false, false
		} else if s, ok := strings.CutSuffix(r, "~"); ok {
			r, rep.InSync = s, false
		}
		idStr, rack, _ := strings.Cut(r, "@")
		n, err := strconv.Atoi(idStr)
		if err != nil {
			t.Fatalf("replica %q: %v", r, err)
		}
		rep.ID = int32(n)
		if rack != "-" {
			rep.Rack = rack
		}
		p.Replicas = append(p.Replicas, rep)
	}
	return p
}
