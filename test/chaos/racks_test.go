package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRacks(t *testing.T) {
	got, err := parseRacks(" r1,r1 ,r2", 3, false)
	if err != nil || !slices.Equal(got, []string{"r1", "r1", "r2"}) {
		t.Fatalf("parseRacks: %q, %v", got, err)
	}
	if got, err := parseRacks("", 3, true); got != nil || err != nil {
		t.Fatalf("no --racks: %q, %v; want nil (a rack of its own each)", got, err)
	}
	for _, bad := range []struct {
		list    string
		brokers int
		set     bool
		want    string
	}{
		{"r1,,r2", 3, false, "gives broker 2 no rack"},
		{"r1,r2", 3, true, "names 2 racks for --brokers 3"},
	} {
		if _, err := parseRacks(bad.list, bad.brokers, bad.set); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("parseRacks(%q, %d, %v): %v, want an error with %q", bad.list, bad.brokers, bad.set, err, bad.want)
		}
	}
}

func TestParseLinkDelay(t *testing.T) {
	in, cross, err := parseLinkDelay("0.2ms, 2ms")
	if err != nil || in != 200*time.Microsecond || cross != 2*time.Millisecond {
		t.Fatalf("parseLinkDelay: %v, %v, %v", in, cross, err)
	}
	for _, bad := range []string{"2ms", "x,2ms", "1ms,", "-1ms,2ms"} {
		if _, _, err := parseLinkDelay(bad); err == nil || !strings.Contains(err.Error(), "--link-delay") {
			t.Errorf("parseLinkDelay(%q): %v, want a refusal", bad, err)
		}
	}
}
