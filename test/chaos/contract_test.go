package main

import (
	"strings"
	"testing"

	"github.com/cairn-io/cairn/internal/contract"
	"github.com/cairn-io/cairn/test/chaos/history"
)

func explained(writeCaching bool) contract.Contract {
	part := contract.Partition{ID: 0, Leader: 1}
	for i, r := range []string{"rack-1", "rack-2", "rack-3"} {
		part.Replicas = append(part.Replicas, contract.Replica{ID: int32(i + 1), Rack: r, Live: true, InSync: true})
	}
	return contract.Explain(contract.Topic{Name: "chaos", WriteCaching: writeCaching, MinInsyncReplicas: 2, MinInsyncRacks: 1,
		FlushMs: 100, FlushBytes: 1 << 20, Partitions: []contract.Partition{part}}, nil)
}

func faultSet(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Every mode of CI's sessions agrees with the contract the broker states for its topic.
func TestModesAgreeWithTheContract(t *testing.T) {
	racks := []string{"rack-1", "rack-2", "rack-3"}
	for _, c := range []struct {
		mode   history.Mode
		faults []string
	}{
		{history.Strict, []string{"kill", "pause", "partition", "power"}},
		{history.Strict, []string{"kill", "partition", "move", "rack"}},
		{history.WriteCaching, []string{"kill", "pause", "partition", "power"}},
		{history.WriteCaching, []string{"kill", "pause", "partition"}},
		{history.Acks1, []string{"kill", "pause", "partition"}},
		{history.Txn, []string{"kill", "pause", "partition", "power"}},
	} {
		cfg := config{mode: c.mode, faults: faultSet(c.faults...)}
		power := cfg.faults["power"] || cfg.faults["rack"]
		opts := history.Options{Mode: c.mode, AllowSuffixLoss: c.mode == history.WriteCaching && power}
		line, err := checkContract(explained(c.mode == history.WriteCaching), sessionAcks(c.mode), sessionFailures(cfg, racks), opts)
		if err != nil {
			t.Errorf("%s %v: %v", c.mode, c.faults, err)
		} else if !strings.Contains(line, "acks=") {
			t.Errorf("%s: line %q", c.mode, line)
		}
	}
}

// A checker looser or stricter than the contract is caught.
func TestDriftIsCaught(t *testing.T) {
	failures := []string{contract.MinorityCrash, contract.ClusterPowerCut}
	if _, err := checkContract(explained(false), "all", failures, history.Options{Mode: history.Acks1}); err == nil {
		t.Error("a checker allowing any loss of a strict topic's acks=all writes passed")
	}
	if _, err := checkContract(explained(true), "all", failures, history.Options{Mode: history.WriteCaching}); err == nil {
		t.Error("a checker allowing no loss where the contract allows the flush window passed")
	}
	if _, err := checkContract(explained(false), "all", []string{"loss of rack nowhere"}, history.Options{Mode: history.Strict}); err == nil {
		t.Error("a failure the contract has no outcome for passed")
	}
	if _, err := checkContract(explained(false), "1", failures, history.Options{Mode: history.Strict}); err == nil ||
		!strings.Contains(err.Error(), "contract says any loss") {
		t.Errorf("acks=1 held to strict's rule: %v", err)
	}
}
