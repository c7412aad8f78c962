// Package web is exq's dashboard: an http.Handler that shows and manages what an exq namespace
// holds in Redis (the same data Sidekiq Web and Exq's UI show), to mount in a Go program.
//
//	api, _ := exq.NewAPI(ctx, exq.ClientOptions{RedisURL: url})
//	mux.Handle("/admin/exq/", requireAdmin(web.New(api, web.Options{Prefix: "/admin/exq"})))
//
// Pages: a dashboard with the counters, a live graph of the last two minutes, a history of 7,
// 30 or 90 days, the Redis server and the Postgres outbox's backlog (when relays report one);
// queues (size, latency, paused, limits; pause, resume, delete); a queue's jobs; a queue's
// keys (the top keys by jobs waiting, their running and delayed jobs and state; pause, resume); busy nodes
// (exq, Exq and Sidekiq) and their running jobs (quiet, stop, cancel); the retry, scheduled
// and dead sets (paged, sorted, filtered; run now, delete, kill, one job or many); a job's
// every field with its error and backtrace; periodic jobs (enqueue now, enable, disable,
// delete, history); batches (counts, callbacks, pending and dead jobs, an audit for jobs run
// elsewhere); workflows (counts, and each one's jobs drawn as a graph); metrics (per job
// class, the runs, failures and time of the last 1 to 8 hours, and a class's histogram of run
// times, as Sidekiq 7 and 8's Metrics tab); and a search by jid.
//
// Everything reads without JavaScript; a small embedded script refreshes the dashboard. The
// graphs are SVG drawn on the server, so there is no chart library and no build step, and no
// asset comes from anywhere but the handler itself.
//
// Safety: the handler has no authentication of its own; put the embedding program's
// middleware in front of it (see the Example). Every change is a POST that carries a CSRF
// token (a double-submit cookie, SameSite=Strict, checked against the form in constant time;
// a cross-site Sec-Fetch-Site or Origin is refused too). Options.ReadOnly hides every button
// and refuses every POST with 403. Job content is attacker-controlled, so it is only ever
// written through html/template's escaping, and every response carries a strict
// Content-Security-Policy (no inline script or style, no framing). Redirects after a change go
// only to paths under the handler's own prefix. Only IP addresses, localhost and
// Options.AllowedHosts are served (DNS rebinding); a cross-site GET of a page that scans Redis
// is refused, and every page reads a bounded number of jobs. Forms name jobs by a digest
// (exq.JobRecord.Ref), never by the raw document. See docs/security.md.
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/exqgo/exq"
)

// Options configure the dashboard. The zero value of every field means its default.
type Options struct {
	// Prefix is the path under which browsers reach the handler, such as "/admin/exq"; a
	// trailing slash is dropped ("/admin/exq/" is the same prefix, "/" the root), so the
	// pattern it is mounted at may be given. Links and redirects are built with it. Requests
	// may arrive with it (mux.Handle("/admin/exq/", h)) or without it (behind
	// http.StripPrefix). Default "": the handler is mounted at the root. New panics on a
	// prefix that is not a clean absolute path of letters, digits and "-._~/", as
	// http.ServeMux panics on a bad pattern.
	Prefix string
	// ReadOnly hides every button that changes something and refuses every POST with 403
	// Forbidden: for dashboards shown to people who may look but not touch.
	ReadOnly bool
	// Title is shown in the header and the window title. Default "exq".
	Title string
	// PayloadFormatter renders a job's args for display (for example to hide personal data
	// or to decode a binary payload). It receives the job's class and its raw args (a JSON
	// array) and returns plain text, which the pages escape. Default: the JSON itself,
	// compact in listings and indented on a job's page.
	PayloadFormatter func(class string, args json.RawMessage) string
	// RefreshInterval is how often the dashboard's script refreshes the counters and the live
	// graph. Default 5 s; at least 1 s.
	RefreshInterval time.Duration
	// PageSize is how many jobs a listing shows per page. Default 25, at most 500.
	PageSize int
	// Logger receives the errors the pages meet (Redis failures). Default slog.Default().
	Logger *slog.Logger
	// AllowedHosts are the host names (with or without a port) browsers use to reach the
	// dashboard, such as "admin.example.com" behind a proxy. Requests for any other name are
	// refused with 421 Misdirected Request: that is what stops DNS rebinding, where a page on
	// an attacker's name pointed at 127.0.0.1 would otherwise read the dashboard and post its
	// forms. "localhost" and IP addresses are always served; "*" serves every name (only for
	// a handler that a proxy in front already restricts). Default: none.
	AllowedHosts []string
}

