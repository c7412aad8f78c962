package webtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
	"github.com/exqgo/exq/web"
)

// evaluate runs a script in the page and returns its value, failing the test on an error.
func evaluate[T any](t *testing.T, ctx context.Context, what, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// overflowJS is how far the page is wider than the window: 0 when nothing makes it scroll
// sideways (a wide table scrolls inside its own box instead).
const overflowJS = `document.documentElement.scrollWidth - document.documentElement.clientWidth`

// visibleJS reports whether the element of a selector is shown with a size and on the page's
// width (not pushed off to the right).
func visibleJS(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false;
		const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 && r.left >= 0 && r.left < document.documentElement.clientWidth; })()`, sel)
}

// The pages of batches, workflows and metrics, with data on each, at a desktop's and a
// phone's width: nothing makes the page scroll sideways, the key parts show, the nav marks
// the page's own tab; and the dashboard's smaller visual fixes hold (the counters' rows, the
// workflow drawing's box, args on one line).
func TestFlowAndMetricsPagesInABrowser(t *testing.T) {
	ctx := browser(t)
	rdb, ns := testutil.Redis(t)
	keys := wire.NewKeys(ns)
	bg := context.Background()

	// A node that runs mail quickly, reports slowly, and fails imports; queue "later" is not
	// one of its queues, so the workflow's last step stays queued and its waiting child waits.
	node, err := exq.Start(bg, exq.Options{Redis: rdb, Namespace: ns, Logger: quiet, PollTimeout: 20 * time.Millisecond,
		Queues: []exq.Queue{{Name: "default", Concurrency: 5}},
		Workers: map[string]exq.Worker{
			"MyApp.SendEmail": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil }),
			"MyApp.Report": exq.WorkerFunc(func(context.Context, *exq.Job) error {
				time.Sleep(40 * time.Millisecond) // the job's own work: its time is what the metrics measure
				return nil
			}),
			"MyApp.Import": exq.WorkerFunc(func(context.Context, *exq.Job) error { return errors.New("the file is gone") }),
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		if err := node.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	api := node.API()
	for i := range 12 {
		if _, err := node.Enqueue(bg, "default", "MyApp.SendEmail", []any{i, "welcome"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := node.Enqueue(bg, "default", "MyApp.Report", []any{"monthly", i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := node.Enqueue(bg, "default", "MyApp.Import", []any{"users.csv"}, exq.MaxRetries(0)); err != nil {
		t.Fatal(err)
	}
	bid, _, err := node.NewBatch(bg, exq.BatchOptions{Description: "welcome mails of the day",
		OnSuccess: &exq.JobSpec{Queue: "default", Class: "MyApp.SendEmail", Args: []any{0, "batch done"}}},
		[]exq.JobSpec{{Queue: "default", Class: "MyApp.SendEmail", Args: []any{1, "a"}}, {Queue: "later", Class: "MyApp.SendEmail", Args: []any{2, "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := node.EnqueueWorkflow(bg, exq.WorkflowOptions{Description: "nightly import"}, []exq.WorkflowJob{
		{Name: "extract", Queue: "default", Class: "MyApp.Report", Args: []any{"extract"}},
		{Name: "transform", Queue: "default", Class: "MyApp.Report", Args: []any{"transform"}, DependsOn: []string{"extract"}},
		{Name: "load", Queue: "later", Class: "MyApp.Report", Args: []any{"load"}, DependsOn: []string{"transform"}},
		{Name: "notify", Queue: "default", Class: "MyApp.SendEmail", Args: []any{9, "done"}, DependsOn: []string{"load"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the runs are in the metrics", func() bool {
		m, _ := api.Metrics(bg, exq.MetricsOptions{})
		return m.Total == 3
	})
	testutil.WaitFor(t, "the workflow waits for load", func() bool {
		s, _ := api.Workflow(bg, wf.ID)
		return s.Succeeded == 2
	})
	// A retry whose args are short and whose error is long: the args must stay on one line.
	// (as `exq enqueue mail App.WelcomeEmail '[1,2]'` against a typed worker left it).
	retry := fmt.Sprintf(`{"class":"App.WelcomeEmail","args":[1,2],"queue":"mail","jid":"5f2b8c1e9a7d4e3f8a6b0c1d","retry":25,"retry_count":2,`+
		`"error_class":"*json.UnmarshalTypeError","error_message":%q,"failed_at":%d}`,
		"json: cannot unmarshal array into Go value of type main.WelcomeEmail", time.Now().Add(-time.Hour).Unix())
	if err := rdb.ZAdd(bg, keys.Retry(), redis.Z{Score: float64(time.Now().Add(time.Hour).Unix()), Member: retry}).Err(); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(http.StripPrefix("/admin/exq", web.New(api, web.Options{Prefix: "/admin/exq", Logger: quiet, RefreshInterval: time.Hour})))
	t.Cleanup(srv.Close)
	base := srv.URL + "/admin/exq"
	s := newShots(t)

	pages := []struct {
		name, path, tab string
		must            []string // selectors that must be visible
	}{
		{"metrics", "/metrics", "Metrics", []string{"table.metrics", `table.metrics a[href*="MyApp.Report"]`}},
		{"metrics-class", "/metrics?class=MyApp.Report&hours=2", "Metrics", []string{"svg.histogram", "svg.histogram rect", "table.metrics tr.on"}},
		{"batches", "/batches", "Batches", []string{"table.batches", `table.batches a[href$="/batches/` + bid + `"]`}},
		{"batch", "/batches/" + bid, "Batches", []string{"main h1"}},
		{"workflows", "/workflows", "Workflows", []string{"table.workflows", `table.workflows a[href$="/workflows/` + wf.ID + `"]`}},
		{"workflow", "/workflows/" + wf.ID, "Workflows", []string{"svg.workflow", "table.workflow-jobs"}},
		{"retries-short-args", "/retries", "Retries", []string{"table.jobs"}},
		{"dashboard-counters", "/", "Dashboard", []string{"ul.counters"}},
	}
	for _, width := range []int{1280, 390} {
		run(t, ctx, fmt.Sprint("width ", width), chromedp.EmulateViewport(int64(width), 900))
		for _, p := range pages {
			shot := fmt.Sprintf("%s-%d", p.name, width)
			run(t, ctx, "open "+p.path, chromedp.Navigate(base+p.path), chromedp.WaitVisible(chromedp.CSS(p.must[0])))
			if over := evaluate[int](t, ctx, "overflow", overflowJS); over > 0 {
				t.Errorf("%s: the page is %d px wider than the window", shot, over)
			}
			for _, sel := range p.must {
				if !evaluate[bool](t, ctx, "visible "+sel, visibleJS(sel)) {
					t.Errorf("%s: %s is not visible", shot, sel)
				}
			}
			if got := text(t, ctx, "header nav a.on"); got != p.tab {
				t.Errorf("%s: the nav marks %q, want %q", shot, got, p.tab)
			}
			screenshot(t, ctx, s, shot)
			switch p.name {
			case "dashboard-counters":
				// The eight counters in rows of equal length (8, 4+4 or 2+2+2+2), never 7+1.
				rows := evaluate[[]int](t, ctx, "counter rows", `(() => { const tops = new Map();
					for (const li of document.querySelectorAll("ul.counters li")) { const y = Math.round(li.getBoundingClientRect().top); tops.set(y, (tops.get(y) || 0) + 1); }
					return [...tops.values()]; })()`)
				for _, n := range rows {
					if n != rows[0] || 8%n != 0 {
						t.Errorf("%s: the counters wrap in rows of %v", shot, rows)
						break
					}
				}
				if width == 1280 && len(rows) > 2 {
					t.Errorf("%s: %d rows of counters at 1280 px, want 1 or 2", shot, len(rows))
				}
				// Every label of the graphs lies inside its graph: at 390 px the top value and the
				// last time were cut off at the edges.
				cut := evaluate[[]string](t, ctx, "graph labels", `(() => { const out = [];
					for (const svg of document.querySelectorAll("svg.chart")) { const box = svg.getBoundingClientRect();
						for (const tx of svg.querySelectorAll("text")) { const r = tx.getBoundingClientRect();
							if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) out.push(tx.textContent); } }
					return out; })()`)
				if len(cut) > 0 {
					t.Errorf("%s: graph labels cut at the graph's edge: %q", shot, cut)
				}
			case "workflow":
				// The drawing's box is as wide as the drawing (or the page, when the drawing is wider).
				gap := evaluate[float64](t, ctx, "drawing box", `(() => { const svg = document.querySelector("svg.workflow");
					return svg.parentElement.getBoundingClientRect().width - Math.min(svg.getBoundingClientRect().width, document.querySelector("main").clientWidth); })()`)
				if gap > 4 {
					t.Errorf("%s: the drawing's box is %.0f px wider than the drawing", shot, gap)
				}
			case "retries-short-args":
				lines := evaluate[int](t, ctx, "args lines", `(() => { const code = document.querySelector('tr:has(a[href$="/retries/5f2b8c1e9a7d4e3f8a6b0c1d"]) code.args');
					const r = document.createRange(); r.selectNodeContents(code);
					return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; })()`)
				if lines != 1 {
					t.Errorf("%s: the args [1,2] take %d lines", shot, lines)
				}
			}
		}
	}
}
