package admin

import "net/http"

// The lab's test gates (`cairn lab`, docs/operations.md): served only by a broker started
// with --simulate-power-loss, whose data lives in a PowerLossFS, so that no production
// broker can be told to stop fsyncing. Elsewhere the paths are not registered (404).
//
//	PUT    /v1/lab/fsync_hold   hold every fsync of this broker (storage/powerloss_hold.go)
//	DELETE /v1/lab/fsync_hold   release them
//	GET    /v1/lab/fsync_hold   {"held": bool, "waiting": n}

// SyncGate is the fsync hold of a simulated-power-loss filesystem.
type SyncGate interface {
	HoldSyncs()
	ReleaseSyncs()
	SyncsHeld() (held bool, waiting int64)
}

type fsyncHoldStatus struct {
	Held    bool  `json:"held"`
	Waiting int64 `json:"waiting"`
}

// EnableLabGates registers the lab's gates over g. Call it before serving.
func (s *Server) EnableLabGates(g SyncGate) {
	status := func(w http.ResponseWriter) {
		held, waiting := g.SyncsHeld()
		writeJSON(w, http.StatusOK, fsyncHoldStatus{Held: held, Waiting: waiting})
	}
	s.mux.HandleFunc("GET /v1/lab/fsync_hold", func(w http.ResponseWriter, _ *http.Request) { status(w) })
	s.mux.HandleFunc("PUT /v1/lab/fsync_hold", func(w http.ResponseWriter, _ *http.Request) {
		g.HoldSyncs()
		status(w)
	})
	s.mux.HandleFunc("DELETE /v1/lab/fsync_hold", func(w http.ResponseWriter, _ *http.Request) {
		g.ReleaseSyncs()
		status(w)
	})
}