// handler serves the dashboard.
type handler struct {
	api  *exq.API
	opts Options
	mux  *http.ServeMux
	tmpl templates
	up   string // NewSharded: the path of the page that lists every shard
}

// New returns the dashboard for api's Redis and namespace. It starts no goroutine; every
// request reads Redis anew. See Options for what can be changed and the package doc for the
// safety rules it keeps.
func New(api *exq.API, opts Options) http.Handler {
	if api == nil {
		panic("web: New: api is nil")
	}
	return newHandler(api, opts, "New")
}

// newHandler checks and completes opts and builds the handler; fn names the caller in a panic.
func newHandler(api *exq.API, opts Options, fn string) *handler {
	p, err := cleanPrefix(opts.Prefix)
	if err != nil {
		panic("web: " + fn + ": Options.Prefix " + err.Error())
	}
	opts.Prefix = p
	if opts.Title == "" {
		opts.Title = "exq"
	}
	if opts.RefreshInterval == 0 {
		opts.RefreshInterval = 5 * time.Second
	}
	opts.RefreshInterval = max(opts.RefreshInterval, time.Second)
	if opts.PageSize <= 0 {
		opts.PageSize = 25
	}
	opts.PageSize = min(opts.PageSize, 500)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &handler{api: api, opts: opts, mux: http.NewServeMux(), tmpl: parseTemplates()}
	if api != nil {
		h.routes()
	}
	return h
}

// cleanPrefix checks a prefix and drops its trailing slash. Only a small alphabet is allowed,
// so a prefix can never make a redirect leave the site ("//evil.example", "/\evil") nor need
// escaping in a page.
func cleanPrefix(p string) (string, error) {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "", nil
	}
	if p[0] != '/' || strings.Contains(p, "//") {
		return "", fmt.Errorf("%q must be an absolute path such as /admin/exq", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return "", fmt.Errorf("%q must not contain . or .. segments", p)
		}
	}
	for _, c := range p {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~/", c)
		if !ok {
			return "", fmt.Errorf("%q may hold only letters, digits and -._~/", p)
		}
	}
	return p, nil
}

// contentSecurityPolicy allows the handler's own script, style, images and fetches and
// nothing else: no inline script or style (job content cannot run even if escaping failed),
// no plugins, no framing (clickjacking), forms only to the handler.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// csrfCookie holds the double-submit token; csrfField is the form field that repeats it.
const (
	csrfCookie = "exq_csrf"
	csrfField  = "csrf"
)

// maxFormBytes bounds a POST body: a bulk action carries the Refs of one page (about 60
// bytes each, at most 500), never the jobs themselves.
const maxFormBytes = 1 << 20

type ctxKey int

