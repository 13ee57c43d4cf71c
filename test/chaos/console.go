package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-io/cairn/test/chaos/faults"
)

// The console poller. Through the whole session it asks a random broker, once a second,
// for the pages of the web console that gather every broker's view (the topic's
// boundaries, the consumer groups), for the cluster page and for the topic's contract, as
// an operator's browser would while the faults hit. A broker that is down, paused or cut
// off may not answer; one that answers must answer well: a 5xx, or a page without what it
// shows, fails the session, and so does a handler's panic in any broker's log.

// consolePaths are what the poller asks for, with a piece every good answer holds.
var consolePaths = []struct{ path, holds string }{
	{"/console/", `id="brokers"`},
	{"/console/topics/" + topic + "/boundaries", `class="partition-bars"`},
	{"/console/groups", "Consumer groups"},
	{"/v1/topics/" + topic + "/contract", `"promises"`},
}

type consoleStats struct {
	mu                   sync.Mutex
	asked, ok, notServed int
	bad                  []string
	took                 []time.Duration // of the answers served well
}

func (s *consoleStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := fmt.Sprintf("console: %d requests, %d answered well, %d not answered (broker down, paused or cut off, or not knowing the topic yet), %d bad",
		s.asked, s.ok, s.notServed, len(s.bad))
	if n := len(s.took); n > 0 {
		t := slices.Sorted(slices.Values(s.took))
		line += fmt.Sprintf("; answered in p50 %v, p99 %v, max %v", t[n/2].Round(time.Millisecond),
			t[min(n-1, n*99/100)].Round(time.Millisecond), t[n-1].Round(time.Millisecond))
	}
	return line
}

// pollConsole runs until ctx ends.
func pollConsole(ctx context.Context, cl *faults.Cluster, hc *http.Client, seed uint64, st *consoleStats) {
	rng := rand.New(rand.NewPCG(seed, 17))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b := cl.Broker(1 + rng.IntN(cl.N()))
		p := consolePaths[rng.IntN(len(consolePaths))]
		start := time.Now()
		why, served := askConsole(ctx, hc, b.AdminAddr, p.path, p.holds)
		took := time.Since(start)
		if ctx.Err() != nil {
			return
		}
		st.mu.Lock()
		st.asked++
		switch {
		case why != "":
			st.bad = append(st.bad, fmt.Sprintf("%s %s: %s", time.Now().Format("15:04:05.000"), p.path, why))
		case served:
			st.ok++
			st.took = append(st.took, took)
		default:
			st.notServed++
		}
		st.mu.Unlock()
	}
}

// askConsole returns why an answer is bad ("" if it is not), and whether it was served.
func askConsole(ctx context.Context, hc *http.Client, addr, path, holds string) (string, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err.Error(), false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	switch {
	case err != nil:
		return "", false // cut off or killed while answering
	case resp.StatusCode == http.StatusNotFound && strings.Contains(path, topic):
		return "", false // a broker that has not applied the topic's creation yet
	case resp.StatusCode != http.StatusOK:
		return fmt.Sprintf("HTTP %d: %.200s", resp.StatusCode, body), false
	case !strings.Contains(string(body), holds):
		return fmt.Sprintf("HTTP 200 without %q: %.200s", holds, body), false
	}
	return "", true
}

// consolePanics lists the handler panics in the brokers' logs.
func consolePanics(cl *faults.Cluster) []string {
	var out []string
	logs, _ := filepath.Glob(filepath.Join(cl.LogDir(), "*"))
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.Contains(line, "http: panic serving") {
				out = append(out, filepath.Base(l)+": "+line)
			}
		}
		f.Close()
	}
	return out
}

// consoleError is the session's verdict on the console.
func consoleError(cl *faults.Cluster, st *consoleStats) error {
	st.mu.Lock()
	bad := append([]string(nil), st.bad...)
	st.mu.Unlock()
	bad = append(bad, consolePanics(cl)...)
	if len(bad) == 0 {
		return nil
	}
	for _, b := range bad[:min(len(bad), 10)] {
		fmt.Println("  console:", b)
	}
	return fmt.Errorf("%d bad console answers or handler panics", len(bad))
}
