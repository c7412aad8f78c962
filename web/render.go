package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/textsafe"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// assetVersion is a hash of the embedded CSS and script, added to their URLs so that browsers
// may cache them for long and still get the new ones after an upgrade.
var assetVersion = func() string {
	h := sha256.New()
	for _, f := range []string{"static/app.css", "static/app.js"} {
		b, _ := staticFS.ReadFile(f)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

// templates maps a page's file name to the page parsed with the layout.
type templates map[string]*template.Template

var funcs = template.FuncMap{
	"seg":         pathSeg,
	"b64":         func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) },
	"qs":          url.QueryEscape,
	"num":         formatNum,
	"ago":         ago,
	"stamp":       stamp,
	"iso":         func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"inRange":     func(t time.Time) bool { return textsafe.InJSONRange(t.UTC()) },
	"dur":         formatDur,
	"per":         per,
	"kb":          formatKB,
	"bytes":       func(b int64) string { return formatKB(b / 1024) },
	"join":        strings.Join,
	"trunc":       truncate,
	"add":         func(a, b int) int { return a + b },
	"pct":         func(f float64) string { return strconv.FormatFloat(100*f, 'f', 0, 64) + "%" },
	"historyDays": func() []int { return []int{7, 30, 90} },
	"pa": func(v view, p exq.PeriodicState) any {
		return struct {
			V view
			P exq.PeriodicState
		}{v, p}
	},
}

func parseTemplates() templates {
	t := templates{}
	pages, _ := fs.Glob(templateFS, "templates/*.html")
	for _, p := range pages {
		name := strings.TrimPrefix(p, "templates/")
		if name == "layout.html" {
			continue
		}
		t[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", p))
	}
	return t
}

// view is what every page's template gets: the layout's fields and the page's own Data.
type view struct {
	Title    string // the dashboard's title
	Page     string // this page's title
	Prefix   string
	ReadOnly bool
	CSRF     string
	Nav      string // the active tab
	Flash    string // what the last change did
	Refresh  int    // the script's refresh interval, ms
	Here     string // this page's path and query under the prefix, for forms' back field
	Search   string // the jid in the search box
	Asset    string // assetVersion
	Up       string // the sharded dashboard's first page, for a shard's pages (NewSharded); "" otherwise
	Data     any
}

// render writes a page with the layout, buffered so that a template error becomes a clean 500.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, file, nav, title string, data any) {
	v := view{Title: h.opts.Title, Page: title, Prefix: h.opts.Prefix, ReadOnly: h.opts.ReadOnly, Nav: nav,
		Refresh: int(h.opts.RefreshInterval / time.Millisecond), Here: h.opts.Prefix + r.URL.EscapedPath(), Data: data,
		Search: r.URL.Query().Get("jid"), Asset: assetVersion, Up: h.up}
	v.CSRF, _ = r.Context().Value(tokenKey).(string)
	if r.URL.RawQuery != "" {
		q := r.URL.Query()
		q.Del("done")
		q.Del("n")
		if len(q) > 0 {
			v.Here += "?" + q.Encode()
		}
	}
	v.Flash = flash(r.URL.Query())
	b := &pageBuffer{}
	if err := h.tmpl[file].ExecuteTemplate(b, "layout", v); err != nil {
		if errors.Is(err, errPageTooLarge) && file != "error.html" {
			h.opts.Logger.Warn("exq web: page too large for the dashboard", "page", file, "path", r.URL.Path, "max_bytes", maxPageBytes)
			h.errorPage(w, r, http.StatusInternalServerError, fmt.Sprintf("This page would be larger than %d MiB: what it shows from Redis "+
				"is too large for the dashboard. The exq command shows it (with --json, whole).", maxPageBytes>>20))
			return
		}
		h.opts.Logger.Error("exq web: template failed", "page", file, "err", err)
		http.Error(w, "template error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.buf.Bytes())
}

// maxPageBytes bounds every page the dashboard renders, whatever Redis holds: each page cuts
// what it shows of each stored string and document, and lists a bounded number of records;
// this is the bound behind those, so that no combination of records (a job with a million
// fields, a workflow whose jobs each name thousands of parents) makes a page of tens of
// megabytes. Rendering stops as soon as a page passes it, so no more is held in memory either.
const maxPageBytes = 4 << 20

// errPageTooLarge stops a page's rendering at maxPageBytes.
var errPageTooLarge = errors.New("exq: web: page larger than the dashboard shows")

// pageBuffer is a page being rendered, refusing to grow past maxPageBytes.
// (A field, not embedded: an embedded bytes.Buffer's WriteString would bypass Write.)
type pageBuffer struct{ buf bytes.Buffer }

func (b *pageBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > maxPageBytes {
		return 0, errPageTooLarge
	}
	return b.buf.Write(p)
}

// errorPage shows a message in the layout.
func (h *handler) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "error.html", "", http.StatusText(status), errorData{Msg: msg})
}

