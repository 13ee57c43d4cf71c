package main

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPartitionsMoveSendsTheTargetSet(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("POST /v1/partitions/{topic}/{partition}/replicas", 200, `{}`)
	out := mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "partitions", "move", "orders/2", "--replicas", "4, 5,6")
	if want := []string{"POST /v1/partitions/orders/2/replicas [4,5,6]"}; !slices.Equal(f.asked(), want) {
		t.Errorf("asked %q, want %q", f.asked(), want)
	}
	if !strings.Contains(out, "moving orders/2 to replicas [4,5,6]") {
		t.Errorf("output: %s", out)
	}
}

func TestPartitionsMoveRefusalsCarryTheServersMessage(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("POST /v1/partitions/{topic}/{partition}/replicas", 409, `{"message":"orders/2 is already moving to [4,5,6]","code":409}`)
	f.answer("POST /v1/partitions/{topic}/{partition}/cancel_reconfiguration", 409,
		`{"message":"too late to cancel: the final configuration is being committed","code":409}`)
	wantErr(t, "", []string{"cluster", "--admin-url", f.srv.URL, "partitions", "move", "orders/2", "--replicas", "7"},
		"orders/2 is already moving to [4,5,6]", "HTTP 409")
	wantErr(t, "", []string{"cluster", "--admin-url", f.srv.URL, "partitions", "move-cancel", "orders/2"},
		"too late to cancel: the final configuration is being committed")
	if want := []string{"POST /v1/partitions/orders/2/replicas [7]", "POST /v1/partitions/orders/2/cancel_reconfiguration"}; !slices.Equal(f.asked(), want) {
		t.Errorf("asked %q, want %q", f.asked(), want)
	}
}

func TestPartitionsBadInputAsksNothing(t *testing.T) {
	f := newFakeAdmin(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"partitions", "move", "orders", "--replicas", "1"}, `invalid partition "orders": want TOPIC/PARTITION`},
		{[]string{"partitions", "move", "orders/x", "--replicas", "1"}, `the partition must be a number from 0, got "x"`},
		{[]string{"partitions", "move", "orders/-1", "--replicas", "1"}, `got "-1"`},
		{[]string{"partitions", "move", "/0", "--replicas", "1"}, `invalid partition "/0"`},
		{[]string{"partitions", "move", "orders/0"}, "--replicas is required"},
		{[]string{"partitions", "move", "orders/0", "--replicas", ""}, "--replicas: no brokers given"},
		{[]string{"partitions", "move", "orders/0", "--replicas", "4,4"}, "broker 4 given more than once"},
		{[]string{"partitions", "move", "orders/0", "--replicas", "4,zero"}, `invalid broker id "zero"`},
		{[]string{"partitions", "move", "orders/0", "--replicas", "0"}, `invalid broker id "0"`},
		{[]string{"partitions", "move-cancel", "orders:0"}, `invalid partition "orders:0"`},
		{[]string{"partitions", "move-status", "orders/"}, `invalid partition "orders/"`},
		{[]string{"partitions", "move-status", "--watch", "--interval", "0s"}, "--interval must be positive"},
		{[]string{"leaders", "transfer", "orders/0"}, "--to is required"},
		{[]string{"leaders", "transfer", "orders/0", "--to", "-2"}, `--to: invalid broker id "-2"`},
		{[]string{"leaders", "transfer", "orders", "--to", "2"}, `invalid partition "orders"`},
		{[]string{"maintenance", "enable", "x"}, `invalid broker id "x"`},
		{[]string{"maintenance", "status", "0"}, `invalid broker id "0"`},
		// Cluster properties are refused before Kafka is dialled (nothing listens on -b).
		{[]string{"-b", "127.0.0.1:1", "config", "set"}, "nothing to change: give NAME=VALUE or --delete NAME"},
		{[]string{"-b", "127.0.0.1:1", "config", "set", "log.retention.ms"}, `invalid config "log.retention.ms": want key=value`},
		{[]string{"-b", "127.0.0.1:1", "config", "set", "a=1", "--delete", "a"}, `config "a" given more than once`},
	} {
		wantErr(t, "", append([]string{"cluster", "--admin-url", f.srv.URL}, c.args...), c.want)
	}
	if got := f.asked(); len(got) != 0 {
		t.Errorf("bad input reached the admin API: %q", got)
	}
}

