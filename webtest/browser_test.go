package webtest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
	"github.com/exqgo/exq/web"
)

// TestMain stops the private redis-server and fails on leaked goroutines (the live node, the
// browser's connection).
func TestMain(m *testing.M) { testutil.MainLeak(m) }

// chromiumPath is Debian's chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

var screenshotsFlag = flag.String("screenshots", "", "also write the screenshots as PNG files into this folder "+
	"(../docs/screenshots refreshes the README's); $EXQ_SCREENSHOTS does the same")

// quiet discards the node's and the dashboard's logs.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// shots saves screenshots under a temporary folder that outlives the test (CI keeps it as an
// artifact), and into the -screenshots folder when one is given.
type shots struct {
	t     *testing.T
	dir   string
	extra string
}

func newShots(t *testing.T) *shots {
	dir, err := os.MkdirTemp("", "exq-web-screenshots-")
	if err != nil {
		t.Fatal(err)
	}
	s := &shots{t: t, dir: dir, extra: *screenshotsFlag}
	if s.extra == "" {
		s.extra = os.Getenv("EXQ_SCREENSHOTS")
	}
	fmt.Fprintf(os.Stderr, "webtest: screenshots in %s\n", dir)
	return s
}

func (s *shots) save(name string, png []byte) {
	s.t.Helper()
	for _, dir := range []string{s.dir, s.extra} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
}

// browser starts a headless Chromium of its own (fresh profile, no network but the test's)
// and returns a chromedp context for one tab. A missing chromium skips the test loudly, and
// fails it under CI=true.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		testutil.SkipMissing(t, "needs Debian's chromium at "+chromiumPath+" (apt-get install chromium)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	opts = append(opts, extra...)
	ctx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(func() {
		cancelTab()
		cancelTimeout()
		cancelAlloc()
	})
	return ctx
}

// run runs chromedp actions and fails the test on an error.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func screenshot(t *testing.T, ctx context.Context, s *shots, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	s.save(name, png)
}

// The XSS payloads, in a job's args: an inline script, and an attribute break-out into an
// image whose onerror runs.
const (
	xssScript = `<script>alert(1)</script>`
	xssImg    = `"><img src=x onerror=alert(1)>`
)

