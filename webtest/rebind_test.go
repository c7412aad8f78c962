package webtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
	"github.com/exqgo/exq/web"
)

// DNS rebinding in a real browser: Chromium resolves rebind.attacker.example to 127.0.0.1 (as
// the attacker's DNS would after rebinding), so to the browser the dashboard is that site's
// own origin. The dashboard refuses the name; the same server by address still works.
func TestAPageOnAnotherHostNameIsRefused(t *testing.T) {
	ctx := browser(t, chromedp.Flag("host-resolver-rules", "MAP rebind.attacker.example 127.0.0.1"))
	rdb, ns := testutil.Redis(t)
	keys := wire.NewKeys(ns)
	bg := context.Background()
	if err := rdb.SAdd(bg, keys.Queues(), "secret-queue").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.LPush(bg, keys.Queue("secret-queue"), `{"class":"W","args":[],"queue":"secret-queue","jid":"j1"}`).Err(); err != nil {
		t.Fatal(err)
	}
	api, err := exq.NewAPI(bg, exq.ClientOptions{Redis: rdb, Namespace: ns, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(api, web.Options{Logger: quiet, RefreshInterval: time.Hour}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)

	body := func(addr string) string {
		t.Helper()
		run(t, ctx, "open "+addr, chromedp.Navigate(addr), chromedp.WaitReady(chromedp.CSS("body")))
		return text(t, ctx, "body")
	}
	if got := body("http://127.0.0.1:" + u.Port() + "/queues"); !strings.Contains(got, "secret-queue") {
		t.Fatalf("by address the queues page shows its queue; got %q", got)
	}
	got := body("http://rebind.attacker.example:" + u.Port() + "/queues")
	if strings.Contains(got, "secret-queue") || !strings.Contains(got, "does not serve that host name") {
		t.Fatalf("the rebinding name must be refused; the page shows %q", got)
	}
	// A form posted from the rebinding name changes nothing either.
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch("/queues/secret-queue/pause", {method: "POST"}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusMisdirectedRequest {
		t.Fatalf("the rebinding POST: status %d, %v; want 421", status, err)
	}
	if n, err := rdb.SCard(bg, keys.Paused()).Result(); err != nil || n != 0 {
		t.Fatalf("paused queues after the rebinding POST: %d, %v", n, err)
	}
}