// A topic name with characters a URL path must escape reaches the server intact.
func TestPartitionsPathEscapesTheTopic(t *testing.T) {
	f := newFakeAdmin(t)
	var got string
	f.mux.HandleFunc("POST /v1/partitions/{topic}/{partition}/cancel_reconfiguration", func(w http.ResponseWriter, r *http.Request) {
		got = r.PathValue("topic")
		io.WriteString(w, `{}`)
	})
	mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "partitions", "move-cancel", "a%b?c/0")
	if got != "a%b?c" {
		t.Errorf("server saw topic %q", got)
	}
}

const twoMoves = `[{"topic":"orders","partition":0,"original":[1,2,3],"target":[4,5,6],"adding":[4,5,6],"removing":[1,2,3],` +
	`"cancelled":false,"final":false,"phase":"catching_up","bytes_moved":250000,"bytes_left":750000},` +
	`{"topic":"orders","partition":1,"original":[1,2,3],"target":[1,2,4],"adding":[4],"removing":[3],"cancelled":true,"final":false}]`

func TestMoveStatusOnce(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("GET /v1/partitions/reconfigurations", 200, twoMoves)
	out := mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "partitions", "move-status")
	want := "PARTITION  FROM     TO       PHASE                     MOVED      LEFT       DONE\n" +
		"orders/0   [1,2,3]  [4,5,6]  catching_up               250.00 kB  750.00 kB  25%\n" +
		"orders/1   [1,2,3]  [1,2,4]  cancelling (in progress)  ?          ?          ?\n"
	if out != want {
		t.Errorf("move-status:\n%s\nwant\n%s", out, want)
	}
	out = mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "partitions", "move-status", "orders/1")
	if strings.Contains(out, "orders/0") || !strings.Contains(out, "orders/1") {
		t.Errorf("move-status orders/1 shows:\n%s", out)
	}
	if out := mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "partitions", "move-status", "orders/7"); out != "no move in progress for orders/7\n" {
		t.Errorf("no such move: %q", out)
	}
	if out := mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "partitions", "move-status", "--json"); out != twoMoves+"\n" {
		t.Errorf("--json: %s", out)
	}
	// One partition asked for: its entry, as the admin API wrote it.
	out = mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "partitions", "move-status", "orders/1", "--json")
	if want := "[" + twoMoves[strings.Index(twoMoves, `{"topic":"orders","partition":1`):len(twoMoves)-1] + "]\n"; out != want {
		t.Errorf("--json orders/1:\n%s\nwant\n%s", out, want)
	}
	if out := mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "partitions", "move-status", "orders/7", "--json"); out != "[]\n" {
		t.Errorf("--json of no move: %q", out)
	}
}

