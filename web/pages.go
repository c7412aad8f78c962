package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/exqgo/exq"
)

func (h *handler) routes() {
	m := h.mux
	m.HandleFunc("GET /{$}", h.dashboard)
	m.HandleFunc("GET /stats.json", h.statsJSON)
	m.HandleFunc("GET /static/{file}", h.static)
	m.HandleFunc("GET /queues", h.queues)
	m.HandleFunc("GET /queues/{name}", h.queue)
	m.HandleFunc("GET /queues/{name}/delete", h.confirmQueueDelete)
	m.HandleFunc("GET /queues/{name}/keys", h.keys)
	m.HandleFunc("GET /queues/{name}/jobs/{jid}", h.queueJob)
	m.HandleFunc("GET /busy", h.busy)
	m.HandleFunc("GET /periodic", h.periodic)
	m.HandleFunc("GET /periodic/{name}", h.periodicJob)
	m.HandleFunc("GET /periodic/{name}/delete", h.confirmPeriodicDelete)
	m.HandleFunc("GET /search", h.search)
	m.HandleFunc("GET /batches", h.batches)
	m.HandleFunc("GET /batches/{bid}", h.batch)
	m.HandleFunc("GET /workflows", h.workflows)
	m.HandleFunc("GET /workflows/{id}", h.workflow)
	m.HandleFunc("GET /metrics", h.metrics)
	for _, s := range sets {
		m.HandleFunc("GET /"+s.Path, h.setPage(s))
		m.HandleFunc("GET /"+s.Path+"/all/{op}", h.confirmSetAll(s))
		m.HandleFunc("GET /"+s.Path+"/{jid}", h.setJob(s))
		m.HandleFunc("POST /"+s.Path+"/jobs", h.setAction(s))
		m.HandleFunc("POST /"+s.Path+"/all/{op}", h.setAll(s))
	}
	m.HandleFunc("POST /queues/{name}/pause", h.queueControl)
	m.HandleFunc("POST /queues/{name}/resume", h.queueControl)
	m.HandleFunc("POST /queues/{name}/delete", h.queueDelete)
	m.HandleFunc("POST /queues/{name}/keys/{op}", h.keyControl)
	m.HandleFunc("POST /queues/{name}/jobs", h.queueJobsDelete)
	m.HandleFunc("POST /busy/signal", h.nodeSignal)
	m.HandleFunc("POST /busy/cancel", h.cancelJob)
	m.HandleFunc("POST /periodic/{name}/{op}", h.periodicAction)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.errorPage(w, r, http.StatusNotFound, "There is no page here.")
	})
}

// setInfo describes one of the sorted sets of jobs and its page.
type setInfo struct {
	Set   exq.Set
	Path  string // under the prefix
	Title string
	When  string // what the score means
	Kill  bool   // its jobs can be killed (moved to dead)
	// Requeue and RequeueAll label the buttons that move jobs to their queues now (op
	// "retry", the API's Requeue): Sidekiq Web's words, "Retry Now" on retries and dead
	// jobs and "Add to queue" on scheduled ones.
	Requeue, RequeueAll string
}

var sets = []setInfo{
	{exq.RetrySet, "retries", "Retries", "Next retry", true, "Retry Now", "Retry All"},
	{exq.ScheduledSet, "scheduled", "Scheduled", "Due", true, "Add to queue", "Add all to queue"},
	{exq.DeadSet, "dead", "Dead", "Died", false, "Retry Now", "Retry All"},
}