func TestDashboardInABrowser(t *testing.T) {
	ctx := browser(t)
	rdb, ns := testutil.Redis(t)
	keys := wire.NewKeys(ns)
	bg := context.Background()

	// A namespace with something on every page.
	now := time.Now()
	zadd := func(key string, at time.Time, raw string) {
		t.Helper()
		if err := rdb.ZAdd(bg, key, redis.Z{Score: float64(at.UnixMicro()) / 1e6, Member: raw}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	doc := func(m map[string]any) string { // as Ruby writes it: < and > not escaped
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(b.String())
	}
	failed := func(jid, class, queue string, args []any, msg string) map[string]any {
		return map[string]any{"class": class, "args": args, "queue": queue, "jid": jid, "retry": 25, "retry_count": 3,
			"enqueued_at": float64(now.Add(-2 * time.Hour).Unix()), "created_at": float64(now.Add(-2 * time.Hour).Unix()),
			"failed_at": float64(now.Add(-time.Hour).Unix()), "retried_at": float64(now.Add(-10 * time.Minute).Unix()),
			"error_class": "*net.OpError", "error_message": msg}
	}
	retryMe := failed("retry-me-0001", "MyApp.SendEmail", "default", []any{42, "welcome"}, "dial tcp 10.0.0.7:25: connect: connection refused")
	retryMe["error_backtrace"] = wire.CompressBacktrace([]string{
		"/app/mail/smtp.go:88:in `mail.(*Client).Send'", "/app/workers/send_email.go:31:in `workers.SendEmail'",
		"/go/pkg/mod/github.com/exqgo/exq/worker.go:120:in `exq.(*Exq).perform'"})
	zadd(keys.Retry(), now.Add(time.Hour), doc(retryMe))
	invoice := failed("b1946ac92492d2347c6235b4", "Billing::InvoiceWorker", "billing", []any{map[string]any{"invoice": 9001, "lines": []any{map[string]any{"sku": "A-1", "qty": 2}}}}, "undefined method `total' for nil:NilClass")
	invoice["error_class"] = "NoMethodError"
	invoice["error_backtrace"] = wire.CompressBacktrace([]string{
		"app/workers/invoice_worker.rb:14:in `perform'", "sidekiq/processor.rb:202:in `execute_job'", "sidekiq/processor.rb:170:in `block (2 levels) in process'"})
	invoice["bid"] = "batch-7Hq2" // a field exq does not know, shown all the same
	zadd(keys.Retry(), now.Add(3*time.Hour), doc(invoice))
	xss := failed("xss-0001", "MyApp.Evil", "default", []any{xssScript, xssImg}, xssImg)
	zadd(keys.Dead(), now.Add(-30*time.Minute), doc(xss))
	zadd(keys.Dead(), now.Add(-26*time.Hour), doc(failed("dead-0002", "MyApp.Resize", "images", []any{"img-7.png"}, "exq.Timeout: ran longer than 30s")))
	zadd(keys.Schedule(), now.Add(24*time.Hour), doc(map[string]any{"class": "MyApp.SendEmail", "args": []any{42, "tips"}, "queue": "mail", "jid": "sched-0001", "retry": 25, "enqueued_at": float64(now.Add(24 * time.Hour).Unix())}))
	for i := range 12 {
		raw := doc(map[string]any{"class": "MyApp.SendEmail", "args": []any{100 + i, "digest"}, "queue": "mail", "jid": fmt.Sprintf("mail-%04d", i),
			"retry": 25, "enqueued_at": float64(now.Add(time.Duration(-90+i) * time.Second).Unix())})
		rdb.SAdd(bg, keys.Queues(), "mail")
		rdb.LPush(bg, keys.Queue("mail"), raw)
	}
	var counters []any
	for d := range 30 {
		day := now.AddDate(0, 0, -d)
		counters = append(counters, keys.StatDay("processed", day), 4000+((d*7919)%2500), keys.StatDay("failed", day), 20+((d*31)%90))
	}
	counters = append(counters, keys.Stat("processed"), 123456, keys.Stat("failed"), 789)
	if err := rdb.MSet(bg, counters...).Err(); err != nil {
		t.Fatal(err)
	}

	// A live node that runs MyApp.SendEmail from default, and a long job to show on Busy.
	ran := make(chan string, 10)
	release := make(chan struct{})
	node, err := exq.Start(bg, exq.Options{Redis: rdb, Namespace: ns, Logger: quiet, PollTimeout: 20 * time.Millisecond, Tag: "billing-api",
		Queues: []exq.Queue{{Name: "default", Concurrency: 5}, {Name: "reports", Concurrency: 2, GlobalLimit: 3, Rate: exq.Rate{N: 100, Per: time.Minute}}},
		Workers: map[string]exq.Worker{
			"MyApp.SendEmail": exq.WorkerFunc(func(ctx context.Context, j *exq.Job) error { ran <- j.JID; return nil }),
			"MyApp.Ping":      exq.WorkerFunc(func(ctx context.Context, j *exq.Job) error { return nil }),
			"MyApp.Report": exq.WorkerFunc(func(ctx context.Context, j *exq.Job) error {
				select {
				case <-ctx.Done():
				case <-release:
				}
				return nil
			}),
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(release)
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		if err := node.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	api := node.API()
	if _, err := node.Enqueue(bg, "reports", "MyApp.Report", []any{"monthly", 2026}); err != nil {
		t.Fatal(err)
	}
	if err := api.AddPeriodic(bg, exq.PeriodicJob{Name: "nightly report", Spec: "30 2 * * *", Queue: "reports", Class: "MyApp.Report", Args: []any{"daily"},
		Description: "the report mailed to finance"}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.EnqueuePeriodicNow(bg, "nightly report"); err != nil {
		t.Fatal(err)
	}
	// Some runs in the last seconds, for the live graph: three bursts a second or more apart.
	done := int64(123456)
	for burst := range 3 {
		for i := range 8 * (burst + 1) {
			if _, err := node.Enqueue(bg, "default", "MyApp.Ping", []any{i}); err != nil {
				t.Fatal(err)
			}
			done++
		}
		testutil.WaitFor(t, "the pings are counted", func() bool {
			st, _ := api.Stats(bg)
			return st.Processed == done
		})
	}
	testutil.WaitFor(t, "two reports running", func() bool {
		b, _ := api.BusyJobs(bg)
		return len(b) == 2
	})

	// The dashboard, mounted as the README shows, under a prefix.
	const prefix = "/admin/exq"
	mux := http.NewServeMux()
	mux.Handle(prefix+"/", web.New(api, web.Options{Prefix: prefix, RefreshInterval: time.Second, Logger: quiet}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base := srv.URL + prefix
	s := newShots(t)

	// Every JavaScript dialog is a script that ran: record it, and close it so the page goes on.
	var mu sync.Mutex
	var dialogs []string
	opened := make(chan struct{}, 10)
	if err := chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			mu.Lock()
			dialogs = append(dialogs, d.Message)
			mu.Unlock()
			select {
			case opened <- struct{}{}:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range opened {
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	t.Cleanup(func() { close(opened) })

	// Dashboard: the seeded counters, and the script's refresh (which runs under the CSP).
	run(t, ctx, "open the dashboard", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`svg.chart`)))
	for stat, want := range map[string]string{"processed": "123,504", "failed": "789", "retries": "2", "dead": "2", "scheduled": "1", "enqueued": "12", "busy": "2", "processes": "1"} {
		if got := text(t, ctx, `[data-stat="`+stat+`"]`); got != want {
			t.Errorf("dashboard %s: %q, want %q", stat, got, want)
		}
	}
	run(t, ctx, "the script refreshes the dashboard", chromedp.WaitReady(chromedp.CSS(`body[data-refreshed]`)))
	screenshot(t, ctx, s, "dashboard")
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, s, "dashboard-dark")
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}

	// Retries: "Retry now" on one job; the live node runs it.
	run(t, ctx, "open retries", chromedp.Navigate(base+"/retries"), chromedp.WaitVisible(chromedp.CSS(`table.jobs`)))
	screenshot(t, ctx, s, "retries")
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`tr:has(a[href$="/retries/retry-me-0001"]) button[value="retry"]`))); err != nil {
		t.Fatalf("click Retry now: %v", err)
	}
	select {
	case jid := <-ran:
		if jid != "retry-me-0001" {
			t.Fatalf("ran %s", jid)
		}
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the retried job did not run on the live node")
	}
	if got := text(t, ctx, `.flash`); !strings.Contains(got, "1 job(s) moved") {
		t.Errorf("flash after Retry now: %q", got)
	}
	run(t, ctx, "the job page", chromedp.Navigate(base+"/retries/b1946ac92492d2347c6235b4"), chromedp.WaitVisible(chromedp.CSS(`table.fields`)))
	if got := text(t, ctx, `pre.trace`); !strings.Contains(got, "invoice_worker.rb:14") {
		t.Errorf("backtrace: %q", got)
	}
	screenshot(t, ctx, s, "job")

	// Queues: pause mail; Redis says so.
	run(t, ctx, "open queues", chromedp.Navigate(base+"/queues"), chromedp.WaitVisible(chromedp.CSS(`table.queues`)))
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form[action$="/queues/mail/pause"] button`))); err != nil {
		t.Fatalf("click Pause: %v", err)
	}
	if paused, _ := api.PausedQueues(bg); len(paused) != 1 || paused[0] != "mail" {
		t.Fatalf("paused queues after the click: %v", paused)
	}
	if got := text(t, ctx, `tr:has(a[href$="/queues/reports"])`); !strings.Contains(got, "2/3") || !strings.Contains(got, "100 per minute") {
		t.Errorf("the limited queue's row: %q", got)
	}
	screenshot(t, ctx, s, "queues")
	run(t, ctx, "open a queue", chromedp.Navigate(base+"/queues/mail"), chromedp.WaitVisible(chromedp.CSS(`table`)))
	screenshot(t, ctx, s, "queue")

	// Busy: quiet the node; it says so in Redis within a second or two.
	run(t, ctx, "open busy", chromedp.Navigate(base+"/busy"), chromedp.WaitVisible(chromedp.CSS(`table.procs`)))
	if got := text(t, ctx, `table.procs tbody`); !strings.Contains(got, "billing-api") || !strings.Contains(got, "exq (Go)") {
		t.Errorf("busy page: %q", got)
	}
	screenshot(t, ctx, s, "busy")
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`table.procs button[value="quiet"]`))); err != nil {
		t.Fatalf("click Quiet: %v", err)
	}
	testutil.WaitFor(t, "the node is quiet", func() bool {
		p, _ := api.Processes(bg)
		return len(p) == 1 && p[0].Quiet
	})

	// XSS: the payloads show as text, and nothing ran.
	run(t, ctx, "open dead", chromedp.Navigate(base+"/dead"), chromedp.WaitVisible(chromedp.CSS(`table.jobs`)))
	screenshot(t, ctx, s, "dead")
	if got := text(t, ctx, `tr:has(a[href$="/dead/xss-0001"]) code.args`); !strings.Contains(got, xssScript) || !strings.Contains(got, `<img src=x onerror=alert(1)>`) {
		t.Errorf("the payload is not shown as text: %q", got)
	}
	run(t, ctx, "open the XSS job", chromedp.Navigate(base+"/dead/xss-0001"), chromedp.WaitVisible(chromedp.CSS(`pre.args`)))
	if got := text(t, ctx, `pre.message`); got != xssImg {
		t.Errorf("error message shown as %q, want the text %q", got, xssImg)
	}
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main img, main script").length`))
	if err != nil || n != 0 {
		t.Errorf("elements made from job content: %d (%v)", n, err)
	}

	// The other pages.
	for name, path := range map[string]string{"scheduled": "/scheduled", "periodic": "/periodic", "periodic-job": "/periodic/nightly%20report"} {
		run(t, ctx, "open "+path, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
		screenshot(t, ctx, s, name)
	}
	run(t, ctx, "search", chromedp.Navigate(base+"/search?jid=sched-0001"), chromedp.WaitVisible(chromedp.CSS(`main table`)))
	screenshot(t, ctx, s, "search")
	if got := text(t, ctx, `main table`); !strings.Contains(got, "Scheduled") {
		t.Errorf("search for sched-0001: %q", got)
	}

	// Phone width.
	run(t, ctx, "phone width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`svg.chart`)))
	screenshot(t, ctx, s, "dashboard-phone")
	run(t, ctx, "phone width retries", chromedp.Navigate(base+"/retries"), chromedp.WaitVisible(chromedp.CSS(`table.jobs`)))
	screenshot(t, ctx, s, "retries-phone")

	// With JavaScript off every page still reads, and a button still works.
	run(t, ctx, "desktop width", chromedp.EmulateViewport(1280, 900))
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "dashboard without JavaScript", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`svg.chart polyline`)))
	if got := text(t, ctx, `[data-stat="scheduled"]`); got != "1" {
		t.Errorf("scheduled without JavaScript: %q", got)
	}
	run(t, ctx, "scheduled without JavaScript", chromedp.Navigate(base+"/scheduled"), chromedp.WaitVisible(chromedp.CSS(`table.jobs`)))
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`tr:has(a[href$="/scheduled/sched-0001"]) button[value="kill"]`))); err != nil {
		t.Fatalf("click Kill without JavaScript: %v", err)
	}
	if _, err := api.Find(bg, exq.DeadSet, "sched-0001"); err != nil {
		t.Errorf("Kill without JavaScript: %v", err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: false}); err != nil {
		t.Fatal(err)
	}

	// A POST without the token, from the page itself: refused, and nothing changed.
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch("`+prefix+`/queues/mail/resume", {method: "POST", body: new URLSearchParams({back: "`+prefix+`/queues"})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusForbidden {
		t.Errorf("POST without a token: status %d (%v), want 403", status, err)
	}
	if paused, _ := api.PausedQueues(bg); len(paused) != 1 {
		t.Errorf("a refused POST resumed the queue: %v", paused)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(dialogs) > 0 {
		t.Errorf("JavaScript dialogs opened, so job content ran as script: %q", dialogs)
	}
}
