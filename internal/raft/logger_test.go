package raft

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The broker's raft logger shows a group's failure and none of etcd raft's chatter.
func TestErrorLoggerKeepsOnlyErrors(t *testing.T) {
	var out bytes.Buffer
	lg := ErrorLogger(slog.New(slog.NewTextHandler(&out, nil)))
	lg.Infof("%x became follower at term %d", 1, 2)
	lg.Warningf("%x ignored a vote", 1)
	lg.Errorf("raft host %d: group %d: %v", 1, 7, "storage: write: too many open files")
	got := out.String()
	if !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "group 7: storage: write: too many open files") {
		t.Fatalf("the group's failure is missing: %q", got)
	}
	if strings.Contains(got, "follower") || strings.Contains(got, "ignored") {
		t.Fatalf("etcd raft's chatter got through: %q", got)
	}
}
