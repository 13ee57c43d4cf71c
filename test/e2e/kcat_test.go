package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// kcatLines produces n "key-i:value-i" lines.
func kcatLines(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-k%d:%s-v%d", prefix, i, prefix, i)
	}
	return out
}

// TestKcatProduceConsume: kcat (librdkafka) produces with each codec and acks setting and
// reads everything back with -C -o beginning -e.
func TestKcatProduceConsume(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	b := startBroker(t, BrokerOpts{})
	adm := b.Admin(t)
	cases := []struct {
		name  string
		parts int32
		args  []string
	}{
		{"plain", 3, nil},
		{"gzip", 1, []string{"-z", "gzip"}},
		{"snappy", 1, []string{"-z", "snappy"}},
		{"lz4", 1, []string{"-z", "lz4"}},
		{"zstd", 1, []string{"-z", "zstd"}},
		{"acks-all", 2, []string{"-X", "acks=all"}},
		{"acks-1", 2, []string{"-X", "acks=1"}},
		{"idempotent", 2, []string{"-X", "acks=all", "-X", "enable.idempotence=true"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic := "kcat-" + c.name
			createTopic(t, adm, topic, c.parts, nil)
			want := kcatLines(c.name, 200)
			args := append([]string{"-P", "-b", b.KafkaAddr, "-t", topic, "-K", ":"}, c.args...)
			r := run(t, 60*time.Second, strings.Join(want, "\n")+"\n", kcat, args...)
			if r.Err != nil {
				t.Fatalf("kcat %s: %s", strings.Join(args, " "), r)
			}
			if strings.Contains(r.Stderr, "ERROR") {
				t.Fatalf("kcat -P reported errors:\n%s", r.Stderr)
			}
			// The high watermark is the committed (fsynced) offset: an acks=1 answer comes
			// at append, so the end offsets may trail it by one fsync round.
			var ends map[int32]int64
			var total int64
			deadline := time.Now().Add(10 * time.Second)
			for {
				ends = endOffsets(t, adm, topic)
				total = 0
				for _, e := range ends {
					total += e
				}
				if total >= int64(len(want)) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if total != int64(len(want)) {
				t.Errorf("after kcat -P of %d lines the partitions' end offsets sum to %d (%v)", len(want), total, ends)
			}
			// -c bounds the read, so that the round trip is checked on its own; whether -e
			// alone ends at the end of the partitions is the end-of-partition subtest.
			cargs := []string{"-C", "-b", b.KafkaAddr, "-t", topic, "-o", "beginning", "-e", "-c", fmt.Sprint(len(want)), "-f", `%k:%s\n`}
			r = run(t, 30*time.Second, "", kcat, cargs...)
			got := lines(r.Stdout)
			if r.Err != nil {
				t.Fatalf("kcat %s (printed %d of %d lines before failing): %s", strings.Join(cargs, " "), len(got), len(want), r)
			}
			checkKcatLines(t, got, want, c.parts == 1)
		})
	}
	// kcat -C -e exits once every partition reported its end; that needs Fetch answers
	// without records that librdkafka can parse.
	t.Run("end-of-partition", func(t *testing.T) {
		for _, c := range []struct {
			topic string
			n     int
		}{{"kcat-plain", 200}, {"kcat-acks-all", 200}, {"kcat-empty", 0}} {
			if c.n == 0 {
				createTopic(t, adm, c.topic, 2, nil)
			}
			cargs := []string{"-C", "-b", b.KafkaAddr, "-t", c.topic, "-o", "beginning", "-e", "-f", `%k:%s\n`}
			r := run(t, 20*time.Second, "", kcat, cargs...)
			got := lines(r.Stdout)
			if r.Err != nil {
				t.Errorf("kcat %s did not exit at the end of the partitions (printed %d of %d lines): %s", strings.Join(cargs, " "), len(got), c.n, r)
				continue
			}
			if c.n > 0 {
				checkKcatLines(t, got, kcatLines(strings.TrimPrefix(c.topic, "kcat-"), c.n), false)
			} else if len(got) != 0 {
				t.Errorf("kcat -C -e on an empty topic printed %q", got)
			}
		}
	})
}

// checkKcatLines compares consumed lines with produced ones, in order when ordered.
func checkKcatLines(t *testing.T, got, want []string, ordered bool) {
	t.Helper()
	if ordered {
		if !slices.Equal(got, want) {
			t.Errorf("kcat -C read %d lines, want the %d produced in order\nfirst got: %q", len(got), len(want), head(got, 5))
		}
		return
	}
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("kcat -C read %d lines, want the %d produced\nfirst got: %q", len(got), len(want), head(got, 5))
	}
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// TestKcatMetadata: kcat -L lists the broker and the topics with their partitions.
func TestKcatMetadata(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	b := startBroker(t, BrokerOpts{NodeID: 1})
	createTopic(t, b.Admin(t), "kcat-meta", 3, nil)

	r := run(t, 30*time.Second, "", kcat, "-L", "-b", b.KafkaAddr)
	if r.Err != nil {
		t.Fatalf("kcat -L: %s", r)
	}
	for _, want := range []string{
		"1 brokers:",
		"broker 1 at " + b.KafkaAddr,
		`topic "kcat-meta" with 3 partitions:`,
		"partition 0, leader 1, replicas: 1, isrs: 1",
		"partition 2, leader 1, replicas: 1, isrs: 1",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("kcat -L output lacks %q:\n%s", want, r.Stdout)
		}
	}

	r = run(t, 30*time.Second, "", kcat, "-L", "-J", "-b", b.KafkaAddr, "-t", "kcat-meta")
	if r.Err != nil {
		t.Fatalf("kcat -L -J: %s", r)
	}
	var md struct {
		Brokers []struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Error      string `json:"error"`
			Partitions []struct {
				Partition int `json:"partition"`
				Leader    int `json:"leader"`
				Error     string
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &md); err != nil {
		t.Fatalf("kcat -L -J output is not JSON: %v\n%s", err, r.Stdout)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].ID != 1 || md.Brokers[0].Name != b.KafkaAddr {
		t.Errorf("kcat -L -J brokers = %+v, want one broker 1 at %s", md.Brokers, b.KafkaAddr)
	}
	if len(md.Topics) != 1 || md.Topics[0].Topic != "kcat-meta" || len(md.Topics[0].Partitions) != 3 || md.Topics[0].Error != "" {
		t.Errorf("kcat -L -J -t kcat-meta topics = %+v, want kcat-meta with 3 partitions", md.Topics)
	}
}
