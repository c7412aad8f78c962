package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

var (
	summaryCount = regexp.MustCompile(`id="txt(\w+)" class="count"(?: data-nwp)?>([^<]*)<`) // 6.4; 7.3 adds data-nwp
	csrfToken    = regexp.MustCompile(`name='authenticity_token' value='([^']+)'`)
	historyAttr  = regexp.MustCompile(`data-(processed|failed)="([^"]*)"`)             // 6.4
	historyChart = regexp.MustCompile(`(?s)<canvas id="history-chart">(.*?)</canvas>`) // 7.3
	quietLabel   = regexp.MustCompile(`<span class="label label-danger">quiet</span>`)
)

// blocker is a worker whose jobs run until released (or their context ends).
type blocker struct {
	started chan string
	release chan struct{}
	once    sync.Once
}

func newBlocker() *blocker {
	return &blocker{started: make(chan string, 16), release: make(chan struct{})}
}

func (b *blocker) Perform(ctx context.Context, job *exq.Job) error {
	// Its busy-list entry carries exq's own progress field, which Sidekiq's UI must ignore.
	if err := exq.SetProgress(ctx, 0.5, "held"); err != nil {
		return err
	}
	b.started <- job.JID
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *blocker) free() { b.once.Do(func() { close(b.release) }) }

// Sidekiq's Web UI, pointed at the Redis an exq node works on, shows the node's counters
// (processed = successful runs, failed = failed runs: exq's semantics), its process on the Busy
// page with the job it is running, and exq's retry, scheduled and dead entries.
func TestSidekiqWebUIShowsExqNode(t *testing.T) {
	p := newPeer(t)
	ctx := context.Background()
	block := newBlocker()
	e := p.startExq(exq.Options{
		Queues: []exq.Queue{{Name: "default", Concurrency: 10}},
		Workers: map[string]exq.Worker{
			"GoOK":    exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil }),
			"GoFail":  exq.WorkerFunc(func(context.Context, *exq.Job) error { return &flakyError{"GoFail failed on purpose"} }),
			"GoBlock": block,
		},
		Backoff: func(int, *exq.Job) time.Duration { return time.Hour }, // retries stay in the set
	})
	t.Cleanup(block.free) // registered after the node, so it runs before the node's Stop
	web := p.startWebUI()

	enqueue := func(class string, args []any, opts ...exq.EnqueueOption) string {
		t.Helper()
		jid, err := e.Enqueue(ctx, "default", class, args, opts...)
		require.NoError(t, err)
		return jid
	}
	for i := 0; i < 7; i++ {
		enqueue("GoOK", []any{i})
	}
	var retryJIDs, deadJIDs []string
	for i := 0; i < 3; i++ {
		retryJIDs = append(retryJIDs, enqueue("GoFail", []any{"retry", i}))
	}
	for i := 0; i < 2; i++ {
		deadJIDs = append(deadJIDs, enqueue("GoFail", []any{"dead", i}, exq.MaxRetries(0)))
	}
	scheduledJID, err := e.EnqueueIn(ctx, "default", "GoOK", time.Hour, []any{"later"})
	require.NoError(t, err)
	blockJID := enqueue("GoBlock", []any{"held", map[string]any{"until": "released"}})
	select {
	case jid := <-block.started:
		require.Equal(t, blockJID, jid)
	case <-time.After(waitTimeout):
		t.Fatalf("GoBlock did not start; %s", p.keyState("default"))
	}

	// Counters are written once a second, the node's hash (busy) every 5 s.
	want := sidekiqStats{Processed: 7, Failed: 5, Busy: 1, Processes: 1, Enqueued: 0, Scheduled: 1, Retries: 3, Dead: 2}
	web.waitStats("Sidekiq's /stats to show the exq node's counts", want)

	dashboard := web.mustGet("/")
	counts := map[string]string{}
	for _, m := range summaryCount.FindAllStringSubmatch(dashboard, -1) {
		counts[m[1]] = m[2]
	}
	assert.Equal(t, map[string]string{"Processed": "7", "Failed": "5", "Busy": "1", "Enqueued": "0", "Retries": "3", "Scheduled": "1", "Dead": "2"},
		counts, "the dashboard's summary")
	// The history graph reads the per-day keys: over the last 30 days they add up to the totals.
	history := dashboardHistory(t, dashboard)
	assert.Equal(t, map[string]int{"processed": 7, "failed": 5}, history, "the dashboard's history (stat:<kind>:<day> keys)")
	t.Logf("dashboard summary: %v; history: %v", counts, history)

	// The Busy page: the process, its Quiet form, and the running job (the workers hash, written
	// with the counters).
	waitFor(t, "GoBlock's busy-list entry to carry its progress", func() (bool, string) {
		jobs, err := e.API().BusyJobs(ctx)
		return err == nil && len(jobs) == 1 && jobs[0].Progress != nil, fmt.Sprint(jobs, err)
	})
	var busy string
	waitFor(t, "the Busy page to list GoBlock", func() (bool, string) {
		busy, err = web.get("/busy")
		return err == nil && strings.Contains(busy, blockJID), fmt.Sprint(err)
	})
	if i := strings.Index(busy, blockJID); i >= 0 {
		row := busy[max(strings.LastIndex(busy[:i], "<tr>"), 0):]
		row = row[:max(strings.Index(row, "</tr>"), 0)]
		t.Logf("Sidekiq %s /busy job row: %s", sidekiqVersion, strings.Join(strings.Fields(row), " "))
	}
	if sidekiqMajor >= 7 {
		// Sidekiq 7's Busy page shows a process' version when it differs from its own.
		v := regexp.MustCompile(`Version: </b>\s*(exq-go [^\s<]+)`).FindStringSubmatch(busy)
		if assert.NotNil(t, v, "the exq node's version on the Busy page") {
			t.Logf("Sidekiq %s /busy process version: %s", sidekiqVersion, v[1])
		}
	}
	assert.Contains(t, busy, `name="identity" value="`+e.NodeID()+`"`, "the process row of the exq node")
	assert.Contains(t, busy, "<td>"+e.NodeID()+"</td>", "the job row names the exq node as its process")
	assert.Contains(t, busy, "GoBlock")
	assert.Contains(t, busy, "&quot;until&quot;", "the running job's args")
	assert.NotRegexp(t, quietLabel, busy, "the node is not quiet")

	retries := web.mustGet("/retries")
	for _, jid := range retryJIDs {
		assert.Contains(t, retries, jid, "the Retries page lists exq's retry entry")
	}
	assert.Contains(t, retries, "Interop::FlakyError: GoFail failed on purpose")
	morgue := web.mustGet("/morgue")
	for _, jid := range deadJIDs {
		assert.Contains(t, morgue, jid, "the Dead page lists exq's dead entry")
	}
	scheduled := web.mustGet("/scheduled")
	assert.Contains(t, scheduled, scheduledJID, "the Scheduled page lists exq's scheduled job")
	assert.Contains(t, scheduled, "GoOK")

	// Released, the job is counted and the process is idle.
	block.free()
	want.Processed, want.Busy = 8, 0
	web.waitStats("the released job to be counted and the node idle", want)
	waitFor(t, "the Busy page to show no running job", func() (bool, string) {
		busy, err = web.get("/busy")
		return err == nil && !strings.Contains(busy, blockJID), fmt.Sprint(err)
	})

	// A stopped node leaves the processes set at once (its hash expires later, as Sidekiq's).
	stopExq(t, e)
	want.Processes = 0
	web.waitStats("the stopped node to leave the processes", want)
}

