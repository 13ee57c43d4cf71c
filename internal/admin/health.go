package admin

import "net/http"

// handleHealthOverview answers this broker's view of the cluster's health (see
// broker.HealthOverview): any broker answers, from the leadership lists it hears, so an
// operator can ask one that is up while others are down.
func (s *Server) handleHealthOverview(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.b.HealthOverview())
}