// flashes are the only messages a redirect can ask the next page to show: a code and a count
// from the query, never text from it.
var flashes = map[string]string{
	"retried":   "%s job(s) moved to their queues to run now.",
	"deleted":   "%s job(s) deleted.",
	"killed":    "%s job(s) moved to the dead set.",
	"paused":    "Queue paused: no exq node fetches from it until it is resumed.",
	"resumed":   "Queue resumed.",
	"kpaused":   "Key paused: none of its jobs starts on any exq node until it is resumed.",
	"kresumed":  "Key resumed.",
	"qdeleted":  "Queue deleted with its jobs.",
	"quieted":   "Quiet signal sent: the node fetches no more jobs (within a few seconds).",
	"stopped":   "Stop signal sent: the node goes quiet and its application is asked to stop it.",
	"cancelled": "Cancel signal sent: the job goes to the dead set once its worker returns.",
	"enqueued":  "Periodic job enqueued now.",
	"enabled":   "Periodic job enabled.",
	"disabled":  "Periodic job disabled.",
	"pdeleted":  "Periodic job deleted.",
}

func flash(q url.Values) string {
	f, ok := flashes[q.Get("done")]
	if !ok {
		return ""
	}
	if strings.Contains(f, "%s") {
		n, err := strconv.Atoi(q.Get("n"))
		if err != nil || n < 0 {
			return ""
		}
		return fmt.Sprintf(f, formatNum(int64(n)))
	}
	return f
}

