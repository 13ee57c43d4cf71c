package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeAdmin is an admin HTTP API that speaks the issue-14 contract from canned answers,
// and records what it was asked.
type fakeAdmin struct {
	t   *testing.T
	srv *httptest.Server
	mux *http.ServeMux

	mu       sync.Mutex
	requests []string // "METHOD /path?query body"
}

func newFakeAdmin(t *testing.T) *fakeAdmin {
	t.Helper()
	f := &fakeAdmin{t: t, mux: http.NewServeMux()}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		line := r.Method + " " + r.URL.RequestURI()
		if len(body) > 0 {
			line += " " + string(body)
		}
		f.mu.Lock()
		f.requests = append(f.requests, line)
		f.mu.Unlock()
		f.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// answer serves pattern (a ServeMux pattern) with a fixed status and body.
func (f *fakeAdmin) answer(pattern string, status int, body string) {
	f.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	})
}

func (f *fakeAdmin) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// run runs `cairn cluster args...` against the fake.
func (f *fakeAdmin) run(args ...string) result {
	f.t.Helper()
	return runCLI(f.t, "", append([]string{"cluster", "--admin-url", f.srv.URL}, args...)...)
}

// exitCode is the process exit status main gives err.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

const (
	healthyBody = `{"healthy":true,"controller_id":1,"all_nodes":[1,2,3],"nodes_down":[],` +
		`"leaderless_partitions":[],"under_replicated_partitions":[],"under_min_isr_partitions":[],"under_min_racks_partitions":[]}`
	unhealthyBody = `{"healthy":false,"controller_id":2,"all_nodes":[1,2,3],"nodes_down":[3],` +
		`"leaderless_partitions":[{"topic":"t","partition":0}],` +
		`"under_replicated_partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}],` +
		`"under_min_isr_partitions":[],"under_min_racks_partitions":[{"topic":"racked","partition":3}]}`
	balancerBody = `{"enabled":true,"interval_seconds":30,"last_run":"2026-12-01T10:00:00Z","moves":4,"leaders":{"10":1,"2":5,"1":5}}`
)

// unwrapped joins the continuation lines of a wrapped report to the line they continue.
func unwrapped(s string) string {
	return strings.ReplaceAll(s, "\n"+strings.Repeat(" ", healthLabelWidth), " ")
}

func TestClusterHealthHealthyExitsZero(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("GET /v1/cluster/health_overview", 200, healthyBody)
	f.answer("GET /v1/cluster/leader_balancer", 200, balancerBody)
	r := f.run("health")
	if r.err != nil {
		t.Fatalf("healthy cluster: %v\n%s", r.err, r.out)
	}
	for _, w := range []string{"Cluster:          healthy", "Controller:       broker 1", "Brokers:          1, 2, 3",
		"Down:             none", "Leaderless:       none", "Under min racks:  none",
		"Leader balancer:  on, every 30s, last run 2026-12-01T10:00:00Z, 4 moves; leaders per broker 1:5 2:5 10:1"} {
		if !strings.Contains(unwrapped(r.out), w) {
			t.Errorf("output lacks %q:\n%s", w, r.out)
		}
	}
}

func TestClusterHealthUnhealthyExitsOne(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("GET /v1/cluster/health_overview", 200, unhealthyBody)
	// No leader balancer route: a broker without one has its line left out.
	r := f.run("health")
	if code := exitCode(r.err); code != exitUnhealthy {
		t.Fatalf("exit code %d (%v), want %d", code, r.err, exitUnhealthy)
	}
	var ee *exitError
	if errors.As(r.err, &ee) && ee.err != nil {
		t.Errorf("unhealthy is a verdict, not an error to print: %v", ee.err)
	}
	for _, w := range []string{"Cluster:          UNHEALTHY", "Controller:       broker 2", "Down:             3",
		"Leaderless:       1 partition: t/0", "Under-replicated: 2 partitions: t/0, t/1", "Under min ISR:    none",
		"Under min racks:  1 partition: racked/3"} {
		if !strings.Contains(r.out, w) {
			t.Errorf("output lacks %q:\n%s", w, r.out)
		}
	}
	if strings.Contains(r.out, "Leader balancer") {
		t.Errorf("a broker without the balancer endpoint got a balancer line:\n%s", r.out)
	}
}

func TestClusterHealthJSONIsTheEndpointsAnswer(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("GET /v1/cluster/health_overview", 200, unhealthyBody)
	r := f.run("health", "--json")
	if r.out != unhealthyBody+"\n" {
		t.Errorf("--json printed\n%s\nwant the body unchanged\n%s", r.out, unhealthyBody)
	}
	if code := exitCode(r.err); code != exitUnhealthy {
		t.Errorf("--json exit code %d, want %d", code, exitUnhealthy)
	}
}

