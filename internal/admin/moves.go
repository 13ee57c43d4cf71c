package admin

// Partition moves, in the shape of Redpanda's admin API:
//
//	POST /v1/partitions/{topic}/{partition}/replicas               body [{"node_id":4,"core":0},...] or [4,5,6]
//	POST /v1/partitions/{topic}/{partition}/cancel_reconfiguration
//	GET  /v1/partitions/reconfigurations
//
// The POSTs answer 200 {} once the controller has recorded the change, not once the move
// is done. Errors are {"message": ..., "code": <http status>}: 400 for a bad body or a
// target the broker refuses, 404 for an unknown topic or partition, 409 for a second move
// of a moving partition or a cancel with none in progress or too late, 503 when no
// controller leader applied it in time. "core" is accepted and ignored: Cairn has no
// cores to place a replica on.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/broker"
)

// maxMoveBody bounds a move request's body: a replica list is a few bytes per broker.
const maxMoveBody = 64 << 10

// Reconfiguration is one move in progress, as GET /v1/partitions/reconfigurations lists it.
type Reconfiguration struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Original  []int32 `json:"original"`
	Target    []int32 `json:"target"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
	Cancelled bool    `json:"cancelled"`
	Final     bool    `json:"final"`
	// Phase and the byte counts come from the move driver; absent when it reported none.
	Phase      string `json:"phase,omitempty"`
	BytesMoved *int64 `json:"bytes_moved,omitempty"`
	BytesLeft  *int64 `json:"bytes_left,omitempty"`
	// Waiting says why the driver is not taking the next step yet (a learner catching up,
	// a conf change not yet applied); absent when it is not waiting.
	Waiting string `json:"waiting,omitempty"`
}

// httpError is the body of every error answer of the move endpoints.
type httpError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func writeHTTPError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, httpError{Message: fmt.Sprintf(format, args...), Code: code})
}

// moveStatus is the HTTP status of a broker refusal.
func moveStatus(err *broker.Error) int {
	switch err.Code {
	case kerr.UnknownTopicOrPartition:
		return http.StatusNotFound
	case kerr.ReassignmentInProgress, kerr.NoReassignmentInProgress:
		return http.StatusConflict
	case kerr.NotController, kerr.RequestTimedOut:
		return http.StatusServiceUnavailable
	case kerr.InvalidReplicaAssignment, kerr.InvalidRequest, kerr.InvalidReplicationFactor:
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// movePartition parses {topic} and {partition}, answering 400 itself when the partition
// is not a number.
func movePartition(w http.ResponseWriter, r *http.Request) (string, int32, bool) {
	p, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil {
		writeHTTPError(w, http.StatusBadRequest, "partition %q is not a number", r.PathValue("partition"))
		return "", 0, false
	}
	return r.PathValue("topic"), int32(p), true
}

// parseReplicas reads a target replica list: an array of {"node_id":N,"core":C} objects
// or of plain broker ids. It never returns nil without an error, so that a body can never
// be taken for a cancel.
func parseReplicas(body io.Reader) ([]int32, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("reading the body: %v", err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, errors.New(`the body must be a JSON array of replicas: [{"node_id":4,"core":0},...] or [4,5,6]`)
	}
	out := make([]int32, 0, len(items))
	for i, item := range items {
		item = bytes.TrimSpace(item)
		var id int32
		if len(item) > 0 && item[0] == '{' {
			var rep struct {
				NodeID *int32 `json:"node_id"`
				Core   *int   `json:"core"`
			}
			d := json.NewDecoder(bytes.NewReader(item))
			d.DisallowUnknownFields()
			if err := d.Decode(&rep); err != nil {
				return nil, fmt.Errorf("replica %d: %v", i, err)
			}
			if rep.NodeID == nil {
				return nil, fmt.Errorf("replica %d has no node_id", i)
			}
			id = *rep.NodeID
		} else if err := json.Unmarshal(item, &id); err != nil {
			return nil, fmt.Errorf("replica %d is %s, not a broker id", i, item)
		}
		out = append(out, id)
	}
	return out, nil
}

func (s *Server) handleMoveReplicas(w http.ResponseWriter, r *http.Request) {
	topic, p, ok := movePartition(w, r)
	if !ok {
		return
	}
	replicas, err := parseReplicas(http.MaxBytesReader(w, r.Body, maxMoveBody))
	if err != nil {
		writeHTTPError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if err := s.b.AlterPartitionReassignment(topic, p, replicas); err != nil {
		writeHTTPError(w, moveStatus(err), "%s", err.Msg)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *Server) handleCancelMove(w http.ResponseWriter, r *http.Request) {
	topic, p, ok := movePartition(w, r)
	if !ok {
		return
	}
	if err := s.b.AlterPartitionReassignment(topic, p, nil); err != nil {
		writeHTTPError(w, moveStatus(err), "%s", err.Msg)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *Server) handleReconfigurations(w http.ResponseWriter, r *http.Request) {
	out := []Reconfiguration{}
	for _, m := range s.b.PartitionReassignments(nil) {
		rc := Reconfiguration{Topic: m.Topic, Partition: m.Partition, Original: m.Original, Target: m.Target,
			Adding: m.Adding, Removing: m.Removing, Cancelled: m.Cancelled, Final: m.Final}
		if pr := m.Progress; pr != nil {
			rc.Phase, rc.BytesMoved, rc.BytesLeft, rc.Waiting = pr.Phase, &pr.BytesMoved, &pr.BytesLeft, pr.Waiting
		}
		out = append(out, rc)
	}
	writeJSON(w, http.StatusOK, out)
}
