// Package console is the web console the broker serves on its admin port under /console
// (docs/operations.md): the cluster's brokers and health, topics with every replica's five
// boundaries as live bars and the topic's durability contract, consumer groups with their
// lag, partition reconfigurations with their progress, and, on a --simulate-power-loss
// broker, the durability lab. Pages are rendered on the server from embedded templates; one
// small embedded script refreshes the live parts. It owns the pages and the joins they
// show; it reads the cluster only through Source, and it changes nothing in it: every page
// is a GET, and the one action, starting a lab of its own cluster, is a POST that the
// admin API's authorisation treats as any other change (ALTER on the cluster).
package console

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"

	"github.com/cairn-io/cairn/internal/broker"
	"github.com/cairn-io/cairn/internal/contract"
)

// Source is what the console reads. The admin server implements it over the broker.
type Source interface {
	NodeID() int32
	ClusterID() string
	HealthOverview() broker.HealthOverview
	BrokerSummaries() []broker.BrokerSummary
	Topics() []broker.TopicInfo
	PartitionViews(topic string) []broker.PartitionView
	// NodeViews asks every broker for what it holds (broker/nodeview.go).
	NodeViews(ctx context.Context, q broker.NodeViewQuery) []broker.NodeView
	// Contract is the topic's contract now (internal/contract); false: no such topic.
	Contract(topic string) (contract.Contract, bool)
	Reconfigurations() []Reconfiguration
}

// Reconfiguration is one partition's replica set change under way.
type Reconfiguration struct {
	Topic      string
	Partition  int32
	From, To   []int32
	Adding     []int32
	Removing   []int32
	Cancelled  bool
	Phase      string
	BytesMoved int64
	BytesLeft  int64 // -1: not reported
	Waiting    string
}

// Lab runs the durability lab (internal/lab) from the page.
type Lab interface {
	// Start begins a run; it fails while one is running.
	Start() error
	Status() LabStatus
}

// LabStatus is the last run's state and what it printed.
type LabStatus struct {
	Running bool
	Started string // "": never run
	Result  string // "" while running; "passed" or why it failed
	Output  string
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Handler serves the console under /console.
type Handler struct {
	src   Source
	lab   Lab // nil: the broker is not under --simulate-power-loss
	lg    *slog.Logger
	pages map[string]*template.Template
	mux   *http.ServeMux
	// sameOrigin refuses a POST another site's page makes the browser send with the
	// operator's admin credentials (Sec-Fetch-Site, Origin).
	sameOrigin http.Handler
}

// New builds the console over src; lab may be nil.
func New(src Source, lab Lab, lg *slog.Logger) *Handler {
	if lg == nil {
		lg = slog.Default()
	}
	h := &Handler{src: src, lab: lab, lg: lg, pages: map[string]*template.Template{}, mux: http.NewServeMux()}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html"))
	entries, _ := fs.Glob(templateFS, "templates/page_*.html")
	for _, e := range entries {
		name := strings.TrimSuffix(strings.TrimPrefix(path.Base(e), "page_"), ".html")
		h.pages[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, e))
	}
	static, _ := fs.Sub(staticFS, "static")
	h.mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusFound)
	})
	h.mux.HandleFunc("GET /console/{$}", h.cluster)
	h.mux.HandleFunc("GET /console/topics", h.topics)
	h.mux.HandleFunc("GET /console/topics/{topic}", h.topic)
	h.mux.HandleFunc("GET /console/topics/{topic}/boundaries", h.topicBoundaries)
	h.mux.HandleFunc("GET /console/groups", h.groups)
	h.mux.HandleFunc("GET /console/reconfigurations", h.reconfigurations)
	h.mux.HandleFunc("GET /console/reconfigurations/table", h.reconfigurationsTable)
	h.mux.HandleFunc("GET /console/lab", h.labPage)
	h.mux.HandleFunc("GET /console/lab/output", h.labOutput)
	h.mux.HandleFunc("POST /console/lab", h.labStart)
	h.mux.HandleFunc("GET /console/", h.notFound)
	h.sameOrigin = http.NewCrossOriginProtection().Handler(h.mux)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The pages are read by people with admin rights: no other site may frame them or
	// read them through a script.
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.sameOrigin.ServeHTTP(w, r)
}

// page is what every page's layout needs, and the page's own data.
type page struct {
	Title   string
	Nav     string // which tab is current
	NodeID  int32
	Cluster string
	HasLab  bool
	Data    any
}

func (h *Handler) render(w http.ResponseWriter, code int, name, title string, data any) {
	t := h.pages[name]
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	p := page{Title: title, Nav: name, NodeID: h.src.NodeID(), Cluster: h.src.ClusterID(), HasLab: h.lab != nil, Data: data}
	if err := t.ExecuteTemplate(w, "layout.html", p); err != nil {
		h.lg.Warn("console: rendering a page failed", "page", name, "err", err)
	}
}

// fragment renders one named part alone, for the live refresh.
func (h *Handler) fragment(w http.ResponseWriter, page, part string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.pages[page].ExecuteTemplate(w, part, data); err != nil {
		h.lg.Warn("console: rendering a fragment failed", "part", part, "err", err)
	}
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.render(w, http.StatusNotFound, "error", "Not found", errorPage{Message: "There is no console page at " + r.URL.Path + "."})
}

type errorPage struct{ Message string }
