package admin

import "net/http"

// Decommission endpoints (issue 14's admin HTTP contract):
//
//	PUT /v1/brokers/{id}/decommission   -> {}; 400 the others cannot hold its replicas; 404; 409
//	GET /v1/brokers/{id}/decommission   -> broker.DecommissionStatus; 404; 409 not decommissioning
//	PUT /v1/brokers/{id}/recommission   -> {}; 404; 409 not decommissioning, or already decommissioned

func (s *Server) handleDecommission(w http.ResponseWriter, r *http.Request) {
	id, ok := pathBroker(w, r)
	if !ok {
		return
	}
	if err := s.b.Decommission(id); err != nil {
		brokerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *Server) handleDecommissionStatus(w http.ResponseWriter, r *http.Request) {
	id, ok := pathBroker(w, r)
	if !ok {
		return
	}
	st, err := s.b.DecommissionStatus(id)
	if err != nil {
		brokerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleRecommission(w http.ResponseWriter, r *http.Request) {
	id, ok := pathBroker(w, r)
	if !ok {
		return
	}
	if err := s.b.Recommission(id); err != nil {
		brokerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}