// formatNum writes n with thousands separators: 1,234,567.
func formatNum(n any) string {
	var v int64
	switch x := n.(type) {
	case int:
		v = int64(x)
	case int64:
		v = x
	}
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// per names a rate's period: "second", "minute", "hour", "day", or the duration ("30s").
func per(d time.Duration) string {
	switch d {
	case time.Second:
		return "second"
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	return d.String()
}

// stamp is a time as every page writes it, in UTC.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	if !textsafe.InJSONRange(t.UTC()) {
		return outOfRange
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// outOfRange stands for a stored time outside years 0000–9999 (a stored 1e12 or 1e300 seconds),
// as --json and the API's JSON write null for it: no clamped year 292277026596, no "106751 days
// ago".
const outOfRange = "out of range"

// ago says how far t is from now: "3 min ago", "in 2 h".
func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	if !textsafe.InJSONRange(t.UTC()) {
		return outOfRange
	}
	d := time.Since(t)
	if d < 0 {
		return "in " + roughDur(-d)
	}
	if d < time.Second {
		return "just now"
	}
	return roughDur(d) + " ago"
}

func roughDur(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// formatDur writes a latency: "0", "850 ms", "12.3 s", "5 min".
func formatDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return roughDur(d)
}

func formatKB(kb int64) string {
	switch {
	case kb <= 0:
		return "–"
	case kb < 1024:
		return fmt.Sprintf("%d KB", kb)
	case kb < 1024*1024:
		return fmt.Sprintf("%.1f MB", float64(kb)/1024)
	}
	return fmt.Sprintf("%.2f GB", float64(kb)/1024/1024)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// What a page shows of a document, at most: pretty-printed args (bytes, and levels indented;
// deeper values stay on one line), the raw document and each field on a job's page (bytes;
// the whole raw document is a download), and args in a listing (bytes read to compact them).
const (
	maxPretty      = 64 << 10
	maxPrettyDepth = 32
	maxRawShown    = 64 << 10
	maxFieldShown  = 2000
	maxCompactRead = 4 << 10
)

// argsText renders a job's args as the listings show them: the PayloadFormatter's text, or
// the compact JSON (of its first few KB: a listing shows 200 characters).
func (h *handler) argsText(class string, args json.RawMessage) string {
	if h.opts.PayloadFormatter != nil {
		return h.opts.PayloadFormatter(class, args)
	}
	if len(args) > maxCompactRead {
		return truncate(string(args), maxCompactRead)
	}
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		return string(args)
	}
	return b.String()
}

// argsPretty renders a job's args for its page: the PayloadFormatter's text, or indented JSON
// within bounds (a 20 KB document nested 10 000 deep made a 200 MB page).
func (h *handler) argsPretty(class string, args json.RawMessage) string {
	if h.opts.PayloadFormatter != nil {
		return h.opts.PayloadFormatter(class, args)
	}
	out, _ := textsafe.Pretty(args, maxPrettyDepth, maxPretty)
	return out
}

// pathSeg escapes a name (queue, jid, periodic job) as one path segment. A browser resolves
// "." and ".." segments, even spelled %2E%2E, so "/queues/../delete" would leave the queue's
// page: such names, and names starting with "~", are written "~" and their bytes in hex,
// which pathName reads back.
func pathSeg(s string) string {
	if s == "." || s == ".." || strings.HasPrefix(s, "~") {
		return "~" + hex.EncodeToString([]byte(s))
	}
	return url.PathEscape(s)
}

// pathName reads back a name pathSeg wrote in the path wildcard key.
func pathName(r *http.Request, key string) string {
	v := r.PathValue(key)
	if rest, ok := strings.CutPrefix(v, "~"); ok {
		if b, err := hex.DecodeString(rest); err == nil {
			return string(b)
		}
	}
	return v
}

// row is one job in a listing.
type row struct {
	// Ref names the document in forms (exq.JobRecord.SetRef in a set, Ref in a queue): the
	// raw document, which could be megabytes or bytes no form carries, never goes into a page.
	Ref      string
	ID       string    // the job page's path segment: the jid, or the Ref without one
	At       time.Time // the score: due, next retry, death
	Enqueued time.Time
	JID      string
	Class    string
	Queue    string
	Args     string
	Error    string // class: message
	Retry    int
	Bad      string // why the document is not a job, when it is not
}

func (h *handler) row(rec exq.JobRecord) row {
	r := row{Ref: rec.SetRef(), ID: rec.Ref(), At: rec.At}
	if rec.Score == 0 && rec.At.IsZero() {
		r.Ref = rec.Ref() // a queue's job: no score
	}
	j, err := rec.Job()
	if err != nil {
		r.Bad = err.Error()
		r.Args = truncate(rec.Raw, 200)
		return r
	}
	if j.JID != "" && utf8.ValidString(rec.Raw) {
		r.ID = j.JID
	}
	r.JID, r.Class, r.Queue, r.Retry, r.Enqueued = j.JID, j.Class, j.Queue, j.RetryCount, j.EnqueuedAt
	r.Args = truncate(h.argsText(j.Class, j.Args), 200)
	if j.ErrorClass != "" || j.ErrorMessage != "" {
		r.Error = truncate(strings.TrimPrefix(j.ErrorClass+": "+j.ErrorMessage, ": "), 200)
	}
	return r
}
