package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The web console in a real browser: headless Chromium loads each page from a real
// three-broker cluster, the test checks what the page shows (after its script ran), and
// each page's screenshot is kept in the test's artefact folder (go test -artifacts;
// scripts/test.sh keeps them under test-output/).

// TestConsolePages: the cluster page lists the three brokers with their racks and the
// controller; the topics page the topic; the topic page every replica's five boundaries
// as bars that its script refreshes, and the topic's contract; the groups page a stable
// group with its member, assignment and lag; a killed broker shows as down everywhere.
func TestConsolePages(t *testing.T) {
	t.Parallel()
	chrome := requireChromium(t)
	bs := startCluster(t, 3)
	const topic, group = "console-orders", "console-billing"
	adm := kadm.NewClient(clusterClient(t, bs))
	createReplicatedTopic(t, adm, topic, 2, 3)
	waitFor(t, 60*time.Second, func() bool { return allInSync(bs, topic, 2, 3) })
	producer := clusterClient(t, bs, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceSync(t, producer, topic, "a", 100)

	consumer := clusterClient(t, bs, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ClientID("billing-app"), kgo.FetchMaxWait(500*time.Millisecond))
	seen := 0
	for seen < 100 {
		fs := consumer.PollFetches(ctxFor(t, 30*time.Second))
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		seen += fs.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctxFor(t, 30*time.Second)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	produceSync(t, producer, topic, "b", 25) // read perhaps, never committed: the lag

	base := "http://" + bs[0].AdminAddr + "/console"
	page := func(path string) string { return browse(t, chrome, base+path) }

	cluster := page("/")
	wantIn(t, "cluster page", cluster, "Healthy", "rack-1", "rack-2", "rack-3", "controller</span>", "this broker</span>")
	if n := strings.Count(cluster, "<tr"); n < 4 {
		t.Errorf("cluster page: %d table rows, want a header and three brokers", n)
	}
	screenshot(t, chrome, base+"/", "cluster")

	topics := page("/topics")
	wantIn(t, "topics page", topics, `href="/console/topics/`+topic+`"`, "fsynced on 2 replicas in 2 racks")
	screenshot(t, chrome, base+"/topics", "topics")

	// The bars refresh from the page's script: the browser ran it and replaced them.
	detail := page("/topics/" + topic)
	wantIn(t, "topic page", detail, "Partition 0", "Partition 1", "majority replicated", "committed", "visible",
		"data-refreshed=", "acks=all", "loss of rack rack-1", "Every partition's state keeps the promise now", "flush.messages")
	if n := strings.Count(detail, `class="replica-bars"`); n != 6 {
		t.Errorf("topic page: %d replica bar groups, want 2 partitions × 3 replicas", n)
	}
	if !regexp.MustCompile(`width: 100(\.0)?%`).MatchString(detail) {
		t.Errorf("topic page: no full bar: every replica holds the whole log")
	}
	screenshot(t, chrome, base+"/topics/"+topic, "topic")

	waitFor(t, 60*time.Second, func() bool {
		return strings.Contains(page("/groups"), `class="total-lag">25<`)
	})
	groups := page("/groups")
	wantIn(t, "groups page", groups, group, "Stable", "billing-app", topic+"/0", topic+"/1")
	screenshot(t, chrome, base+"/groups", "groups")

	wantIn(t, "reconfigurations page", page("/reconfigurations"), "No reconfigurations under way", "data-refreshed=")
	screenshot(t, chrome, base+"/reconfigurations", "reconfigurations")
	wantIn(t, "lab page", page("/lab"), "was not started with --simulate-power-loss")

	consumer.Close()
	bs[2].Kill9()
	waitFor(t, 60*time.Second, func() bool { return strings.Contains(page("/"), "Brokers down: 3") })
	waitFor(t, 60*time.Second, func() bool {
		d := page("/topics/" + topic)
		return strings.Count(d, "broker not answering") == 2 && strings.Contains(d, "is down")
	})
	screenshot(t, chrome, base+"/topics/"+topic, "topic-broker-down")
	screenshot(t, chrome, base+"/", "cluster-broker-down")

	if code, body := adminRequest(t, bs[0], "GET", "/console/topics/no-such-topic", ""); code != http.StatusNotFound || !strings.Contains(body, "There is no topic &#34;no-such-topic&#34;") {
		t.Errorf("unknown topic: HTTP %d\n%s", code, body)
	}
}

// TestConsoleReconfiguration: a move of 1,2,3 to 1,2,4 under load, held in its joint
// configuration by the test gate, is listed with its phase and a progress bar; released,
// it finishes and leaves the page.
func TestConsoleReconfiguration(t *testing.T) {
	t.Parallel()
	chrome := requireChromium(t)
	bs, gate := heldCluster(t, 4)
	const topic = "console-move"
	adm, load := loadedPartition(t, bs[0], topic, 300)
	holdMoves(t, gate, "joint")
	moveTo(t, adm, topic, []int32{1, 2, 4})
	waitHeld(t, bs, topic, "joint", 4)

	url := "http://" + bs[0].AdminAddr + "/console/reconfigurations"
	var got string
	waitFor(t, 30*time.Second, func() bool { got = browse(t, chrome, url); return strings.Contains(got, "bytes moved") })
	wantIn(t, "reconfigurations page", got, topic+"</a>/0", `<td class="nowrap">1, 2, 3</td><td class="nowrap">1, 2, 4</td><td>joint</td>`, `class="fill" style="width: `)
	screenshot(t, chrome, url, "reconfiguration-joint")

	holdMoves(t, gate, "")
	waitMoved(t, adm, topic, []int32{1, 2, 4}, 60*time.Second)
	load.stop()
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(browse(t, chrome, url), "No reconfigurations under way") })
}

