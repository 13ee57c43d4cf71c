package main

import (
	"slices"
	"strings"
	"testing"
)

const lostPlan = `[{"topic":"orders","partition":0,"replicas":[1,4,5],"dead":[4,5],
 "survivors":[{"node_id":1,"reachable":true,"found":true,"log_end":900,"flushed":900,"committed":880}],
 "base":1,"last_known_commit":880,"may_lose":0},
 {"topic":"logs","partition":3,"replicas":[4,5,6],"dead":[4,5],
 "survivors":[{"node_id":6,"reachable":false,"found":false}],"base":-1,"last_known_commit":0,"may_lose":0,
 "problem":"no surviving replica answered with its data"}]`

// A declined confirmation sends nothing but the plan's request.
func TestForceRecoverAsksBeforeItActs(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("GET /v1/partitions/majority_lost", 200, lostPlan)
	r := wantErr(t, "no\n", []string{"cluster", "--admin-url", f.srv.URL, "partitions", "force-recover", "--from-nodes", "4,5"},
		"not confirmed: nothing was changed")
	for _, want := range []string{"orders/0", "0 offsets", "logs/3", "no surviving replica answered", "Type 'yes'"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.out)
		}
	}
	if want := []string{"GET /v1/partitions/majority_lost?dead_nodes=4%2C5"}; !slices.Equal(f.asked(), want) {
		t.Errorf("asked %q, want %q", f.asked(), want)
	}
}

// Confirmed, it names the bases it showed, and only for the partitions it can recover; a
// partition the broker refuses makes it fail, naming the reason.
func TestForceRecoverSendsTheConfirmedBases(t *testing.T) {
	f := newFakeAdmin(t)
	f.answer("GET /v1/partitions/majority_lost", 200, lostPlan)
	f.answer("POST /v1/partitions/force_recover_from_nodes", 200, `[{"topic":"orders","partition":0,"base":1,"may_lose":0}]`)
	out := mustRun(t, "yes\n", "cluster", "--admin-url", f.srv.URL, "partitions", "force-recover", "--from-nodes", "4,5")
	if !strings.Contains(out, "orders/0: rebuilding from broker 1") {
		t.Errorf("output: %s", out)
	}
	want := `POST /v1/partitions/force_recover_from_nodes {"dead_nodes":[4,5],"partitions":[{"topic":"orders","partition":0,"base":1}]}`
	if got := f.asked(); len(got) != 2 || got[1] != want {
		t.Errorf("asked %q, want the plan then %q", got, want)
	}

	f = newFakeAdmin(t)
	f.answer("GET /v1/partitions/majority_lost", 200, lostPlan)
	f.answer("POST /v1/partitions/force_recover_from_nodes", 200,
		`[{"topic":"orders","partition":0,"base":6,"error":"the plan changed: the survivor to rebuild from is now broker 6, not 1"}]`)
	wantErr(t, "", []string{"cluster", "--admin-url", f.srv.URL, "partitions", "force-recover", "--from-nodes", "4,5", "--yes"},
		"1 of 1 partition(s) were not recovered")
}

func TestForceRecoverBadInputAsksNothing(t *testing.T) {
	f := newFakeAdmin(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"partitions", "force-recover"}, "--from-nodes is required"},
		{[]string{"partitions", "force-recover", "--from-nodes", "x"}, "--from-nodes is required"},
		{[]string{"partitions", "force-recover", "--from-nodes", "4", "--partition", "orders"}, `invalid partition "orders"`},
	} {
		wantErr(t, "", append([]string{"cluster", "--admin-url", f.srv.URL}, c.args...), c.want)
	}
	if got := f.asked(); len(got) != 0 {
		t.Errorf("bad input reached the admin API: %q", got)
	}
}
