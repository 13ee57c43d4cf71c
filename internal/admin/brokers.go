package admin

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/cairn-io/cairn/internal/broker"
)

// Leadership endpoints (issue 14's admin HTTP contract): the broker list, maintenance mode,
// leadership transfer and the leader balancer's status. Errors are
// {"message": "...", "code": <http status>}.

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, map[string]any{"message": fmt.Sprintf(format, args...), "code": code})
}

// httpStatus maps a broker error to the HTTP status of the contract: 404 for what does not
// exist, 400 for a request that can never succeed, 409 for one the cluster's state refuses
// now, 503 for one that may succeed when asked again.
func httpStatus(err *broker.Error) int {
	switch err.Code {
	case kerr.UnknownTopicOrPartition, kerr.BrokerIDNotRegistered:
		return http.StatusNotFound
	case kerr.InvalidReplicaAssignment:
		return http.StatusBadRequest
	case kerr.PreferredLeaderNotAvailable, kerr.InvalidRequest:
		return http.StatusConflict
	}
	return http.StatusServiceUnavailable
}

func brokerError(w http.ResponseWriter, err *broker.Error) {
	writeError(w, httpStatus(err), "%s", err.Msg)
}

// pathBroker reads the {id} of a path; it answers 400 itself when it is not a broker id.
func pathBroker(w http.ResponseWriter, r *http.Request) (int32, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil || id < 1 {
		writeError(w, http.StatusBadRequest, "broker id must be a positive whole number, not %q", r.PathValue("id"))
		return 0, false
	}
	return int32(id), true
}

func (s *Server) handleBrokers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.b.BrokerSummaries())
}

func (s *Server) handleMaintenanceStatus(w http.ResponseWriter, r *http.Request) {
	id, ok := pathBroker(w, r)
	if !ok {
		return
	}
	st, ok := s.b.MaintenanceStatus(id)
	if !ok {
		writeError(w, http.StatusNotFound, "broker %d is not registered", id)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleMaintenance(on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathBroker(w, r)
		if !ok {
			return
		}
		if err := s.b.SetMaintenance(id, on); err != nil {
			brokerError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, struct{}{})
	}
}

func (s *Server) handleTransferLeadership(w http.ResponseWriter, r *http.Request) {
	p, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil || p < 0 {
		writeError(w, http.StatusBadRequest, "partition must be a whole number, not %q", r.PathValue("partition"))
		return
	}
	q := r.URL.Query().Get("target")
	if q == "" {
		writeError(w, http.StatusBadRequest, "the target broker is missing: add ?target=N")
		return
	}
	target, err := strconv.ParseInt(q, 10, 32)
	if err != nil || target < 1 {
		writeError(w, http.StatusBadRequest, "target must be a broker id (a positive whole number), not %q", q)
		return
	}
	if berr := s.b.TransferLeadership(r.PathValue("topic"), int32(p), int32(target)); berr != nil {
		brokerError(w, berr)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *Server) handleLeaderBalancer(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.b.LeaderBalancerStatus())
}
