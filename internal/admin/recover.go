package admin

// Force recovery of partitions that lost a majority of their replicas for good, in the
// shape of Redpanda's admin API:
//
//	GET  /v1/partitions/majority_lost?dead_nodes=2,3
//	POST /v1/partitions/force_recover_from_nodes   body {"dead_nodes":[2,3],
//	     "partitions":[{"topic":"t","partition":0,"base":1}]}
//
// The GET plans: every partition that has no majority without the dead brokers, with
// what each survivor holds, the survivor to rebuild from and what the recovery may lose.
// The POST plans again and recovers the partitions it names (all of the plan when it
// names none). A partition whose base differs from the one the caller confirmed is
// refused: the operator must look at the new plan. It answers 200 with one result per
// partition (each with "error" when it was refused) once the controller recorded them.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairn-io/cairn/internal/broker"
)

const maxRecoverBody = 1 << 20

// SurvivorState is what one surviving replica holds.
type SurvivorState struct {
	NodeID    int32  `json:"node_id"`
	Reachable bool   `json:"reachable"`
	Found     bool   `json:"found"`
	LastIndex uint64 `json:"last_index"`
	LastTerm  uint64 `json:"last_term"`
	LogEnd    int64  `json:"log_end"`
	Flushed   int64  `json:"flushed"`
	Committed int64  `json:"committed"`
}

// LostPartition is one partition of a force recovery's plan.
type LostPartition struct {
	Topic           string          `json:"topic"`
	Partition       int32           `json:"partition"`
	Replicas        []int32         `json:"replicas"`
	Dead            []int32         `json:"dead"`
	Survivors       []SurvivorState `json:"survivors"`
	Base            int32           `json:"base"`
	LastKnownCommit int64           `json:"last_known_commit"`
	MayLose         int64           `json:"may_lose"`
	Problem         string          `json:"problem,omitempty"`
}

// RecoverRequest is the body of POST /v1/partitions/force_recover_from_nodes.
type RecoverRequest struct {
	DeadNodes  []int32            `json:"dead_nodes"`
	Partitions []RecoverPartition `json:"partitions,omitempty"`
}

// RecoverPartition names one partition to recover; Base, if set, is the survivor the
// caller confirmed.
type RecoverPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Base      *int32 `json:"base,omitempty"`
}

// RecoverResult is the outcome for one partition.
type RecoverResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Base      int32  `json:"base"`
	MayLose   int64  `json:"may_lose"`
	Error     string `json:"error,omitempty"`
}

func lostPartition(pl broker.RecoveryPlan) LostPartition {
	lp := LostPartition{Topic: pl.Topic, Partition: pl.Partition, Replicas: pl.Replicas, Dead: pl.Dead, Base: pl.Base,
		LastKnownCommit: pl.LastKnownCommit, MayLose: pl.MayLose, Problem: pl.Problem, Survivors: []SurvivorState{}}
	for _, s := range pl.States {
		lp.Survivors = append(lp.Survivors, SurvivorState{NodeID: s.Broker, Reachable: s.Reachable, Found: s.Found,
			LastIndex: s.LastIndex, LastTerm: s.LastTerm, LogEnd: s.LogEnd, Flushed: s.Flushed, Committed: s.Committed})
	}
	return lp
}

// parseNodeList reads "2,3" (spaces allowed).
func parseNodeList(s string) ([]int32, error) {
	var out []int32
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q is not a broker id", f)
		}
		out = append(out, int32(id))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dead_nodes names no broker")
	}
	return out, nil
}

func (s *Server) handleMajorityLost(w http.ResponseWriter, r *http.Request) {
	dead, err := parseNodeList(r.URL.Query().Get("dead_nodes"))
	if err != nil {
		writeHTTPError(w, http.StatusBadRequest, "%v", err)
		return
	}
	plans, berr := s.b.PlanForceRecovery(r.Context(), dead)
	if berr != nil {
		writeHTTPError(w, moveStatus(berr), "%s", berr.Msg)
		return
	}
	out := []LostPartition{}
	for _, pl := range plans {
		out = append(out, lostPartition(pl))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleForceRecover(w http.ResponseWriter, r *http.Request) {
	var req RecoverRequest
	d := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRecoverBody))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		writeHTTPError(w, http.StatusBadRequest, "the body must be {\"dead_nodes\":[...],\"partitions\":[{\"topic\":...,\"partition\":...}]}: %v", err)
		return
	}
	if len(req.DeadNodes) == 0 {
		writeHTTPError(w, http.StatusBadRequest, "dead_nodes names no broker")
		return
	}
	plans, berr := s.b.PlanForceRecovery(r.Context(), req.DeadNodes)
	if berr != nil {
		writeHTTPError(w, moveStatus(berr), "%s", berr.Msg)
		return
	}
	type key struct {
		topic string
		p     int32
	}
	byKey := map[key]broker.RecoveryPlan{}
	for _, pl := range plans {
		byKey[key{pl.Topic, pl.Partition}] = pl
	}
	want := req.Partitions
	if len(want) == 0 {
		for _, pl := range plans {
			want = append(want, RecoverPartition{Topic: pl.Topic, Partition: pl.Partition})
		}
	}
	out := []RecoverResult{}
	for _, rp := range want {
		res := RecoverResult{Topic: rp.Topic, Partition: rp.Partition, Base: -1}
		pl, ok := byKey[key{rp.Topic, rp.Partition}]
		switch {
		case !ok:
			res.Error = "the partition keeps a majority without these brokers (or does not exist): nothing to recover"
		case rp.Base != nil && *rp.Base != pl.Base:
			res.Base = pl.Base
			res.Error = fmt.Sprintf("the plan changed: the survivor to rebuild from is now broker %d, not %d; review the plan again", pl.Base, *rp.Base)
		default:
			res.Base, res.MayLose = pl.Base, pl.MayLose
			if err := s.b.ForceRecover(pl); err != nil {
				res.Error = err.Msg
			}
		}
		out = append(out, res)
	}
	writeJSON(w, http.StatusOK, out)
}