// static serves the embedded CSS and script; the pages link them with a hash of their content
// (assetVersion), so they may be cached for long.
func (h *handler) static(w http.ResponseWriter, r *http.Request) {
	b, err := staticFS.ReadFile("static/" + r.PathValue("file"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasSuffix(r.PathValue("file"), ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(r.PathValue("file"), ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.Header().Set("Cache-Control", "public, max-age=86400")
	_, _ = w.Write(b)
}

// dashboardData is the dashboard page.
type dashboardData struct {
	O     exq.Overview
	Redis *exq.RedisInfo // nil when INFO is refused (an ACL without @dangerous)
	// Outbox is what the outbox relays (module exqpg) last reported; nil when none ever did,
	// or when the report cannot be read.
	Outbox   *outboxView
	Live     chart
	History  chart
	Days     int
	DayTable []dayRow
}

// outboxView is the dashboard's outbox section.
type outboxView struct {
	exq.OutboxStatus
	// OldestAge is how long the oldest waiting row had waited when the relay reported (what
	// `exq outbox status` shows too), not now: a drained row waits no longer.
	OldestAge time.Duration
	// Stale is true when no relay reported for staleOutbox: none runs, or none reaches Redis.
	Stale bool
}

// staleOutbox is how old the relays' last report may be before the dashboard says so (they
// report every few seconds).
const staleOutbox = time.Minute

type dayRow struct {
	Day               time.Time
	Processed, Failed int64
}

// historyDays are the history ranges offered; the first is the default.
var historyDays = []int{30, 7, 90}

func (h *handler) dashboard(w http.ResponseWriter, r *http.Request) {
	days := historyDays[0]
	if d, err := strconv.Atoi(r.URL.Query().Get("days")); err == nil {
		for _, ok := range historyDays {
			if d == ok {
				days = d
			}
		}
	}
	ctx := r.Context()
	var (
		wg             sync.WaitGroup
		o              exq.Overview
		live           map[int64][2]int64
		hist           []exq.DayStats
		e1, e2, e3     error
		now            = time.Now()
		firstDay, last = now.AddDate(0, 0, -(days - 1)), now
	)
	// Independent reads, each one or a few round trips, at once.
	var info *exq.RedisInfo
	var outbox *outboxView
	wg.Add(5)
	go func() {
		defer wg.Done()
		s, err := h.api.Outbox(ctx)
		switch {
		case err != nil:
			h.opts.Logger.Warn("exq web: the outbox status in Redis cannot be read", "err", err)
		case s.Reported:
			outbox = &outboxView{OutboxStatus: s, Stale: time.Since(s.UpdatedAt) > staleOutbox}
			if !s.OldestAt.IsZero() && !s.UpdatedAt.IsZero() {
				outbox.OldestAge = max(s.UpdatedAt.Sub(s.OldestAt), 0)
			}
		}
	}()
	go func() {
		defer wg.Done()
		if i, err := h.api.RedisInfo(ctx); err == nil {
			info = &i
		} else {
			h.opts.Logger.Debug("exq web: no Redis INFO for the dashboard", "err", err)
		}
	}()
	go func() { defer wg.Done(); o, e1 = h.api.Overview(ctx) }()
	go func() { defer wg.Done(); live, e2 = h.realtime(ctx) }()
	go func() { defer wg.Done(); hist, e3 = h.api.StatsBetween(ctx, firstDay, last) }()
	wg.Wait()
	if err := errors.Join(e1, e2, e3); err != nil {
		h.fail(w, r, err)
		return
	}
	d := dashboardData{O: o, Redis: info, Outbox: outbox, Live: realtimeChart(live, now), Days: days}
	dayTimes := make([]time.Time, len(hist))
	p, f := make([]int64, len(hist)), make([]int64, len(hist))
	for i, s := range hist {
		dayTimes[i], p[i], f[i] = s.Day, s.Processed, s.Failed
		d.DayTable = append(d.DayTable, dayRow{s.Day, s.Processed, s.Failed})
	}
	sort.Slice(d.DayTable, func(i, j int) bool { return d.DayTable[i].Day.After(d.DayTable[j].Day) })
	d.History = historyChart(dayTimes, p, f)
	h.render(w, r, http.StatusOK, "dashboard.html", "dashboard", "Dashboard", d)
}

// realtime reads the per-second counters by second.
func (h *handler) realtime(ctx context.Context) (map[int64][2]int64, error) {
	rt, err := h.api.Realtime(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int64][2]int64, len(rt))
	for _, s := range rt {
		out[s.At.Unix()] = [2]int64{s.Processed, s.Failed}
	}
	return out, nil
}

// statsJSON is what the dashboard's script polls: the counters and the live graph.
func (h *handler) statsJSON(w http.ResponseWriter, r *http.Request) {
	var (
		wg     sync.WaitGroup
		o      exq.Overview
		live   map[int64][2]int64
		e1, e2 error
	)
	wg.Add(2)
	go func() { defer wg.Done(); o, e1 = h.api.Overview(r.Context()) }()
	go func() { defer wg.Done(); live, e2 = h.realtime(r.Context()) }()
	wg.Wait()
	if err := errors.Join(e1, e2); err != nil {
		h.opts.Logger.Error("exq web: stats failed", "err", err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"redis"}`))
		return
	}
	body := struct {
		Counters map[string]string `json:"counters"`
		Live     chartJSON         `json:"live"`
	}{
		Counters: map[string]string{
			"processed": formatNum(o.Processed), "failed": formatNum(o.Failed), "busy": formatNum(o.Busy),
			"processes": formatNum(o.Processes), "enqueued": formatNum(o.Enqueued), "retries": formatNum(o.Retries),
			"scheduled": formatNum(o.Scheduled), "dead": formatNum(o.Dead),
		},
		Live: realtimeChart(live, time.Now()).json(),
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(body)
}

// queueRow is one line of the queues page.
type queueRow struct {
	exq.QueueState
	Latency time.Duration
}

// queuesPerPage is how many queues the queues page lists at a time: a namespace may hold
// hundreds of thousands (200 000 made a 104 MB page).
const queuesPerPage = 100

type queuesData struct {
	Rows []queueRow
	P    pager
}

func (h *handler) queues(w http.ResponseWriter, r *http.Request) {
	p := h.pagerOf(r, true)
	p.Size = queuesPerPage
	states, total, err := h.api.QueueStatesPage(r.Context(), p.Offset(), p.Size)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = st.Name
	}
	lat, err := h.api.QueueLatenciesOf(r.Context(), names)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p.Total, p.More = int64(total), p.Offset()+len(states) < total
	rows := make([]queueRow, len(states))
	for i, s := range states {
		rows[i] = queueRow{QueueState: s, Latency: lat[s.Name]}
	}
	h.render(w, r, http.StatusOK, "queues.html", "queues", "Queues", queuesData{Rows: rows, P: p})
}

// pager pages a listing: 1-based page numbers, newest or oldest first.
type pager struct {
	Page, Size int
	Total      int64 // -1 when unknown (a filtered listing)
	More       bool  // a next page exists
	Asc        bool  // oldest (or soonest) first
	Base       url.Values
}

// pagerOf reads the page, the order ("asc": oldest or soonest first; "desc"; ascDefault
// without one) and the filter from the query.
func (h *handler) pagerOf(r *http.Request, ascDefault bool) pager {
	q := r.URL.Query()
	p := pager{Page: 1, Size: h.opts.PageSize, Total: -1, Base: url.Values{}}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 1 && n < 1_000_000 {
		p.Page = n
	}
	switch q.Get("sort") {
	case "asc":
		p.Asc = true
	case "desc":
		p.Asc = false
	default:
		p.Asc = ascDefault
	}
	for _, k := range []string{"class", "queue", "q", "sort"} {
		if v := q.Get(k); v != "" {
			p.Base.Set(k, v)
		}
	}
	return p
}

func (p pager) Offset() int { return (p.Page - 1) * p.Size }

// Link is the query of page n with the same sort and filter.
func (p pager) Link(n int) string {
	q := url.Values{}
	for k, v := range p.Base {
		q[k] = v
	}
	if n > 1 {
		q.Set("page", strconv.Itoa(n))
	}
	if len(q) == 0 {
		return "?"
	}
	return "?" + q.Encode()
}

// SortLink is the query that flips the order, back on page 1.
func (p pager) SortLink() string {
	q := url.Values{}
	for k, v := range p.Base {
		q[k] = v
	}
	if p.Asc {
		q.Set("sort", "desc")
	} else {
		q.Set("sort", "asc")
	}
	return "?" + q.Encode()
}

func (p pager) Prev() int { return p.Page - 1 }
func (p pager) Next() int { return p.Page + 1 }
func (p pager) Pages() int64 {
	if p.Total < 0 {
		return -1
	}
	return (p.Total + int64(p.Size) - 1) / int64(p.Size)
}

type queueData struct {
	Name  string
	Rows  []row
	P     pager
	State exq.QueueState
}

func (h *handler) queue(w http.ResponseWriter, r *http.Request) {
	name := pathName(r, "name")
	p := h.pagerOf(r, false)
	recs, err := h.api.Jobs(r.Context(), name, exq.ListOptions{Offset: p.Offset(), Size: p.Size + 1, Reverse: p.Asc})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if p.Total, err = h.api.QueueSize(r.Context(), name); err != nil {
		h.fail(w, r, err)
		return
	}
	d := queueData{Name: name, P: p}
	if len(recs) > p.Size {
		d.P.More, recs = true, recs[:p.Size]
	}
	for _, rec := range recs {
		d.Rows = append(d.Rows, h.row(rec))
	}
	if paused, err := h.api.PausedQueues(r.Context()); err == nil {
		for _, q := range paused {
			d.State.Paused = d.State.Paused || q == name
		}
	}
	h.render(w, r, http.StatusOK, "queue.html", "queues", "Queue "+name, d)
}

type confirmData struct {
	Question string
	Detail   string
	Action   string // path under the prefix to POST to
	Button   string
	Back     string // path under the prefix to go back to
	Fields   map[string]string
}

func (h *handler) confirmQueueDelete(w http.ResponseWriter, r *http.Request) {
	name := pathName(r, "name")
	n, err := h.api.QueueSize(r.Context(), name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "confirm.html", "queues", "Delete queue", confirmData{
		Question: "Delete queue “" + name + "”?",
		Detail:   "Its " + formatNum(n) + " waiting job(s) are deleted with it. Jobs running now, and retries and scheduled jobs of the queue, stay.",
		Action:   "/queues/" + pathSeg(name) + "/delete", Button: "Delete queue", Back: "/queues",
	})
}

type jobData struct {
	Where   string // "retry", "queue", …
	Set     *setInfo
	Queue   string
	At      time.Time
	Ref     string // names the document in the forms (row.Ref)
	ID      string // its page's path segment (row.ID)
	Raw     string // the raw document, cut to maxRawShown
	RawCut  bool   // Raw is cut: the whole one is a download
	Size    int    // of the whole raw document, bytes
	RawLink string // under the prefix: the whole raw document, as a download
	Job     *exq.Job
	Bad     string
	Args    string
	Fields  []field  // at most maxFieldsShown
	Trace   []string // at most maxTraceShown lines, each cut to maxFieldShown
	// MoreFields and MoreTrace are how many fields and backtrace lines are not shown.
	MoreFields, MoreTrace int
	Back                  string
	Actions               bool
	// Steps are the durable steps the job saved (steps.go); StepsErr why they could not be read.
	Steps    exq.JobSteps
	StepsErr string
	Iter     string // an iterable job's saved state (iterSummary)
}

// withIteration adds an iterable job's saved state to its page (a job waiting to resume, or in
// retry, has one). A failed read leaves the line out: the rest of the page stands.
func (h *handler) withIteration(r *http.Request, d *jobData) {
	if d.Job == nil || d.Job.JID == "" {
		return
	}
	if p, ok, err := h.api.IterationProgress(r.Context(), d.Job.JID); err == nil && ok {
		d.Iter = iterSummary(&p)
	}
}

type field struct {
	Key, Value string
	Time       time.Time
}

func (h *handler) jobData(rec exq.JobRecord) jobData {
	rw := h.row(rec)
	d := jobData{Raw: rec.Raw, At: rec.At, Ref: rw.Ref, ID: rw.ID, Size: len(rec.Raw)}
	if len(d.Raw) > maxRawShown {
		d.Raw, d.RawCut = truncate(d.Raw, maxRawShown), true
	}
	j, err := rec.Job()
	if err != nil {
		d.Bad = err.Error()
		return d
	}
	d.Job = j
	d.Args = h.argsPretty(j.Class, j.Args)
	var doc map[string]json.RawMessage
	if json.Unmarshal([]byte(rec.Raw), &doc) == nil {
		keys := make([]string, 0, len(doc))
		for k := range doc {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := doc[k]
			f := field{Key: k, Value: truncate(string(v), maxFieldShown)}
			var s string
			if len(v) <= 4*maxFieldShown && json.Unmarshal(v, &s) == nil {
				f.Value = truncate(s, maxFieldShown)
			}
			switch k {
			case "args":
				continue // shown above
			case "error_backtrace":
				if lines, err := exq.DecodeBacktrace(v); err == nil {
					f.Value = strconv.Itoa(len(lines)) + " line(s), below"
					if len(lines) > maxTraceShown {
						lines, d.MoreTrace = lines[:maxTraceShown], len(lines)-maxTraceShown
					}
					for _, l := range lines {
						d.Trace = append(d.Trace, truncate(l, maxFieldShown))
					}
				}
			case "enqueued_at", "created_at", "failed_at", "retried_at", "unlocks_at", "expires_at":
				if at, ok := exq.ParseJobTime(string(v)); ok { // seconds, or Sidekiq 8's ms
					f.Time = at
				}
			}
			if len(d.Fields) == maxFieldsShown {
				d.MoreFields++
				continue
			}
			d.Fields = append(d.Fields, f)
		}
	}
	return d
}

// What a job's page shows at most of a document's fields and backtrace lines (the raw
// document, a download, has them all).
const (
	maxFieldsShown = 200
	maxTraceShown  = 500
)

func (h *handler) queueJob(w http.ResponseWriter, r *http.Request) {
	name, jid := pathName(r, "name"), pathName(r, "jid")
	rec, err := h.api.FindInQueue(r.Context(), name, jid)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if r.URL.Query().Has("raw") {
		serveRaw(w, rec)
		return
	}
	d := h.jobData(rec)
	h.addSteps(r.Context(), &d)
	d.Where, d.Queue, d.Back = "queue", name, "/queues/"+pathSeg(name)
	h.withIteration(r, &d)
	d.RawLink = "/queues/" + pathSeg(name) + "/jobs/" + pathSeg(rec.Ref()) + "?raw"
	h.render(w, r, http.StatusOK, "job.html", "queues", "Job "+jid, d)
}

// serveRaw sends a stored document byte for byte, as a download: the job page shows at most
// maxRawShown of it. Never rendered by the browser (attachment, nosniff, the strict CSP).
func serveRaw(w http.ResponseWriter, rec exq.JobRecord) {
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Disposition", `attachment; filename="`+strings.TrimPrefix(rec.Ref(), "ref:")+`.json"`)
	hd.Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(rec.Raw))
}

type busyData struct {
	Processes []proc
	Jobs      []busyRow
	Threads   int
	Busy      int
}

type proc struct {
	exq.Process
	Runtime string
}

type busyRow struct {
	Node     string
	RunAt    time.Time
	Progress *exq.Progress // bounded and checked by the API; escaped by the template
	Iter     string        // an iterable job's saved state (iterSummary), escaped by the template
	row
}

// iterSummary is one line of an iterable job's saved state: its cursor (cut), runs and time
// spent. The API bounds the cursor and keeps it valid JSON.
func iterSummary(p *exq.IterationProgress) string {
	if p == nil {
		return ""
	}
	s := fmt.Sprintf("cursor %s · run %d · %s iterating", truncate(string(p.Cursor), 200), p.Executions, p.Runtime.Round(100*time.Millisecond))
	if !p.Cancelled.IsZero() {
		s += " · cancelled"
	}
	if p.Done {
		s += " · done"
	}
	return s
}

// runtimeOf tells exq, Exq and Sidekiq nodes apart by what they write: exq's label, Exq's
// identity without a tag, Sidekiq's tag and labels.
func runtimeOf(p exq.Process) string {
	for _, l := range p.Labels {
		if l == "exq-go" {
			return "exq (Go)"
		}
	}
	if p.Tag == "" && len(p.Labels) == 0 {
		return "Exq (Elixir) or Sidekiq"
	}
	return "Sidekiq or other"
}

func (h *handler) busy(w http.ResponseWriter, r *http.Request) {
	var (
		wg     sync.WaitGroup
		procs  []exq.Process
		jobs   []exq.BusyJob
		e1, e2 error
	)
	wg.Add(2)
	go func() { defer wg.Done(); procs, e1 = h.api.Processes(r.Context()) }()
	go func() { defer wg.Done(); jobs, e2 = h.api.BusyJobs(r.Context()) }()
	wg.Wait()
	if err := errors.Join(e1, e2); err != nil {
		h.fail(w, r, err)
		return
	}
	var d busyData
	for _, p := range procs {
		d.Processes = append(d.Processes, proc{Process: p, Runtime: runtimeOf(p)})
		d.Threads += p.Concurrency
		d.Busy += p.Busy
	}
	for _, j := range jobs {
		d.Jobs = append(d.Jobs, busyRow{Node: j.Node, RunAt: j.RunAt, Progress: j.Progress, Iter: iterSummary(j.Iteration), row: h.row(j.JobRecord)})
	}
	h.render(w, r, http.StatusOK, "busy.html", "busy", "Busy", d)
}

type setData struct {
	S      setInfo
	Rows   []row
	P      pager
	Filter struct{ Class, Queue, Text string }
	Scan   *scanInfo // a filtered listing: what it searched
}

// scanInfo is how much of a set a filtered listing searched: members From to To (0-based,
// To excluded) of Total, and the query that goes on from To ("" when it read to the end and
// found no more than a page).
type scanInfo struct {
	From, To int
	Total    int64
	Next     string
}

// scanChunk is how many members a filtered listing reads per round trip, and scanLimit how
// many one request reads at most.
const (
	scanChunk = 1000
	scanLimit = 10_000
)

func (h *handler) setPage(s setInfo) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		p := h.pagerOf(r, s.Set != exq.DeadSet)
		d := setData{S: s, P: p}
		q := r.URL.Query()
		d.Filter.Class, d.Filter.Queue, d.Filter.Text = q.Get("class"), q.Get("queue"), q.Get("q")
		// Dead lists newest first by default, retry and schedule soonest first; "asc" is
		// oldest first for every set, so Reverse depends on the set.
		list := func(off, size int) ([]exq.JobRecord, error) {
			asc := p.Asc
			switch s.Set {
			case exq.DeadSet:
				return h.api.Dead(ctx, exq.ListOptions{Offset: off, Size: size, Reverse: asc})
			case exq.RetrySet:
				return h.api.Retries(ctx, exq.ListOptions{Offset: off, Size: size, Reverse: !asc})
			}
			return h.api.Scheduled(ctx, exq.ListOptions{Offset: off, Size: size, Reverse: !asc})
		}
		if d.Filter.Class == "" && d.Filter.Queue == "" && d.Filter.Text == "" {
			recs, err := list(p.Offset(), p.Size+1)
			if err == nil {
				d.P.Total, err = h.api.Size(ctx, s.Set)
			}
			if err != nil {
				h.fail(w, r, err)
				return
			}
			if len(recs) > p.Size {
				d.P.More, recs = true, recs[:p.Size]
			}
			for _, rec := range recs {
				d.Rows = append(d.Rows, h.row(rec))
			}
		} else {
			// A filter reads the set in chunks, in the page's order, from ?from= on, until it
			// has a page of matches and one more (to know a next page exists), or it has read
			// scanLimit members: a cross-site <img> must not cost seconds (1 M retries and
			// ?q=nomatch took 2.8 s). Then the page offers to go on from where it stopped.
			from, skip := 0, p.Offset() // ?page= skips pages of matches (within the same limit)
			if n, err := strconv.Atoi(q.Get("from")); err == nil && n > 0 {
				from, skip = n, 0
			}
			off, end := from, false
		scan:
			for off-from < scanLimit {
				want := min(scanChunk, scanLimit-(off-from))
				recs, err := list(off, want)
				if err != nil {
					h.fail(w, r, err)
					return
				}
				for i, rec := range recs {
					if !matches(rec, d.Filter.Class, d.Filter.Queue, d.Filter.Text) {
						continue
					}
					if skip > 0 {
						skip--
						continue
					}
					if len(d.Rows) == p.Size {
						off, d.P.More = off+i, true
						break scan
					}
					d.Rows = append(d.Rows, h.row(rec))
				}
				off += len(recs)
				if len(recs) < want {
					end = true
					break
				}
			}
			total, err := h.api.Size(ctx, s.Set)
			if err != nil {
				h.fail(w, r, err)
				return
			}
			d.Scan = &scanInfo{From: from, To: off, Total: total}
			if !end || d.P.More {
				next := url.Values{}
				for k, v := range p.Base {
					next[k] = v
				}
				next.Set("from", strconv.Itoa(off))
				d.Scan.Next = "?" + next.Encode()
			}
		}
		h.render(w, r, http.StatusOK, "set.html", s.Path, s.Title, d)
	}
}

// matches applies a listing's filter: class and queue exactly, text anywhere in the raw JSON
// (case-insensitive).
func matches(rec exq.JobRecord, class, queue, text string) bool {
	if text != "" && !strings.Contains(strings.ToLower(rec.Raw), strings.ToLower(text)) {
		return false
	}
	if class == "" && queue == "" {
		return true
	}
	j, err := rec.Job()
	if err != nil {
		return false
	}
	return (class == "" || j.Class == class) && (queue == "" || j.Queue == queue)
}

func (h *handler) setJob(s setInfo) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		jid := pathName(r, "jid")
		rec, err := h.api.Find(r.Context(), s.Set, jid)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if r.URL.Query().Has("raw") {
			serveRaw(w, rec)
			return
		}
		d := h.jobData(rec)
		h.addSteps(r.Context(), &d)
		d.Where, d.Set, d.Back = string(s.Set), &s, "/"+s.Path
		h.withIteration(r, &d)
		d.RawLink = "/" + s.Path + "/" + pathSeg(rec.Ref()) + "?raw"
		h.render(w, r, http.StatusOK, "job.html", s.Path, "Job "+jid, d)
	}
}

// setAllOps are the actions on a whole set, with their confirmation texts.
var setAllOps = map[string]struct{ button, detail string }{
	"retry":  {"", "Every job now in the set moves to its queue and runs as soon as a node takes it."}, // button: the set's RequeueAll
	"delete": {"Delete all", "Every job now in the set is deleted. This cannot be undone."},
	"kill":   {"Kill all", "Every job now in the set moves to the dead set (trimmed to its newest 10,000 jobs and 180 days)."},
}

func (h *handler) confirmSetAll(s setInfo) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		op := r.PathValue("op")
		o, ok := setAllOps[op]
		if !ok || (op == "kill" && !s.Kill) {
			h.errorPage(w, r, http.StatusNotFound, "There is no such action.")
			return
		}
		if op == "retry" {
			o.button = s.RequeueAll
		}
		n, err := h.api.Size(r.Context(), s.Set)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.render(w, r, http.StatusOK, "confirm.html", s.Path, o.button, confirmData{
			Question: o.button + ": " + formatNum(n) + " job(s) in " + s.Title + "?", Detail: o.detail,
			Action: "/" + s.Path + "/all/" + op, Button: o.button, Back: "/" + s.Path,
		})
	}
}

type periodicData struct {
	Jobs []periodicRow
}

type periodicRow struct {
	exq.PeriodicState
	Args string
}

func (h *handler) periodic(w http.ResponseWriter, r *http.Request) {
	ps, err := h.api.PeriodicJobs(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var d periodicData
	for _, p := range ps {
		d.Jobs = append(d.Jobs, periodicRow{PeriodicState: p, Args: truncate(h.argsText(p.Class, p.Args), 200)})
	}
	h.render(w, r, http.StatusOK, "periodic.html", "periodic", "Periodic jobs", d)
}

type periodicJobData struct {
	P       periodicRow
	History []exq.PeriodicRun
}

func (h *handler) periodicJob(w http.ResponseWriter, r *http.Request) {
	name := pathName(r, "name")
	p, err := h.api.PeriodicJob(r.Context(), name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	hist, err := h.api.PeriodicHistory(r.Context(), name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := periodicJobData{P: periodicRow{PeriodicState: p, Args: h.argsPretty(p.Class, p.Args)}, History: hist}
	h.render(w, r, http.StatusOK, "periodic_job.html", "periodic", "Periodic job "+name, d)
}

func (h *handler) confirmPeriodicDelete(w http.ResponseWriter, r *http.Request) {
	name := pathName(r, "name")
	if _, err := h.api.PeriodicJob(r.Context(), name); err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "confirm.html", "periodic", "Delete periodic job", confirmData{
		Question: "Delete periodic job “" + name + "”?",
		Detail:   "Its schedule and history are deleted; jobs it enqueued stay. A node that lists it in Options.Periodic creates it again when it starts.",
		Action:   "/periodic/" + pathSeg(name) + "/delete", Button: "Delete periodic job", Back: "/periodic",
	})
}

// hit is where a search found a job.
type hit struct {
	Where string // "Retries", "Queue mail", "Busy on node"
	Link  string // under the prefix; "" when the job has no page
	At    time.Time
	row
}

type searchData struct {
	JID  string
	Hits []hit
	// Stopped says where a search that reached searchLimit stopped ("" when it looked
	// everywhere), and Next is the query that goes on from there.
	Stopped, Next string
	Resumed       bool // this page went on from an earlier one
}

// searchLimit is how many stored members one search request reads at most: with a million
// retries a search by jid took one to two seconds, and any page on the web can send one.
const searchLimit = 20_000

// search looks for a jid (or a Ref) everywhere a job can be: the three sets, every queue,
// running; at most searchLimit members per request, then it offers to go on (?at=).
func (h *handler) search(w http.ResponseWriter, r *http.Request) {
	jid := strings.TrimSpace(r.URL.Query().Get("jid"))
	d := searchData{JID: jid}
	if jid == "" {
		h.render(w, r, http.StatusOK, "search.html", "", "Search", d)
		return
	}
	ctx := r.Context()
	loc, off := 0, 0
	if a, b, ok := strings.Cut(r.URL.Query().Get("at"), ":"); ok {
		loc, _ = strconv.Atoi(a)
		off, _ = strconv.Atoi(b)
		loc, off = max(loc, 0), max(off, 0)
		d.Resumed = loc > 0 || off > 0
	}
	qs, err := h.api.Queues(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	is := func(rec exq.JobRecord) bool {
		if exq.IsRef(jid) {
			ref, _, _ := strings.Cut(jid, "@")
			return rec.Ref() == ref
		}
		j, err := rec.Job()
		return err == nil && j.JID == jid
	}
	budget := searchLimit
	// Locations 0–2 are the sets, 3… the queues in name order.
	for ; loc < len(sets)+len(qs); loc, off = loc+1, 0 {
		for {
			if budget == 0 {
				where := ""
				if loc < len(sets) {
					where = sets[loc].Title
				} else {
					where = "the queue " + qs[loc-len(sets)]
				}
				d.Stopped = fmt.Sprintf("%s, after %s of its jobs", where, formatNum(off))
				d.Next = "?" + url.Values{"jid": {jid}, "at": {fmt.Sprintf("%d:%d", loc, off)}}.Encode()
				h.render(w, r, http.StatusOK, "search.html", "", "Search "+jid, d)
				return
			}
			n := min(scanChunk, budget)
			var recs []exq.JobRecord
			var err error
			if loc < len(sets) {
				recs, err = h.list(ctx, sets[loc].Set, off, n)
			} else {
				recs, err = h.api.Jobs(ctx, qs[loc-len(sets)], exq.ListOptions{Offset: off, Size: n})
			}
			if err != nil {
				h.fail(w, r, err)
				return
			}
			for _, rec := range recs {
				if !is(rec) {
					continue
				}
				if loc < len(sets) {
					s := sets[loc]
					d.Hits = append(d.Hits, hit{Where: s.Title, Link: "/" + s.Path + "/" + pathSeg(h.row(rec).ID), At: rec.At, row: h.row(rec)})
				} else {
					q := qs[loc-len(sets)]
					d.Hits = append(d.Hits, hit{Where: "Queue " + q, Link: "/queues/" + pathSeg(q) + "/jobs/" + pathSeg(h.row(rec).ID), row: h.row(rec)})
				}
			}
			budget -= len(recs)
			off += len(recs)
			if len(recs) < n {
				break
			}
		}
	}
	busy, err := h.api.BusyJobs(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, b := range busy {
		if is(b.JobRecord) {
			d.Hits = append(d.Hits, hit{Where: "Running on " + b.Node, Link: "/busy", At: b.RunAt, row: h.row(b.JobRecord)})
		}
	}
	h.render(w, r, http.StatusOK, "search.html", "", "Search "+jid, d)
}

// list reads members of a set in its listing order (soonest first; dead newest first).
func (h *handler) list(ctx context.Context, s exq.Set, off, size int) ([]exq.JobRecord, error) {
	o := exq.ListOptions{Offset: off, Size: size}
	switch s {
	case exq.DeadSet:
		return h.api.Dead(ctx, o)
	case exq.RetrySet:
		return h.api.Retries(ctx, o)
	}
	return h.api.Scheduled(ctx, o)
}