const tokenKey ctxKey = 0

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")

	// The path below the prefix: as it came (behind http.StripPrefix), or with the prefix cut.
	if !h.hostAllowed(r.Host) {
		refuseHost(w)
		return
	}
	path, raw := r.URL.Path, r.URL.RawPath
	if pre := h.opts.Prefix; pre != "" && (path == pre || strings.HasPrefix(path, pre+"/")) {
		path = strings.TrimPrefix(path, pre)
		raw = strings.TrimPrefix(raw, pre)
	}
	if path == "" {
		http.Redirect(w, r, h.opts.Prefix+"/", http.StatusFound)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = path, raw
	if r.Method == http.MethodGet && !crossSiteAllowed(r, path) {
		h.refuseCrossSite(w, r2)
		return
	}

	token := h.csrfToken(w, r)
	if r.Method == http.MethodPost {
		if h.opts.ReadOnly {
			h.errorPage(w, r2, http.StatusForbidden, "This dashboard is read-only.")
			return
		}
		r2.Body = http.MaxBytesReader(w, r2.Body, maxFormBytes)
		if !h.sameOrigin(r) || !validToken(r2, token) {
			h.errorPage(w, r2, http.StatusForbidden, "The form's security token is missing or wrong (CSRF check). Reload the page and try again.")
			return
		}
	}
	r2 = r2.WithContext(context.WithValue(r2.Context(), tokenKey, token))
	h.mux.ServeHTTP(w, r2)
}

// csrfToken returns the request's token from its cookie, or makes a new one and sets the
// cookie. A POST whose cookie was missing gets a token it cannot match.
func (h *handler) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 64 {
		if _, err := hex.DecodeString(c.Value); err == nil {
			return c.Value
		}
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	t := hex.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: t, Path: h.opts.Prefix + "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	if r.Method == http.MethodPost {
		return "" // a fresh token was not in the form the browser sent
	}
	return t
}

// validToken compares the form's token with the cookie's in constant time.
func validToken(r *http.Request, token string) bool {
	if token == "" {
		return false
	}
	got := r.PostFormValue(csrfField)
	return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// sameOrigin refuses what browsers say came from another site, on top of the token.
func (h *handler) sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	return h.originAllowed(r)
}

// redirect sends the browser, after a change, to back if it is a path under the prefix, else
// to fallback (a path below the prefix), with a message code for the next page.
func (h *handler) redirect(w http.ResponseWriter, r *http.Request, fallback, done string, n int) {
	to := h.opts.Prefix + fallback
	if b := r.PostFormValue("back"); h.safeBack(b) {
		to = b
	}
	if done != "" {
		u, _ := url.Parse(to) // safeBack or our own path: always parses
		q := u.Query()
		q.Set("done", done)
		q.Set("n", fmt.Sprint(n))
		u.RawQuery = q.Encode()
		to = u.String()
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// safeBack accepts only a path under the prefix, without a scheme, a host, a backslash or a
// double slash, so that no form field can send the browser elsewhere.
func (h *handler) safeBack(b string) bool {
	if b == "" || strings.ContainsAny(b, "\\\r\n\t") || strings.Contains(b, "//") {
		return false
	}
	if !strings.HasPrefix(b, h.opts.Prefix+"/") {
		return false
	}
	u, err := url.Parse(b)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && !strings.Contains(u.Path, "/../") && !strings.HasSuffix(u.Path, "/..")
}

// fail shows err: 404 for what is not there, 500 (logged) for the rest.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, exq.ErrJobNotFound), errors.Is(err, exq.ErrPeriodicNotFound), notFoundFlow(err):
		h.errorPage(w, r, http.StatusNotFound, "Not found: it may have run, moved or been deleted meanwhile.")
	case errors.Is(err, exq.ErrInvalidQueue), errors.Is(err, exq.ErrInvalidKey), errors.Is(err, exq.ErrInvalidPeriodic), errors.Is(err, exq.ErrUndecodableJob):
		h.errorPage(w, r, http.StatusBadRequest, err.Error())
	case errors.Is(err, context.Canceled):
		// The browser went away.
	default:
		h.opts.Logger.Error("exq web: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		h.errorPage(w, r, http.StatusInternalServerError, "Redis failed: "+err.Error())
	}
}

// notFoundFlow reports whether err is a batch or workflow that does not exist (any more).
func notFoundFlow(err error) bool {
	return errors.Is(err, exq.ErrBatchNotFound) || errors.Is(err, exq.ErrWorkflowNotFound)
}
