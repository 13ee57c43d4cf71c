package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-io/cairn/internal/config"
)

func TestStartValuesPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cairn.yaml")
	os.WriteFile(file, []byte("node-id: 3\ndata-dir: /from/file\nrack: file-rack\nseeds:\n  - a:9093\n  - b:9093\n"), 0o644)
	t.Setenv("CAIRN_DATA_DIR", "/from/env")
	t.Setenv("CAIRN_RACK", "env-rack")

	cmd := newStartCmd()
	if err := cmd.ParseFlags([]string{"--config", file, "--rack", "flag-rack"}); err != nil {
		t.Fatal(err)
	}
	values, err := startValues(cmd.Flags(), file)
	if err != nil {
		t.Fatal(err)
	}
	node, err := config.ResolveNode(values)
	if err != nil {
		t.Fatal(err)
	}
	if node.NodeID != 3 || node.DataDir != "/from/env" || node.Rack != "flag-rack" || strings.Join(node.Seeds, ",") != "a:9093,b:9093" {
		t.Fatalf("flags > env > file precedence broken: %+v", node)
	}
	if node.KafkaAddr != "localhost:9092" || node.AdvertisedKafkaAddr != "localhost:9092" {
		t.Fatalf("defaults: %+v", node)
	}
}

func TestStartValuesRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("node-idd: 3\n"), 0o644)
	cmd := newStartCmd()
	if _, err := startValues(cmd.Flags(), bad); err == nil || !strings.Contains(err.Error(), "node-idd") {
		t.Fatalf("unknown YAML key: %v", err)
	}
	if _, err := startValues(cmd.Flags(), filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("missing --config file accepted")
	}
	t.Setenv("CAIRN_NODE_ID", "not-a-number")
	values, err := startValues(cmd.Flags(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.ResolveNode(values); err == nil {
		t.Fatal("a non-numeric node id was accepted")
	}
}

// TestStartHidesTheMoveTestGate: --test-hold-moves exists for end-to-end tests only and
// never shows in `cairn start --help`.
func TestStartHidesTheMoveTestGate(t *testing.T) {
	f := newStartCmd().Flags().Lookup("test-hold-moves")
	if f == nil || !f.Hidden {
		t.Fatalf("--test-hold-moves: %+v, want a hidden flag", f)
	}
}
