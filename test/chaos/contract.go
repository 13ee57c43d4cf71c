package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/cairn-io/cairn/internal/contract"
	"github.com/cairn-io/cairn/test/chaos/faults"
	"github.com/cairn-io/cairn/test/chaos/history"
)

// The contract check. Before the load starts, the session asks the admin API for the
// topic's contract (what `cairn topic explain` states) and derives from it what the
// history checker may allow for the failures this session inflicts: nothing lost when
// every failure keeps an acknowledged write, a clean suffix when one may lose the flush
// window, anything when one may lose the write. That must be the rule the mode holds the
// history to, else the explanation and the behaviour the session checks have drifted
// apart, and the session fails before it starts.

// sessionFailures are the contract's failures the session's faults amount to.
func sessionFailures(cfg config, racks []string) []string {
	var out []string
	add := func(f string) {
		for _, have := range out {
			if have == f {
				return
			}
		}
		out = append(out, f)
	}
	strictTopic := cfg.mode == history.Strict || cfg.mode == history.Txn
	if cfg.faults["kill"] || cfg.faults["pause"] || cfg.faults["partition"] {
		add(contract.MinorityCrash)
		if strictTopic { // the schedule then hits any number of brokers
			add(contract.ClusterCrash)
		}
	}
	if cfg.faults["power"] {
		if strictTopic || cfg.mode == history.WriteCaching {
			add(contract.ClusterPowerCut)
		} else {
			add(contract.MinorityCrash)
		}
	}
	if cfg.faults["rack"] {
		for _, r := range racks {
			add(contract.RackLoss(r))
		}
	}
	return out
}

// sessionAcks is the acks value of the session's producers.
func sessionAcks(mode history.Mode) string {
	if mode == history.Acks1 {
		return "1"
	}
	return "all"
}

// checkContract compares the contract's outcomes of the session's failures with the rule
// the checker applies (opts), and returns a line that says what was compared.
func checkContract(c contract.Contract, acks string, failures []string, opts history.Options) (string, error) {
	p, ok := c.Promise(acks)
	if !ok {
		return "", fmt.Errorf("the contract of %s has no promise for acks=%s", c.Topic, acks)
	}
	var window, lost bool
	var said []string
	for _, f := range failures {
		o, ok := p.Outcome(f)
		if !ok {
			return "", fmt.Errorf("the contract of %s states no outcome for %q under acks=%s", c.Topic, f, acks)
		}
		said = append(said, fmt.Sprintf("%s: %s", f, o.Kept))
		window = window || o.Kept == contract.KeptWindow
		lost = lost || o.Kept == contract.KeptNo
	}
	checkerAny := opts.Mode == history.Acks1
	checkerSuffix := !checkerAny && opts.AllowSuffixLoss
	line := fmt.Sprintf("acks=%s proves %s; %s", acks, p.Proves, strings.Join(said, ", "))
	if lost != checkerAny || (!lost && window != checkerSuffix) {
		return line, fmt.Errorf("the contract and the %s checker disagree: the contract says %s, the checker allows %s (%s)",
			opts.Mode, lossWords(lost, window), lossWords(checkerAny, checkerSuffix), line)
	}
	return line, nil
}

func lossWords(any, window bool) string {
	switch {
	case any:
		return "any loss"
	case window:
		return "a lost suffix (the flush window)"
	}
	return "no loss"
}

// sessionContract fetches the topic's contract from the first broker that answers.
func sessionContract(ctx context.Context, cl *faults.Cluster, hc *http.Client) (contract.Contract, error) {
	var c contract.Contract
	var last verdict
	for id := 1; id <= cl.N(); id++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		last = adminCall(cctx, hc, http.MethodGet, cl.Broker(id).AdminAddr, "/v1/topics/"+topic+"/contract", nil, &c)
		cancel()
		if last.answer == accepted {
			return c, nil
		}
	}
	return c, fmt.Errorf("no broker answered the topic's contract: %s", last.reason)
}

// checkSessionContract is the contract check of a session about to start.
func checkSessionContract(ctx context.Context, cl *faults.Cluster, cfg config, opts history.Options) error {
	c, err := sessionContract(ctx, cl, cfg.sec.adminHTTP(10*time.Second))
	if err != nil {
		return err
	}
	failures := sessionFailures(cfg, cl.Racks())
	if len(failures) == 0 { // a calm session inflicts nothing the contract could speak of
		fmt.Println("chaos: contract: no fault, so no outcome to compare")
		return nil
	}
	line, err := checkContract(c, sessionAcks(cfg.mode), failures, opts)
	fmt.Println("chaos: contract:", line)
	return err
}
