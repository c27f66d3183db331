// Package statuspage serves the status package's picture to people and
// machines: a server-rendered HTML page at / (and /runs/<id> for one run)
// with its own styles and favicon, no script and nothing fetched from
// elsewhere, and the same picture as JSON at /status.json. It is read-only;
// names and reasons are shown only to a request that carries the bearer
// token of serve.status_token_file.
package statuspage

import (
	"bytes"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/events"
	"github.com/waldur/waldur-gitops/status"
)

//go:embed assets
var assets embed.FS

// page is the one HTML template.
var page = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"stamp":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"seconds":     func(s float64) string { return strconv.FormatFloat(s, 'f', 2, 64) + "s" },
	"short":       short,
	"leaderLine":  status.LeaderLine,
	"healthClass": healthClass,
	"first":       func(items []status.Item) []status.Item { return items[:min(len(items), PageItems)] },
	"beyond":      func(items []status.Item) int { return max(len(items)-PageItems, 0) },
	"index0": func(runs []status.Run) *status.Run {
		if len(runs) == 0 {
			return nil
		}
		return &runs[0]
	},
}).ParseFS(assets, "assets/page.html"))

// PageItems is how many entries of each list the page shows at most;
// /status.json has them all.
const PageItems = 200

// DefaultRefresh is how often the page reloads itself.
const DefaultRefresh = 30 * time.Second

// Page serves the status page of one serve process.
type Page struct {
	// Runs are the runs kept.
	Runs *status.History
	// State returns serve's state and the event consumers' (nil: none).
	State func() (status.Serving, []events.OfferingState)
	// Leadership returns whether this replica leads (nil: a single replica).
	Leadership func() status.Leadership
	// Token returns the bearer token that shows names, "" when none is
	// configured (nil: none).
	Token func() (config.Secret, error)
	// Refresh is how often the page reloads (0: DefaultRefresh).
	Refresh time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// Handler serves GET /, /runs/{id}, /status.json, /favicon.svg,
// /favicon.ico and /static/style.css.
func (p *Page) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.serveHTML)
	mux.HandleFunc("GET /runs/{id}", p.serveHTML)
	mux.HandleFunc("GET /status.json", p.serveJSON)
	mux.HandleFunc("GET /favicon.svg", asset("assets/favicon.svg", "image/svg+xml"))
	mux.HandleFunc("GET /favicon.ico", asset("assets/favicon.svg", "image/svg+xml"))
	mux.HandleFunc("GET /static/style.css", asset("assets/style.css", "text/css; charset=utf-8"))
	return mux
}

// Paths are the paths Handler answers, for a mux that shares the port.
var Paths = []string{"GET /{$}", "GET /runs/{id}", "GET /status.json", "GET /favicon.svg", "GET /favicon.ico", "GET /static/style.css"}

func asset(name, contentType string) http.HandlerFunc {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("statuspage: embedded %s: %v", name, err))
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(b)
	}
}

// names decides whether r sees names: it must carry the configured token.
// ok is false for a request with a wrong token, which is refused.
func (p *Page) names(r *http.Request) (names, ok bool) {
	if p.Token == nil {
		return false, true
	}
	tok, err := p.Token()
	if err != nil {
		p.log().Warn("status page: the token file cannot be read: showing counts only", "error", err.Error())
		return false, true
	}
	h := r.Header.Get("Authorization")
	if tok == "" || h == "" {
		return false, true
	}
	got, found := strings.CutPrefix(h, "Bearer ")
	if !found || subtle.ConstantTimeCompare([]byte(got), []byte(tok.Reveal())) != 1 {
		return false, false
	}
	return true, true
}

// build is the picture for r; false when r must be refused (already answered).
func (p *Page) build(w http.ResponseWriter, r *http.Request) (status.Status, bool) {
	names, ok := p.names(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="waldur-gitops status"`)
		http.Error(w, "the bearer token is not the status page's (serve.status_token_file)", http.StatusUnauthorized)
		return status.Status{}, false
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	lead := status.SingleReplica()
	if p.Leadership != nil {
		lead = p.Leadership()
	}
	o := status.Options{Names: names, Now: now(), Source: "serve", Leadership: &lead}
	if p.State != nil {
		sv, ev := p.State()
		o.Serving, o.Events = &sv, ev
	}
	var recs []status.Record
	if p.Runs != nil {
		recs = p.Runs.Records()
	}
	return status.Build(recs, o), true
}

func (p *Page) serveJSON(w http.ResponseWriter, r *http.Request) {
	s, ok := p.build(w, r)
	if !ok {
		return
	}
	if id := r.URL.Query().Get("run"); id != "" {
		rec, found := p.run(id)
		if !found {
			http.Error(w, "run "+id+" is not among the runs kept", http.StatusNotFound)
			return
		}
		s = status.Detail(rec, s)
	}
	headers(w, "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s) // the client went away: nothing to do
}

func (p *Page) run(id string) (status.Record, bool) {
	n, err := strconv.Atoi(id)
	if err != nil || p.Runs == nil {
		return status.Record{}, false
	}
	return p.Runs.Get(n)
}

// view is what the template reads.
type view struct {
	Status    status.Status
	Root      string
	Refresh   int
	Attention []string
}

func (p *Page) serveHTML(w http.ResponseWriter, r *http.Request) {
	s, ok := p.build(w, r)
	if !ok {
		return
	}
	v := view{Root: "./", Refresh: int(p.refresh().Seconds())}
	if id := r.PathValue("id"); id != "" {
		rec, found := p.run(id)
		if !found {
			http.Error(w, "run "+id+" is not among the runs kept (the last "+strconv.Itoa(status.Kept)+")", http.StatusNotFound)
			return
		}
		s = status.Detail(rec, s)
		v.Root = "../"
	}
	v.Status, v.Attention = s, Attention(s)
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		p.log().Error("status page: render", "error", err.Error())
		http.Error(w, "the status page could not be rendered", http.StatusInternalServerError)
		return
	}
	headers(w, "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

func (p *Page) refresh() time.Duration {
	if p.Refresh > 0 {
		return p.Refresh
	}
	return DefaultRefresh
}

func (p *Page) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

// headers are those of every page: nothing cached, nothing run but what the
// page itself brings (no script at all), nothing sent to other sites.
func headers(w http.ResponseWriter, contentType string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func healthClass(h string) string {
	switch h {
	case "ok", "starting":
		return "ok"
	case "failing":
		return "failed"
	}
	return "partial"
}
