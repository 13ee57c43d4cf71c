package raft

import "fmt"

// What the scripts (script_test.go, package raft_test) print of a host's and a proposal's
// inner state, exported for this package's tests only.

// Ticking says whether the host's ticker ticks the group, or leaves it quiet, as the
// ticker decides (quiesce.go).
func (h *Host) Ticking(id uint64) string {
	g, err := h.group(id)
	if err != nil {
		return err.Error()
	}
	switch {
	case g.solo.Load():
		return "not ticked (sole voter, leading)"
	case g.quiet.Load():
		return "quiesced (leader)"
	case g.quietFrom.Load() != 0:
		return "quiet (listed by its leader's host)"
	}
	return "ticking"
}

// Reached is what the proposal's waiter sees now: failed, the last stage reached, or
// waiting. Unlike Wait, it never blocks and never races a failure against a stage.
func (p *Proposal) Reached() string {
	select {
	case <-p.failed:
		return fmt.Sprintf("failed: %v", p.err)
	default:
	}
	stage := "waiting"
	for s, n := range []string{"appended", "replicated", "committed"} {
		select {
		case <-p.stages[s]:
			stage = n
		default:
		}
	}
	if stage == "waiting" {
		return stage
	}
	return fmt.Sprintf("%s index=%d term=%d", stage, p.Index(), p.Term())
}
