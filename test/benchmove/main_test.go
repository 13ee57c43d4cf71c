package main

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"2GiB": 2 << 30, "256MiB": 256 << 20, "64KiB": 64 << 10, "4096": 4096, "10B": 10} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1GiB", "2GB", "1.5GiB", "GiB", "2 GiB", "07"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}