// Watching without a terminal prints plain lines, one per move per poll, and a line when a
// move ends; it returns once nothing it watches is left.
func TestMoveStatusWatchPlainLines(t *testing.T) {
	f := newFakeAdmin(t)
	polls := []string{
		`[{"topic":"t","partition":0,"original":[1],"target":[2],"phase":"catching_up","bytes_moved":0,"bytes_left":1000000}]`,
		`[{"topic":"t","partition":0,"original":[1],"target":[2],"phase":"catching_up","bytes_moved":500000,"bytes_left":500000}]`,
		`[{"topic":"t","partition":0,"original":[1],"target":[2],"phase":"joint","bytes_moved":1000000,"bytes_left":0}]`,
		`[]`,
	}
	var mu sync.Mutex
	n := 0
	f.mux.HandleFunc("GET /v1/partitions/reconfigurations", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		io.WriteString(w, polls[min(n, len(polls)-1)])
		n++
	})
	out := mustRun(t, "", "cluster", "--admin-url", f.srv.URL, "partitions", "move-status", "t/0", "--watch", "--interval", "10ms")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 lines, got:\n%s", out)
	}
	for i, w := range []string{
		"t/0  [1] -> [2]  catching_up:   0%, 0 B moved, 1.00 MB left, rate measuring, ETA measuring",
		"t/0  [1] -> [2]  catching_up:  50%, 500.00 kB moved, 500.00 kB left, ",
		"t/0  [1] -> [2]  joint: 100%, 1.00 MB moved, 0 B left, ",
		"t/0: move ended, no longer in progress (target [2])",
	} {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want it to start %q", i, lines[i], w)
		}
	}
	if !strings.HasSuffix(lines[2], "ETA now") || strings.Contains(out, "\x1b[") {
		t.Errorf("last poll or escape codes wrong:\n%q", out)
	}
}

func TestMoveProgressRateAndETA(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := newMoveProgress()
	at := func(d time.Duration, moved, left int64) progressRow {
		return p.observe(t0.Add(d), reconfiguration{Topic: "t", BytesMoved: &moved, BytesLeft: &left})
	}
	if r := at(0, 0, 1000); r.rated || r.etaText(1000) != "ETA measuring" {
		t.Errorf("first poll: %+v %s", r, r.etaText(1000))
	}
	r := at(time.Second, 100, 900) // 100 B/s
	if !r.rated || r.rate != 100 || r.etaText(900) != "ETA 9s" {
		t.Errorf("second poll: %+v %s", r, r.etaText(900))
	}
	r = at(2*time.Second, 300, 700) // 200 B/s now, 150 smoothed: 700/150 = 4.67s
	if r.rate != 150 || r.etaText(700) != "ETA 5s" {
		t.Errorf("third poll: rate %v %s", r.rate, r.etaText(700))
	}
	if r := at(2*time.Second, 300, 700); r.rate != 150 {
		t.Errorf("a poll at the same instant changed the rate to %v", r.rate)
	}
	// The move restarted its catch-up: measure again.
	if r := at(3*time.Second, 10, 990); r.rated {
		t.Errorf("after fewer bytes moved than before: %+v", r)
	}
	r = at(4*time.Second, 10, 990)
	if r.etaText(990) != "ETA unknown (stalled)" {
		t.Errorf("no progress: %s", r.etaText(990))
	}
	// Long ETAs round to minutes.
	if got := roundDuration(time.Duration(2*3600+61) * time.Second); got != 2*time.Hour+time.Minute {
		t.Errorf("roundDuration: %v", got)
	}
}

func TestMoveProgressBarOnATerminal(t *testing.T) {
	moved, left := int64(500), int64(500)
	m := reconfiguration{Topic: "t", Partition: 3, Original: []int32{1, 2, 3}, Target: []int32{4, 5, 6}, Phase: "catching_up",
		BytesMoved: &moved, BytesLeft: &left}
	got := progressRow{known: true, fraction: 0.5, rated: true, rate: 100, eta: 5 * time.Second}.render(m, true)
	want := "t/3  [1,2,3] -> [4,5,6]  catching_up\n  [###############...............]   50%  500 B moved  500 B left  100 B/s  ETA 5s"
	if got != want {
		t.Errorf("bar:\n%q\nwant\n%q", got, want)
	}
	for _, l := range strings.Split(got, "\n") {
		if len(l) > outputWidth {
			t.Errorf("line wider than %d: %q", outputWidth, l)
		}
	}
	// A redraw goes back over the lines it drew before.
	var b strings.Builder
	s := &moveStatus{out: &b, terminal: true}
	s.draw(nil, []string{got})
	s.draw([]string{"t/3: move ended"}, nil)
	if !strings.Contains(b.String(), "\x1b[2A\x1b[Jt/3: move ended\n") {
		t.Errorf("redraw: %q", b.String())
	}
}