// Sidekiq's Web UI "Quiet" button (the real form post, with the session cookie and the CSRF
// token from the page) quiets an exq node: it reads TSTP at its next ping, reports quiet "true",
// and fetches nothing more. The "Stop" button (TERM) then closes the node's Done channel.
func TestSidekiqWebUIQuietAndStopExqNode(t *testing.T) {
	p := newPeer(t)
	ctx := context.Background()
	runs := newRunLog(nil)
	e := p.startExq(exq.Options{
		Queues:  []exq.Queue{{Name: "default", Concurrency: 5}},
		Workers: map[string]exq.Worker{"GoOK": runs},
	})
	web := p.startWebUI()
	nodeKey := nsKey("") + e.NodeID()

	// Control: the node fetches.
	before, err := e.Enqueue(ctx, "default", "GoOK", []any{"before quiet"})
	require.NoError(t, err)
	waitFor(t, "the node to run a job before it is quiet", func() (bool, string) {
		return len(runs.of(before)) == 1, p.keyState("default")
	})

	// The Busy page lists the node with its Quiet button; post that form.
	form := web.processForm(e.NodeID(), "quiet")
	status, location := web.post("/busy", form)
	assert.Equal(t, http.StatusFound, status)
	assert.True(t, strings.HasSuffix(location, "/busy"), "redirect to %q", location)

	waitFor(t, `the node hash to say quiet "true"`, func() (bool, string) {
		h := p.rdb.HGetAll(ctx, nodeKey).Val()
		var info struct {
			Quiet bool `json:"quiet"`
		}
		_ = json.Unmarshal([]byte(h["info"]), &info)
		return h["quiet"] == "true" && info.Quiet, fmt.Sprintf("quiet %q, info %s", h["quiet"], h["info"])
	})
	page := web.mustGet("/busy")
	assert.Regexp(t, quietLabel, page, "the Busy page shows the node quiet")

	// Quiet: a new job stays in its queue. "Never" is shown by two full pings of the node after
	// the enqueue: a fetching node picks a job up within its poll interval (100 ms), or at once
	// through the wake-up that Enqueue publishes.
	after, err := e.Enqueue(ctx, "default", "GoOK", []any{"after quiet"})
	require.NoError(t, err)
	beat := p.rdb.HGet(ctx, nodeKey, "beat").Val()
	for i := 0; i < 2; i++ {
		waitFor(t, "the node's next ping", func() (bool, string) {
			b := p.rdb.HGet(ctx, nodeKey, "beat").Val()
			return b != beat, "beat " + b
		})
		beat = p.rdb.HGet(ctx, nodeKey, "beat").Val()
	}
	assert.Empty(t, runs.of(after), "a quiet node ran a job")
	queued, err := p.rdb.LRange(ctx, nsKey("queue:default"), 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, queued, 1, "the job enqueued after quiet waits in its queue")
	assert.Equal(t, after, jidOf(t, queued[0]))
	s, err := web.stats()
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Enqueued, "Sidekiq's count of enqueued jobs")

	// The Stop button sends TERM: the node asks the application to stop it (Done).
	form = web.processForm(e.NodeID(), "stop")
	status, _ = web.post("/busy", form)
	assert.Equal(t, http.StatusFound, status)
	waitFor(t, "TERM to close the node's Done channel", func() (bool, string) {
		select {
		case <-e.Done():
			return true, ""
		default:
			return false, "Done still open; signals: " + fmt.Sprint(p.rdb.LRange(ctx, nodeKey+"-signals", 0, -1).Val())
		}
	})
	stopExq(t, e)
	assert.Equal(t, int64(1), p.rdb.LLen(ctx, nsKey("queue:default")).Val(), "the waiting job is still queued after Stop")
}