// TestConsoleLab: on a --simulate-power-loss broker the lab page runs the durability lab
// (a cluster of its own) and shows its output as it runs, until every step has passed; a
// POST from another site is refused. A broker started with --admin-console=false serves
// no console.
func TestConsoleLab(t *testing.T) {
	t.Parallel()
	chrome := requireChromium(t)
	off := startBroker(t, BrokerOpts{Args: []string{"--admin-console=false"}})
	if code, _ := adminRequest(t, off, "GET", "/console/", ""); code != http.StatusNotFound {
		t.Errorf("--admin-console=false: HTTP %d, want 404", code)
	}

	b := startBroker(t, BrokerOpts{Args: []string{"--simulate-power-loss"}})
	base := "http://" + b.AdminAddr + "/console"
	wantIn(t, "lab page", browse(t, chrome, base+"/lab"), `id="run-lab"`, "Run the lab")
	if code := postLab(t, base, "cross-site"); code != http.StatusForbidden {
		t.Fatalf("a cross-site POST: HTTP %d, want 403", code)
	}
	if code := postLab(t, base, "same-origin"); code != http.StatusSeeOther {
		t.Fatalf("starting the lab: HTTP %d, want 303", code)
	}
	if code := postLab(t, base, "same-origin"); code != http.StatusConflict {
		t.Errorf("a second run while one runs: HTTP %d, want 409", code)
	}
	waitFor(t, 2*time.Minute, func() bool {
		_, body := adminRequest(t, b, "GET", "/console/lab/output", "")
		return strings.Contains(body, "== Step 1")
	})
	running := browse(t, chrome, base+"/lab")
	wantIn(t, "lab page while running", running, "Running", "data-refreshed=")
	screenshot(t, chrome, base+"/lab", "lab-running")

	waitFor(t, 6*time.Minute, func() bool {
		_, body := adminRequest(t, b, "GET", "/console/lab", "")
		return !strings.Contains(body, "Running…")
	})
	done := browse(t, chrome, base+"/lab")
	wantIn(t, "lab page when done", done, "Passed: every outcome is what the contract allows", "Run the lab again")
	if n := strings.Count(done, "OK: the outcome is what the contract allows."); n != 6 {
		t.Errorf("lab page: %d steps passed, want 6\n%s", n, done)
	}
	screenshot(t, chrome, base+"/lab", "lab-done")
}

func requireChromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: %s", installHint)
	}
	return path
}

// chromiumArgs run one headless browser of its own, as root if need be, with its script
// given time to run (virtual time: the page's timers fire, its fetches are real).
func chromiumArgs(t *testing.T, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,1800", "--virtual-time-budget=3000"}, extra...)
}

// browse is the page's DOM after its script ran.
func browse(t *testing.T, chrome, url string) string {
	t.Helper()
	r := run(t, 60*time.Second, "", chrome, chromiumArgs(t, "--dump-dom", url)...)
	if r.Err != nil || !strings.Contains(r.Stdout, "</html>") {
		t.Fatalf("chromium %s: %s", url, r)
	}
	return r.Stdout
}

// screenshot keeps the page's picture as name.png in the test's artefact folder.
func screenshot(t *testing.T, chrome, url, name string) {
	t.Helper()
	out := filepath.Join(t.ArtifactDir(), name+".png")
	r := run(t, 60*time.Second, "", chrome, chromiumArgs(t, "--screenshot="+out, url)...)
	if st, err := os.Stat(out); r.Err != nil || err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot of %s: %v %s", url, err, r)
	}
}

func wantIn(t *testing.T, what, body string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Errorf("%s: missing %q", what, p)
		}
	}
	if t.Failed() {
		t.Logf("%s:\n%s", what, body)
	}
}

// postLab asks the broker to start a lab as a page of site (Sec-Fetch-Site) would, and
// returns the status, not following the redirect to the lab page.
func postLab(t *testing.T, base, site string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t, 10*time.Second), http.MethodPost, base+"/lab", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Sec-Fetch-Site", site)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("POST %s/lab: %v", base, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
