package console

import (
	"net/http"
)

// The lab page: on a --simulate-power-loss broker it starts `cairn lab --auto` (a cluster
// of its own, in a scratch folder) and shows what it prints as it runs. Elsewhere it says
// how to run the lab from a terminal instead.

func (h *Handler) labPage(w http.ResponseWriter, r *http.Request) {
	d := labData{Available: h.lab != nil}
	if h.lab != nil {
		d.Status = h.lab.Status()
	}
	h.render(w, http.StatusOK, "lab", "Durability lab", d)
}

type labData struct {
	Available bool
	Status    LabStatus
}

func (h *Handler) labOutput(w http.ResponseWriter, r *http.Request) {
	if h.lab == nil {
		http.Error(w, "the lab runs only on a broker started with --simulate-power-loss", http.StatusNotFound)
		return
	}
	h.fragment(w, "lab", "output", h.lab.Status())
}

func (h *Handler) labStart(w http.ResponseWriter, r *http.Request) {
	if h.lab == nil {
		h.render(w, http.StatusNotFound, "error", "No lab here",
			errorPage{Message: "The lab runs only on a broker started with --simulate-power-loss; run `cairn lab` in a terminal."})
		return
	}
	if err := h.lab.Start(); err != nil {
		h.render(w, http.StatusConflict, "error", "Lab not started", errorPage{Message: err.Error()})
		return
	}
	http.Redirect(w, r, "/console/lab", http.StatusSeeOther)
}