// processForm reads the Busy page and returns the form of the process identity with the button
// name ("quiet" or "stop") pressed: the page's CSRF token (valid for this client's session
// cookie), the identity, and the button.
func (w *webUI) processForm(identity, button string) url.Values {
	w.t.Helper()
	var page string
	waitFor(w.t, "the Busy page to list process "+identity, func() (bool, string) {
		var err error
		page, err = w.get("/busy")
		return err == nil && strings.Contains(page, `name="identity" value="`+identity+`"`), fmt.Sprint(err)
	})
	// The token of the process' own form: the last one before its identity field.
	i := strings.Index(page, `name="identity" value="`+identity+`"`)
	tokens := csrfToken.FindAllStringSubmatch(page[:i], -1)
	if len(tokens) == 0 {
		w.t.Fatal(errors.New("no authenticity_token on the Busy page before the process' form"))
	}
	if button == "quiet" {
		rest := page[i:]
		if end := strings.Index(rest, "</form>"); end >= 0 {
			rest = rest[:end]
		}
		require.Contains(w.t, rest, `name="quiet"`, "the process' form has a Quiet button")
	}
	return url.Values{
		"authenticity_token": {tokens[len(tokens)-1][1]},
		"identity":           {identity},
		button:               {"1"},
	}
}

// dashboardHistory adds up the dashboard's history graph per kind (processed, failed): Sidekiq
// 6.4 puts each kind's {"day": n} in a data- attribute, 7.3 both as [["day", n], …] in the JSON
// of its history-chart canvas.
func dashboardHistory(t *testing.T, dashboard string) map[string]int {
	t.Helper()
	history := map[string]int{}
	for _, m := range historyAttr.FindAllStringSubmatch(dashboard, -1) {
		var days map[string]int
		require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[2])), &days), m[2])
		for _, n := range days {
			history[m[1]] += n
		}
	}
	if m := historyChart.FindStringSubmatch(dashboard); m != nil {
		var chart struct {
			Processed, Failed [][2]any
		}
		require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &chart), m[1])
		for kind, days := range map[string][][2]any{"processed": chart.Processed, "failed": chart.Failed} {
			for _, d := range days {
				n, _ := d[1].(float64)
				history[kind] += int(n)
			}
		}
	}
	return history
}