func TestClusterHealthCannotTellExitsTwo(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("GET /v1/cluster/health_overview", 503, `{"message":"the controller is electing","code":503}`)
	r := f.run("health")
	if code := exitCode(r.err); code != exitUnknown {
		t.Fatalf("exit code %d, want %d", code, exitUnknown)
	}
	if !strings.Contains(r.err.Error(), "the controller is electing") || !strings.Contains(r.err.Error(), "HTTP 503") {
		t.Errorf("error does not carry the server's message: %v", r.err)
	}

	f.srv.Close()
	r = f.run("health")
	if code := exitCode(r.err); code != exitUnknown || !strings.Contains(r.err.Error(), "cannot reach the admin API at "+f.srv.URL) {
		t.Errorf("unreachable: exit %d, %v", code, r.err)
	}
}

func TestClusterHealthLongListsFit100Columns(t *testing.T) {
	var ps []string
	for i := range 45 {
		ps = append(ps, `{"topic":"a-rather-long-topic-name","partition":`+strconv.Itoa(i)+`}`)
	}
	body := `{"healthy":false,"controller_id":1,"all_nodes":[1],"nodes_down":[],"leaderless_partitions":[],` +
		`"under_replicated_partitions":[` + strings.Join(ps, ",") + `],"under_min_isr_partitions":[],"under_min_racks_partitions":[]}`
	f := newFakeAdmin(t)
	f.answer("GET /v1/cluster/health_overview", 200, body)
	r := f.run("health")
	for _, l := range strings.Split(r.out, "\n") {
		if len(l) > outputWidth {
			t.Errorf("line of %d columns: %q", len(l), l)
		}
	}
	if !strings.Contains(r.out, "45 partitions") || !strings.Contains(unwrapped(r.out), "and 25 more (--json lists every one)") {
		t.Errorf("long list not summed up:\n%s", r.out)
	}
}

func TestClusterAdminURL(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("GET /v1/cluster/health_overview", 200, healthyBody)
	t.Setenv(adminURLEnv, f.srv.URL)
	if r := runCLI(t, "", "cluster", "health"); r.err != nil {
		t.Errorf("$%s not used: %v", adminURLEnv, r.err)
	}
	// The flag wins over the environment; a bare host:port is http.
	t.Setenv(adminURLEnv, "http://127.0.0.1:1")
	if r := runCLI(t, "", "cluster", "health", "--admin-url", strings.TrimPrefix(f.srv.URL, "http://")); r.err != nil {
		t.Errorf("--admin-url host:port: %v", r.err)
	}
	r := runCLI(t, "", "cluster", "health", "--admin-url", "ftp://x")
	if r.err == nil || !strings.Contains(r.err.Error(), `invalid admin API URL "ftp://x"`) {
		t.Errorf("ftp URL: %v", r.err)
	}
}

func TestClusterBrokers(t *testing.T) {
	f := newFakeAdmin(t)
	body := `[{"node_id":2,"kafka_addr":"h2:9092","rpc_addr":"h2:9093","rack":"","is_alive":false,"maintenance":true,"membership_status":"draining","leaders":0,"replicas":12},` +
		`{"node_id":1,"kafka_addr":"h1:9092","rpc_addr":"h1:9093","rack":"r1","is_alive":true,"maintenance":false,"leaders":5,"replicas":12}]`
	f.answer("GET /v1/brokers", 200, body)
	out := mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "brokers")
	want := "ID  KAFKA    RPC      RACK  STATUS  MEMBERSHIP  MAINTENANCE  LEADERS  REPLICAS\n" +
		"1   h1:9092  h1:9093  r1    up      active      no           5        12\n" +
		"2   h2:9092  h2:9093  -     DOWN    draining    yes          0        12\n"
	if out != want {
		t.Errorf("brokers:\n%s\nwant\n%s", out, want)
	}
	if out := mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "brokers", "--json"); out != body+"\n" {
		t.Errorf("--json: %s", out)
	}
}

func TestClusterErrorsCarryTheServersMessage(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("GET /v1/brokers", 500, `{"message":"controller state unavailable","code":500}`)
	r := f.run("brokers")
	if r.err == nil || r.err.Error() != "GET /v1/brokers: controller state unavailable (HTTP 500)" {
		t.Errorf("error %v", r.err)
	}
	// An endpoint the broker does not serve says so.
	r = f.run("maintenance", "status", "3")
	if r.err == nil || !strings.Contains(r.err.Error(), "404 page not found (HTTP 404)") {
		t.Errorf("unserved endpoint: %v", r.err)
	}
}
