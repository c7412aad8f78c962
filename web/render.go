package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/exqgo/exq"
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
	"seg":         url.PathEscape,
	"qs":          url.QueryEscape,
	"num":         formatNum,
	"ago":         ago,
	"stamp":       stamp,
	"iso":         func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"dur":         formatDur,
	"per":         per,
	"kb":          formatKB,
	"bytes":       func(b int64) string { return formatKB(b / 1024) },
	"join":        strings.Join,
	"trunc":       truncate,
	"add":         func(a, b int) int { return a + b },
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
	var b bytes.Buffer
	if err := h.tmpl[file].ExecuteTemplate(&b, "layout", v); err != nil {
		h.opts.Logger.Error("exq web: template failed", "page", file, "err", err)
		http.Error(w, "template error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// errorPage shows a message in the layout.
func (h *handler) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "error.html", "", http.StatusText(status), msg)
}

// flashes are the only messages a redirect can ask the next page to show: a code and a count
// from the query, never text from it.
var flashes = map[string]string{
	"retried":   "%s job(s) moved to their queues to run now.",
	"deleted":   "%s job(s) deleted.",
	"killed":    "%s job(s) moved to the dead set.",
	"paused":    "Queue paused: no exq node fetches from it until it is resumed.",
	"resumed":   "Queue resumed.",
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
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// ago says how far t is from now: "3 min ago", "in 2 h".
func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
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

// argsText renders a job's args as the listings show them: the PayloadFormatter's text, or
// the compact JSON.
func (h *handler) argsText(class string, args json.RawMessage) string {
	if h.opts.PayloadFormatter != nil {
		return h.opts.PayloadFormatter(class, args)
	}
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		return string(args)
	}
	return b.String()
}

// argsPretty renders a job's args for its page: the PayloadFormatter's text, or indented JSON.
func (h *handler) argsPretty(class string, args json.RawMessage) string {
	if h.opts.PayloadFormatter != nil {
		return h.opts.PayloadFormatter(class, args)
	}
	return pretty(args)
}

func pretty(raw []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// row is one job in a listing.
type row struct {
	Raw      string
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
	r := row{Raw: rec.Raw, At: rec.At}
	j, err := rec.Job()
	if err != nil {
		r.Bad = err.Error()
		r.Args = truncate(rec.Raw, 200)
		return r
	}
	r.JID, r.Class, r.Queue, r.Retry, r.Enqueued = j.JID, j.Class, j.Queue, j.RetryCount, j.EnqueuedAt
	r.Args = truncate(h.argsText(j.Class, j.Args), 200)
	if j.ErrorClass != "" || j.ErrorMessage != "" {
		r.Error = truncate(strings.TrimPrefix(j.ErrorClass+": "+j.ErrorMessage, ": "), 200)
	}
	return r
}
