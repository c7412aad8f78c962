package interop_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

var (
	// The process row of the Busy page ends with the process' concurrency and busy cells and its
	// Quiet/Stop form.
	// concurrency and busy cells, then the Quiet/Stop form (7.3 adds class="num" to the cells
	// and wraps the numbers in <span data-nwp="0">)
	processBusy = regexp.MustCompile(`<td(?: class="num")?>(?:<span[^>]*>)?(\d+)(?:</span>)?</td>\s*` +
		`<td(?: class="num")?>(?:<span[^>]*>)?(\d+)(?:</span>)?</td>\s*<td>\s*<form method="POST">`)
	retryLink = regexp.MustCompile(`href="[^"]*retries/([^"]+)"`)
)

//go:noinline
func fleetPanic() { panic("fleet test panics on purpose") }

// busyView is what one render of the Busy page says about the node: the busy cell of its
// process row and how many of the given jids its table of running jobs lists.
func busyView(w *webUI, jids ...string) (busy, listed int, err error) {
	page, err := w.get("/busy")
	if err != nil {
		return 0, 0, err
	}
	m := processBusy.FindStringSubmatch(page)
	if m == nil {
		return 0, 0, fmt.Errorf("no process row on the Busy page")
	}
	busy, _ = strconv.Atoi(m[2])
	for _, j := range jids {
		if strings.Contains(page, j) {
			listed++
		}
	}
	return busy, listed, nil
}

// In a mixed fleet, Sidekiq's Web UI tells the exq node apart (its tag and the exq-go label),
// its process table agrees with its table of running jobs within a second of a change, the
// Quiet button shows within a second or two, and the retry page shows a panic's backtrace.
func TestSidekiqWebUIShowsExqNodeAsAFleetMember(t *testing.T) {
	p := newPeer(t)
	ctx := context.Background()
	block := newBlocker()
	e := p.startExq(exq.Options{
		Tag:    "fleet-go",
		Labels: []string{"blue"},
		Queues: []exq.Queue{{Name: "default", Concurrency: 5}},
		Workers: map[string]exq.Worker{
			"GoBlock": block,
			"GoPanic": exq.WorkerFunc(func(context.Context, *exq.Job) error { fleetPanic(); return nil }),
		},
		Backoff: func(int, *exq.Job) time.Duration { return time.Hour }, // retries stay in the set
	})
	t.Cleanup(block.free)
	web := p.startWebUI()

	// Tag and labels, as Sidekiq renders a Ruby process' -g tag and labels.
	var page string
	waitFor(t, "the Busy page to list the exq node", func() (bool, string) {
		var err error
		page, err = web.get("/busy")
		return err == nil && strings.Contains(page, `value="`+e.NodeID()+`"`), fmt.Sprint(err)
	})
	assert.Contains(t, page, `<span class="label label-success">fleet-go</span>`, "the node's tag")
	assert.Contains(t, page, `<span class="label label-info">exq-go</span>`, "the exq-go label")
	assert.Contains(t, page, `<span class="label label-info">blue</span>`, "the node's own label")

	// A panicking job asking for a backtrace (pushed raw: the field is Sidekiq's): the retry page
	// shows the panic's stack.
	require.NoError(t, p.rdb.SAdd(ctx, nsKey("queues"), "default").Err())
	panicJID := "fleetpanic0123456789abcd"
	require.NoError(t, p.rdb.LPush(ctx, nsKey("queue:default"),
		`{"retry":true,"queue":"default","class":"GoPanic","args":[],"jid":"`+panicJID+`","created_at":1796010415.6,"enqueued_at":1796010415.6,"backtrace":true}`).Err())
	var key string
	waitFor(t, "the Retries page to list the panicking job", func() (bool, string) {
		retries, err := web.get("/retries")
		for _, m := range retryLink.FindAllStringSubmatch(retries, -1) {
			if strings.HasSuffix(m[1], "-"+panicJID) {
				key = m[1]
			}
		}
		return key != "", fmt.Sprint(err, " ", p.keyState("default"))
	})
	detail := web.mustGet("/retries/" + key)
	assert.Contains(t, detail, "fleet test panics on purpose", "the error message")
	assert.Regexp(t, `fleet_test\.go:\d+:in `+"`"+`[^']*fleetPanic'`, html.UnescapeString(detail), "the backtrace's innermost frame")
	t.Logf("the retry page's backtrace section: %s", backtraceSection(detail))

	// Busy count and busy table, within a second of each change.
	jids := []string{}
	for i := 0; i < 2; i++ {
		jid, err := e.Enqueue(ctx, "default", "GoBlock", []any{"held", i})
		require.NoError(t, err)
		jids = append(jids, jid)
	}
	for range jids {
		select {
		case <-block.started:
		case <-time.After(waitTimeout):
			t.Fatalf("GoBlock did not start; %s", p.keyState("default"))
		}
	}
	started := time.Now()
	waitFor(t, "the process row to say busy 2 and the table to list both jobs", func() (bool, string) {
		busy, listed, err := busyView(web, jids...)
		return err == nil && busy == 2 && listed == 2, fmt.Sprintf("busy %d, listed %d, %v", busy, listed, err)
	})
	took := time.Since(started)
	t.Logf("busy 2 on the Busy page %s after the jobs started", took.Round(time.Millisecond))
	assert.Less(t, took, 2*time.Second, "the process row and the job table agree within a second (plus a page render)")
	s, err := web.stats()
	require.NoError(t, err)
	assert.EqualValues(t, 2, s.Busy, "the header's busy count (the processes' busy fields)")

	block.free()
	released := time.Now()
	waitFor(t, "busy 0 and no job listed", func() (bool, string) {
		busy, listed, err := busyView(web, jids...)
		return err == nil && busy == 0 && listed == 0, fmt.Sprintf("busy %d, listed %d, %v", busy, listed, err)
	})
	took = time.Since(released)
	t.Logf("busy 0 on the Busy page %s after the jobs were released", took.Round(time.Millisecond))
	assert.Less(t, took, 2*time.Second)

	// The Quiet button: the label within a second or two.
	form := web.processForm(e.NodeID(), "quiet")
	clicked := time.Now()
	status, _ := web.post("/busy", form)
	assert.Equal(t, http.StatusFound, status)
	waitFor(t, "the quiet label on the Busy page", func() (bool, string) {
		page, err := web.get("/busy")
		return err == nil && quietLabel.MatchString(page), fmt.Sprint(err)
	})
	took = time.Since(clicked)
	t.Logf("the quiet label %s after the click", took.Round(time.Millisecond))
	assert.Less(t, took, 2500*time.Millisecond, "the quiet label within a second or two of the click")
}

// backtraceSection cuts the Error Backtrace row out of a retry page, for the log.
func backtraceSection(page string) string {
	i := strings.LastIndex(page, "<code>")
	j := strings.LastIndex(page, "</code>")
	if i < 0 || j < i {
		return "(none)"
	}
	s := page[i:j]
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}
