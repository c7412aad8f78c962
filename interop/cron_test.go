package interop_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// The periodic-job interop tests: exq's schedules against sidekiq-cron 1.8 (Debian's
// ruby-sidekiq-cron) on the same Redis and namespace: its poller (ruby/cron_poller.rb, a real
// Sidekiq server), its Web UI tab (ruby/cron_web.ru) and its reader (ruby/cron_read.rb,
// ruby/cron_create.rb, ruby/cron_ticks.rb).

// tickLayout is how a tick is named in cron_job:<name>:enqueued (sidekiq-cron's Time#iso8601).
const tickLayout = "2006-01-02T15:04:05Z"

// cronForm matches a form of Sidekiq Web's Cron tab: its action and the CSRF token it carries.
var cronForm = regexp.MustCompile(`<form action="([^"]+)" method="post">\s*<input type='hidden' name='authenticity_token' value='([^']+)'/>`)

// cronTickJID is the jid exq gives schedule name's job for the tick named member (periodic.go
// tickJID): the first 12 bytes of sha1(name "\x00" member), in hex. sidekiq-cron's jobs have a
// random jid, so the jid tells who enqueued a tick.
func cronTickJID(name, member string) string {
	sum := sha1.Sum([]byte(name + "\x00" + member))
	return hex.EncodeToString(sum[:12])
}

// cgiEscape is how the Cron tab writes a name into its paths: CGI.escape(name).gsub('+', '%20').
func cgiEscape(name string) string {
	return strings.ReplaceAll(url.QueryEscape(name), "+", "%20")
}

// cronKey is the key of schedule name's hash; suffix ":enqueued" or ":jid_history" for the
// others.
func cronKey(name, suffix string) string { return nsKey("cron_job:") + name + suffix }

// cronAPI is exq's admin API on the interop namespace, without a node.
func (p *peer) cronAPI() *exq.API {
	p.t.Helper()
	api, err := exq.NewAPI(context.Background(), exq.ClientOptions{RedisURL: p.url, Namespace: ns, NoNamespace: ns == ""})
	require.NoError(p.t, err)
	p.t.Cleanup(func() { _ = api.Close() })
	return api
}

// queuedJob is a job document in a queue list, as both sides write it.
type queuedJob struct {
	JID        string          `json:"jid"`
	Class      string          `json:"class"`
	Queue      string          `json:"queue"`
	Args       json.RawMessage `json:"args"`
	CreatedAt  float64         `json:"created_at"`
	EnqueuedAt float64         `json:"enqueued_at"`
}

// queued returns the jobs of a queue, oldest first.
func (p *peer) queued(queue string) []queuedJob {
	p.t.Helper()
	docs, err := p.rdb.LRange(context.Background(), nsKey("queue:")+queue, 0, -1).Result()
	require.NoError(p.t, err)
	out := make([]queuedJob, 0, len(docs))
	for i := len(docs) - 1; i >= 0; i-- { // LPUSH: the newest is first
		var j queuedJob
		require.NoError(p.t, json.Unmarshal([]byte(docs[i]), &j), docs[i])
		out = append(out, j)
	}
	return out
}

// cronNode starts an exq node that works only on queue "cron-other" (no test pushes there), so
// the jobs its periodic runner enqueues stay in their queues to be counted.
func cronNodeOptions(nodeID string) exq.Options {
	return exq.Options{
		NodeID:      nodeID,
		Queues:      []exq.Queue{{Name: "cron-other", Concurrency: 1}},
		Workers:     map[string]exq.Worker{"CronOther": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil })},
		PollTimeout: 20 * time.Millisecond,
	}
}

// A per-second schedule made by exq, with two exq nodes and a real Sidekiq server running
// sidekiq-cron's poller (every 1 s) on the namespace: every claimed tick is one job, and no
// second in the run is missed.
//
// Why the run is arranged as it is. sidekiq-cron can only win a tick exq does not: exq's
// runner claims tick T at T (+ a few ms), while sidekiq-cron's poller claims T no earlier
// than T+1 s (Fugit previous_time is the latest tick <= floor(now) - 1) and never right after
// an enqueue by anyone (its not_enqueued_after? rule: last_enqueue_time, written by every
// enqueue, must be in a second before the tick). So with an exq node up, sidekiq-cron never
// enqueues. And neither side catches up: exq enqueues only the latest tick when it starts,
// sidekiq-cron alone enqueues a per-second schedule at most every other second (its own
// enqueue blocks the next tick) and may poll past a tick (its waits are 0.5-1.5 s). A gapless
// run in which both sides enqueue therefore hands over exactly:
//
//  1. Only sidekiq-cron runs. The schedule (created disabled) is enabled from the start of a
//     second K to K+0.45 s, again every second, until a poll claims tick K-1 (it polls at
//     random times; a poll while disabled claims nothing).
//  2. The exq nodes start at once, well before K+1, so they claim tick K, and every tick after
//     it for the run (10 s, 30 s with -long); sidekiq-cron's polls claim nothing meanwhile.
//  3. The exq nodes stop after claiming some tick M. sidekiq-cron may claim M+1 (if it polls
//     in [M+2, M+3)); the schedule is disabled at M+2.9 s (or when it did), before it could
//     claim M+2 and leave M+1 as a hole.
//
// So sidekiq-cron enqueues the first tick and maybe the last, exq every other one.
func TestSidekiqCronAndExqEnqueueEachTickOnce(t *testing.T) {
	p := newPeer(t)
	p.needCron()
	ctx := context.Background()
	api := p.cronAPI()
	const name, class, queue = "tick", "CronTick", "cronq"
	run := 10 * time.Second
	if testutil.Long() {
		run = 30 * time.Second
	}

	require.NoError(t, api.AddPeriodic(ctx, exq.PeriodicJob{Name: name, Spec: "* * * * * *", Queue: queue, Class: class,
		Args: []any{"tick"}, Description: "interop: one job per second", Disabled: true}))
	zkey := cronKey(name, ":enqueued")
	created := map[string]bool{} // the ticks the creation marks as done (sidekiq-cron's save does the same)
	for _, z := range p.zmembers(zkey) {
		created[z.Member.(string)] = true
	}
	require.NotEmpty(t, created, "AddPeriodic marks the tick before now as enqueued")
	require.LessOrEqual(t, len(created), 2, "exq's tick before now and sidekiq-cron's")

	pollLog := filepath.Join(t.TempDir(), "polls.log")
	began := time.Now()
	poller := p.start("cron-poller", syscall.SIGTERM, p.dir,
		[]string{"CRON_POLL=1", "POLL_INTERVAL=1", "POLL_LOG=" + pollLog, "QUEUE=cron-poller-idle"},
		"ruby", filepath.Join(p.dir, "cron_poller.rb"))
	waitFor(t, "sidekiq-cron's first poll", func() (bool, string) {
		if poller.exited() {
			t.Fatalf("cron_poller.rb ended:\n%s", tail(poller.logPath, 40))
		}
		b, _ := os.ReadFile(pollLog)
		return strings.Contains(string(b), "\n"), "no poll yet"
	})
	t.Logf("sidekiq-cron's first poll %s after its start", time.Since(began).Round(time.Millisecond))

	claims := func() int64 { return p.rdb.ZCard(ctx, zkey).Val() - int64(len(created)) }
	// waitClaim polls the claim set until it grows or until.
	waitClaim := func(until time.Time) bool {
		for {
			if claims() > 0 {
				return true
			}
			if time.Now().After(until) {
				return false
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	// 1. sidekiq-cron claims the first tick, early in a second.
	var rubyClaim time.Time
	for attempt := 1; rubyClaim.IsZero(); attempt++ {
		if poller.exited() {
			t.Fatalf("cron_poller.rb ended:\n%s", tail(poller.logPath, 40))
		}
		if time.Since(began) > waitTimeout {
			t.Fatalf("sidekiq-cron claimed no tick in %d one-second windows", attempt)
		}
		k := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(k))
		require.NoError(t, api.EnablePeriodic(ctx, name))
		claimed := waitClaim(k.Add(450 * time.Millisecond))
		if !claimed {
			require.NoError(t, api.DisablePeriodic(ctx, name))
			// A poll that read the schedule just before it was disabled may still claim.
			if claimed = waitClaim(k.Add(600 * time.Millisecond)); claimed {
				require.NoError(t, api.EnablePeriodic(ctx, name))
			}
		}
		if !claimed {
			continue
		}
		at := time.Now()
		// The poll reads its clock (the tick it claims is the one before that second) before it
		// reads the schedule. A poll that read its clock in second K-1, while the schedule was
		// disabled, and the schedule just after the enable at K, claims K-2: exq, started at
		// K, would then enqueue K and leave K-1 to no one. Such a claim is set aside (its job
		// removed, its tick counted with the ones before the run) and the next window tried.
		want := k.Add(-time.Second).Format(tickLayout)
		if stale := p.staleClaim(zkey, want, created); stale != "" {
			require.NoError(t, api.DisablePeriodic(ctx, name))
			p.setClaimsAside(zkey, queue, created)
			t.Logf("window %d: a poll that read its clock before the enable claimed %s, not %s; set aside", attempt, stale, want)
			continue
		}
		rubyClaim = at
		t.Logf("sidekiq-cron claimed its first tick at %s into a second (window %d)",
			rubyClaim.Sub(rubyClaim.Truncate(time.Second)).Round(time.Millisecond), attempt)
	}

	// 2. The exq nodes, started together right away.
	type started struct {
		e   *exq.Exq
		err error
	}
	results := make(chan started, 2)
	for i := 1; i <= 2; i++ {
		o := cronNodeOptions(fmt.Sprintf("cron-node-%d", i))
		o.RedisURL, o.Namespace, o.NoNamespace, o.Logger = p.url, ns, ns == "", testLogger()
		go func() {
			e, err := exq.Start(ctx, o)
			results <- started{e, err}
		}()
	}
	var nodes []*exq.Exq
	for i := 0; i < 2; i++ {
		r := <-results
		if r.err == nil {
			nodes = append(nodes, r.e)
			t.Cleanup(func() { stopExq(t, r.e) }) // a no-op once stopped below
		}
		require.NoError(t, r.err)
	}
	t.Logf("both exq nodes started %s after sidekiq-cron's claim", time.Since(rubyClaim).Round(time.Millisecond))
	time.Sleep(run)
	if poller.exited() {
		t.Fatalf("cron_poller.rb ended during the run:\n%s", tail(poller.logPath, 40))
	}

	// 3. The exq nodes stop; sidekiq-cron may take the next tick, then the schedule is disabled.
	stopping := time.Now()
	errs := make(chan error, len(nodes))
	for _, e := range nodes {
		go func() {
			sctx, cancel := context.WithTimeout(ctx, waitTimeout)
			defer cancel()
			errs <- e.Stop(sctx)
		}()
	}
	for range nodes {
		require.NoError(t, <-errs)
	}
	t.Logf("both exq nodes stopped in %s", time.Since(stopping).Round(time.Millisecond))
	lastTick := func() time.Time {
		var last time.Time
		for _, z := range p.zmembers(zkey) {
			at, err := time.Parse(tickLayout, z.Member.(string))
			require.NoError(t, err)
			if !created[z.Member.(string)] && at.After(last) {
				last = at
			}
		}
		return last
	}
	m := lastTick()
	next := m.Add(time.Second).Format(tickLayout)
	for time.Now().Before(m.Add(2900 * time.Millisecond)) {
		if p.rdb.ZScore(ctx, zkey, next).Err() == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, api.DisablePeriodic(ctx, name))
	poller.stop() // TERM: Sidekiq ends its cron poller after the poll in progress
	ended := time.Now()

	// Every claimed tick of the run is one job of the queue.
	jobs := p.queued(queue)
	var ticks []time.Time
	for _, z := range p.zmembers(zkey) {
		member := z.Member.(string)
		if created[member] {
			continue
		}
		at, err := time.Parse(tickLayout, member)
		require.NoError(t, err)
		assert.Equal(t, float64(at.Unix()), z.Score, "the score of tick %s is its Unix time", member)
		ticks = append(ticks, at)
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Before(ticks[j]) })
	require.NotEmpty(t, ticks)
	require.Equal(t, len(ticks), len(jobs), "one job per claimed tick (ticks %v…%v)", ticks[0], ticks[len(ticks)-1])
	for _, at := range ticks {
		assert.False(t, at.Before(began.Truncate(time.Second).Add(-time.Second)) || at.After(ended),
			"tick %s is outside the run [%s, %s]", at, began, ended)
	}
	// No second missing between the first claimed tick and the last.
	var holes []string
	for i := 1; i < len(ticks); i++ {
		for at := ticks[i-1].Add(time.Second); at.Before(ticks[i]); at = at.Add(time.Second) {
			holes = append(holes, at.Format(tickLayout))
		}
	}
	assert.Empty(t, holes, "ticks missing between %s and %s", ticks[0].Format(tickLayout), ticks[len(ticks)-1].Format(tickLayout))

	// Who enqueued which tick: exq's jid is derived from the tick, sidekiq-cron's is random.
	byJID := map[string]time.Time{}
	for _, at := range ticks {
		byJID[cronTickJID(name, at.Format(tickLayout))] = at
	}
	exqTicks := map[time.Time]bool{}
	seen := map[string]bool{}
	var rubyJobs []queuedJob
	for _, j := range jobs {
		assert.Equal(t, class, j.Class)
		assert.Equal(t, queue, j.Queue)
		assert.JSONEq(t, `["tick"]`, string(j.Args))
		assert.False(t, seen[j.JID], "jid %s twice", j.JID)
		seen[j.JID] = true
		if at, ok := byJID[j.JID]; ok {
			exqTicks[at] = true
			continue
		}
		assert.Regexp(t, sidekiqJID, j.JID, "a job not enqueued by exq has a Sidekiq jid")
		rubyJobs = append(rubyJobs, j)
	}
	var rubyTicks []string
	for _, at := range ticks {
		if !exqTicks[at] {
			rubyTicks = append(rubyTicks, at.Format(tickLayout))
		}
	}
	assert.Equal(t, len(rubyTicks), len(rubyJobs), "sidekiq-cron's jobs are the ticks exq did not enqueue")
	t.Logf("%d ticks (%s … %s): exq %d, sidekiq-cron %d (ticks %v; enqueued at %v)", len(ticks), ticks[0].Format(tickLayout),
		ticks[len(ticks)-1].Format(tickLayout), len(exqTicks), len(rubyJobs), rubyTicks, enqueueTimes(rubyJobs))
	require.NotEmpty(t, rubyJobs, "sidekiq-cron enqueued no tick: the test shows nothing")
	assert.NotEmpty(t, exqTicks, "exq enqueued no tick")
	// By the arrangement above, sidekiq-cron's ticks are the first and possibly the last.
	assert.Equal(t, ticks[0].Format(tickLayout), rubyTicks[0], "sidekiq-cron claimed the first tick")
	for _, r := range rubyTicks[1:] {
		assert.Equal(t, ticks[len(ticks)-1].Format(tickLayout), r, "sidekiq-cron enqueued a tick while an exq node ran")
	}
	// The run lasted about as long as its ticks say.
	assert.GreaterOrEqual(t, len(ticks), int(run/time.Second), "ticks in a run of %s", run)
}

// newTicks returns the ticks of the enqueued set zkey that are not in created.
func (p *peer) newTicks(zkey string, created map[string]bool) []string {
	p.t.Helper()
	var out []string
	for _, z := range p.zmembers(zkey) {
		if m := z.Member.(string); !created[m] {
			out = append(out, m)
		}
	}
	return out
}

// staleClaim returns a tick of the enqueued set zkey, not in created, other than want; "" if
// there is none.
func (p *peer) staleClaim(zkey, want string, created map[string]bool) string {
	p.t.Helper()
	for _, m := range p.newTicks(zkey, created) {
		if m != want {
			return m
		}
	}
	return ""
}

// setClaimsAside counts every tick of zkey not in created with the ones before the run and
// empties queue of their jobs. Call it with the schedule disabled: it waits until queue holds a
// job per such tick (sidekiq-cron pushes the job just after it adds the tick), and the queue
// holds nothing else before the run.
func (p *peer) setClaimsAside(zkey, queue string, created map[string]bool) {
	p.t.Helper()
	fresh := p.newTicks(zkey, created)
	ctx := context.Background()
	qkey := nsKey("queue:") + queue
	waitFor(p.t, "sidekiq-cron's jobs of the ticks set aside", func() (bool, string) {
		n := p.rdb.LLen(ctx, qkey).Val()
		return n == int64(len(fresh)), fmt.Sprintf("%d jobs for ticks %v", n, fresh)
	})
	require.NoError(p.t, p.rdb.Del(ctx, qkey).Err())
	for _, m := range fresh {
		created[m] = true
	}
}

// enqueueTimes formats the enqueued_at of jobs, for the log.
func enqueueTimes(jobs []queuedJob) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, time.Unix(0, int64(j.EnqueuedAt*1e9)).UTC().Format("15:04:05.000"))
	}
	return out
}

// startCronWeb starts Sidekiq Web with sidekiq-cron's tab (ruby/cron_web.ru) on a free
// loopback port and waits until it answers.
func (p *peer) startCronWeb() *webUI { return p.startRack("cron-web", "cron_web.ru") }

// cronButton reads the Cron tab afresh (a token serves one post) and returns the path and the
// form of the button action ("disable", "enable", "enque", "delete") of schedule name.
func (w *webUI) cronButton(name, action string) (string, url.Values) {
	w.t.Helper()
	page := w.mustGet("/cron")
	want := "/cron/" + cgiEscape(name) + "/" + action
	for _, m := range cronForm.FindAllStringSubmatch(page, -1) {
		if strings.HasSuffix(m[1], want) {
			return m[1], url.Values{"authenticity_token": {m[2]}, action: {strings.ToUpper(action[:1]) + action[1:]}}
		}
	}
	w.t.Fatalf("the Cron tab has no %s form for %q (%s); forms: %v", action, name, want, cronForm.FindAllStringSubmatch(page, -1))
	return "", nil
}

// A schedule exq created shows on Sidekiq Web's Cron tab; its Disable button (the real form
// post, with the session's CSRF token) stops the exq node from enqueueing it, and its Enable
// button lets it enqueue again.
func TestExqScheduleShowsOnSidekiqWebCronTabAndItsDisableButtonStopsExq(t *testing.T) {
	p := newPeer(t)
	p.needCron()
	ctx := context.Background()
	// A name the Cron tab must escape in its paths (space, "+", UTF-8).
	const name, spec, queue = "exq web tick+1 é", "* * * * * *", "cronweb"
	o := cronNodeOptions("cron-web-node")
	o.Periodic = []exq.PeriodicJob{{Name: name, Spec: spec, Queue: queue, Class: "CronWeb", Args: []any{"w", 1},
		Description: "made by exq"}}
	e := p.startExq(o)
	api := e.API()
	web := p.startCronWeb()
	llen := func() int64 { return p.rdb.LLen(ctx, nsKey("queue:")+queue).Val() }
	status := func() string { return p.rdb.HGet(ctx, cronKey(name, ""), "status").Val() }

	page := web.mustGet("/cron")
	assert.Contains(t, page, "<b style=\"\">"+name+"</b>", "the schedule's name on the Cron tab")
	assert.Contains(t, page, "<b>"+strings.ReplaceAll(spec, " ", "&nbsp;")+"</b>", "its cron line")
	assert.Contains(t, page, `<td style="">enabled</td>`)

	waitFor(t, "the exq node to enqueue two ticks", func() (bool, string) {
		return llen() >= 2, p.keyState(queue)
	})

	// Disable.
	path, form := web.cronButton(name, "disable")
	code, location := web.post(path, form)
	disabledAt := time.Now()
	assert.Equal(t, http.StatusFound, code)
	assert.True(t, strings.HasSuffix(location, "/cron"), "redirect to %q", location)
	atDisable, ticksAtDisable := llen(), p.rdb.ZCard(ctx, cronKey(name, ":enqueued")).Val()
	assert.Equal(t, "disabled", status())
	st, err := api.PeriodicJob(ctx, name)
	require.NoError(t, err)
	assert.False(t, st.Enabled, "PeriodicJob after the Disable button")
	assert.Empty(t, st.Problem, "exq reads the hash sidekiq-cron saved")
	assert.Equal(t, queue, st.Queue)
	assert.Equal(t, "CronWeb", st.Class)
	assert.JSONEq(t, `["w",1]`, string(st.Args))
	assert.False(t, st.LastEnqueued.IsZero(), "last_enqueue_time as sidekiq-cron's save rewrote it (%q)",
		p.rdb.HGet(ctx, cronKey(name, ""), "last_enqueue_time").Val())
	assert.True(t, st.Next.IsZero(), "a disabled schedule has no next tick")
	page = web.mustGet("/cron")
	assert.Contains(t, page, `<td style="background: #ecc; color: #585454;">disabled</td>`, "the Cron tab shows it disabled")
	assert.Contains(t, page, "/cron/"+cgiEscape(name)+"/enable", "with its Enable button")

	// Three ticks pass (the node re-reads its schedules every second): nothing is enqueued.
	time.Sleep(3*time.Second - time.Since(disabledAt))
	assert.Equal(t, atDisable, llen(), "jobs enqueued after the Disable button")
	assert.Equal(t, ticksAtDisable, p.rdb.ZCard(ctx, cronKey(name, ":enqueued")).Val(), "ticks claimed after the Disable button")
	select {
	case <-e.Done():
		t.Fatal("the exq node stopped")
	default:
	}

	// Enable.
	path, form = web.cronButton(name, "enable")
	code, _ = web.post(path, form)
	enabledAt := time.Now()
	assert.Equal(t, http.StatusFound, code)
	assert.Equal(t, "enabled", status())
	st, err = api.PeriodicJob(ctx, name)
	require.NoError(t, err)
	assert.True(t, st.Enabled, "PeriodicJob after the Enable button")
	assert.False(t, st.Next.IsZero())
	waitFor(t, "the exq node to enqueue again", func() (bool, string) {
		return llen() >= atDisable+2, p.keyState(queue)
	})
	t.Logf("enqueueing again %s after the Enable button", time.Since(enabledAt).Round(time.Millisecond))
	jobs := p.queued(queue)
	for _, j := range jobs[atDisable:] {
		var tick time.Time
		for _, z := range p.zmembers(cronKey(name, ":enqueued")) {
			if cronTickJID(name, z.Member.(string)) == j.JID {
				tick, _ = time.Parse(tickLayout, z.Member.(string))
			}
		}
		require.False(t, tick.IsZero(), "job %s is no tick's of exq", j.JID)
		assert.Equal(t, "CronWeb", j.Class)
		assert.JSONEq(t, `["w",1]`, string(j.Args), "args after sidekiq-cron's saves")
		assert.True(t, tick.After(enabledAt.Add(-time.Second)), "tick %s enqueued after the Enable button, which came at %s", tick, enabledAt)
	}
}

// cronRead is one schedule as ruby/cron_read.rb prints what sidekiq-cron's Job.all read.
type cronRead struct {
	Name            string          `json:"name"`
	Cron            string          `json:"cron"`
	Klass           string          `json:"klass"`
	Queue           string          `json:"queue"`
	Args            json.RawMessage `json:"args"`
	Status          string          `json:"status"`
	Enabled         bool            `json:"enabled"`
	Valid           bool            `json:"valid"`
	Errors          []string        `json:"errors"`
	LastEnqueueTime *float64        `json:"last_enqueue_time"`
	Description     string          `json:"description"`
	PreviousTick    *int64          `json:"previous_tick"`
	JIDHistory      []struct {
		JID      string `json:"jid"`
		Enqueued string `json:"enqueued"`
	} `json:"jid_history"`
}

// fugitTick is one line of ruby/cron_ticks.rb.
type fugitTick struct {
	Cron     string  `json:"cron"`
	At       float64 `json:"at"`
	OK       bool    `json:"ok"`
	Error    string  `json:"error"`
	Previous int64   `json:"previous"`
	Next     int64   `json:"next"`
}

// fugitTicks asks fugit (ruby/cron_ticks.rb) for each spec's next tick after each of times.
func (p *peer) fugitTicks(specs []string, times ...time.Time) map[string][]fugitTick {
	p.t.Helper()
	var in []map[string]any
	for _, s := range specs {
		for _, at := range times {
			in = append(in, map[string]any{"cron": s, "at": float64(at.UnixNano()) / 1e9})
		}
	}
	b, err := json.Marshal(in)
	require.NoError(p.t, err)
	out := map[string][]fugitTick{}
	for _, line := range strings.Split(strings.TrimSpace(p.ruby(string(b), nil, filepath.Join(p.dir, "cron_ticks.rb"))), "\n") {
		var r fugitTick
		require.NoError(p.t, json.Unmarshal([]byte(line), &r), line)
		out[r.Cron] = append(out[r.Cron], r)
	}
	return out
}

// checkNextTicks checks that exq's next tick of every enabled schedule is fugit's.
func checkNextTicks(t *testing.T, p *peer, api *exq.API) {
	t.Helper()
	t0 := time.Now()
	states, err := api.PeriodicJobs(context.Background())
	require.NoError(t, err)
	t1 := time.Now()
	var specs []string
	asked := map[string]bool{}
	for _, s := range states {
		if !asked[s.Spec] {
			asked[s.Spec] = true
			specs = append(specs, s.Spec)
		}
	}
	fugit := p.fugitTicks(specs, t0, t1)
	for _, s := range states {
		f := fugit[s.Spec]
		require.Len(t, f, 2, "fugit's answers for %q", s.Spec)
		if !assert.True(t, f[0].OK, "fugit rejects %q (schedule %q): %s", s.Spec, s.Name, f[0].Error) || !s.Enabled {
			continue
		}
		// A tick may fall between the two instants PeriodicJobs' own clock reading lies in.
		next := s.Next.Unix()
		assert.True(t, next == f[0].Next || next == f[1].Next, "schedule %q (%q): exq's next tick %s, fugit's %s",
			s.Name, s.Spec, s.Next.UTC(), time.Unix(f[0].Next, 0).UTC())
	}
}

// What exq writes, sidekiq-cron reads (its Job.all, as its poller and Web tab do), and its
// parser computes the same next ticks; and what sidekiq-cron writes, exq reads and enqueues.
func TestSidekiqCronReadsWhatExqWrites(t *testing.T) {
	p := newPeer(t)
	p.needCron()
	ctx := context.Background()
	api := p.cronAPI()

	nested := map[string]any{"nested": map[string]any{"list": []any{1, 2.5, map[string]any{"x": nil, "t": true}},
		"quote": `"q" \ </script> &amp;`, "big": json.Number("12345678901234567890")}}
	schedules := []struct {
		p      exq.PeriodicJob
		stored string // the cron line in Redis
		args   string
	}{
		{exq.PeriodicJob{Name: "five fields", Spec: "*/5 * * * *", Queue: "cron-a", Class: "CronFive", Args: []any{1, "two", 3.5}},
			"*/5 * * * *", `[1,"two",3.5]`},
		{exq.PeriodicJob{Name: "six fields", Spec: "30 */2 * * * *", Queue: "cron-b", Class: "CronSix"},
			"30 */2 * * * *", `[]`},
		{exq.PeriodicJob{Name: "new york mornings", Spec: "0 9 * * 1-5", Timezone: "America/New_York", Queue: "cron-c",
			Class: "CronNY", Args: []any{"morning"}}, "0 9 * * 1-5 America/New_York", `["morning"]`},
		{exq.PeriodicJob{Name: "hourly", Spec: "@hourly", Class: "CronHourly"}, "@hourly", `[]`},
		{exq.PeriodicJob{Name: "every 30s", Spec: "@every 30s", Queue: "cron-d", Class: "CronEvery"}, "*/30 * * * * *", `[]`},
		{exq.PeriodicJob{Name: "ünïcode ✓ 日本", Spec: "15 3 * * *", Queue: "cron-e", Class: "Cron::Unicode",
			Args: []any{"héllo ✓ 日本 🚀", nested}, Description: `Descrïption ✓ with "quotes"`},
			"15 3 * * *", `["héllo ✓ 日本 🚀",{"nested":{"list":[1,2.5,{"x":null,"t":true}],"quote":"\"q\" \\ </script> &amp;","big":12345678901234567890}}]`},
		{exq.PeriodicJob{Name: "disabled one", Spec: "0 0 1 * *", Queue: "cron-f", Class: "CronOff", Disabled: true,
			Description: "off"}, "0 0 1 * *", `[]`},
	}
	for _, s := range schedules {
		require.NoError(t, api.AddPeriodic(ctx, s.p), s.p.Name)
	}
	jid, err := api.EnqueuePeriodicNow(ctx, "ünïcode ✓ 日本")
	require.NoError(t, err)

	// sidekiq-cron's Job.all reads every one (cron_read.rb exits 1 where its poller would fail).
	var read struct {
		Jobs  []cronRead `json:"jobs"`
		Count int        `json:"count"`
	}
	out := p.ruby("", nil, filepath.Join(p.dir, "cron_read.rb"))
	require.NoError(t, json.Unmarshal([]byte(out), &read), out)
	assert.Equal(t, len(schedules), read.Count)
	require.Len(t, read.Jobs, len(schedules), out)
	byName := map[string]cronRead{}
	for _, r := range read.Jobs {
		byName[r.Name] = r
	}
	for _, s := range schedules {
		r, ok := byName[s.p.Name]
		if !assert.True(t, ok, "sidekiq-cron does not list %q", s.p.Name) {
			continue
		}
		queue := s.p.Queue
		if queue == "" {
			queue = "default"
		}
		wantStatus := "enabled"
		if s.p.Disabled {
			wantStatus = "disabled"
		}
		assert.Equal(t, s.stored, r.Cron, "%q: cron", s.p.Name)
		assert.Equal(t, s.p.Class, r.Klass, "%q: klass", s.p.Name)
		assert.Equal(t, queue, r.Queue, "%q: queue", s.p.Name)
		same, err := sameJSON([]byte(s.args), r.Args)
		require.NoError(t, err)
		assert.True(t, same, "%q: args %s, want %s", s.p.Name, r.Args, s.args)
		assert.Equal(t, wantStatus, r.Status, "%q: status", s.p.Name)
		assert.Equal(t, !s.p.Disabled, r.Enabled, "%q: enabled?", s.p.Name)
		assert.True(t, r.Valid, "%q: valid? (errors %v)", s.p.Name, r.Errors)
		assert.Equal(t, s.p.Description, r.Description, "%q: description", s.p.Name)
		assert.NotNil(t, r.PreviousTick, "%q: sidekiq-cron computes its previous tick", s.p.Name)
	}
	now := byName["ünïcode ✓ 日本"]
	if assert.NotNil(t, now.LastEnqueueTime, "last_enqueue_time after EnqueuePeriodicNow") {
		assert.InDelta(t, float64(time.Now().Unix()), *now.LastEnqueueTime, 60)
	}
	if assert.Len(t, now.JIDHistory, 1, "jid_history after EnqueuePeriodicNow") {
		assert.Equal(t, jid, now.JIDHistory[0].JID)
	}
	assert.Nil(t, byName["hourly"].LastEnqueueTime, "never enqueued")

	// fugit's next tick is exq's, for every spec exq stored.
	checkNextTicks(t, p, api)

	// The other direction: schedules sidekiq-cron's Job#save wrote.
	created := []map[string]any{
		{"name": "ruby five", "cron": "*/5 * * * *", "class": "RubyFive", "queue": "rq", "args": []any{1, map[string]any{"k": "v"}}},
		{"name": "ruby paris", "cron": "0 4 * * * Europe/Paris", "class": "RubyParis", "queue": "rq", "description": "à Paris"},
		{"name": "ruby off", "cron": "0 3 * * *", "class": "RubyOff", "status": "disabled", "args": []any{"x"}},
		{"name": "ruby hash args", "cron": "0 5 * * *", "class": "RubyHash", "args": map[string]any{"a": 1}},
		{"name": "ruby tick", "cron": "* * * * * *", "class": "RubyTick", "queue": "rtick", "args": []any{"t", 2}},
	}
	b, err := json.Marshal(created)
	require.NoError(t, err)
	out = p.ruby(string(b), nil, filepath.Join(p.dir, "cron_create.rb"))
	saved := 0 // the stored hashes (Sidekiq's logger writes to standard output too)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "{") {
			saved++
		}
	}
	require.Equal(t, len(created), saved, out)
	want := map[string]struct {
		class, queue, args string
		enabled            bool
	}{
		"ruby five":      {"RubyFive", "rq", `[1,{"k":"v"}]`, true},
		"ruby paris":     {"RubyParis", "rq", `[]`, true},
		"ruby off":       {"RubyOff", "default", `["x"]`, false},
		"ruby hash args": {"RubyHash", "default", `[{"a":1}]`, true},
		"ruby tick":      {"RubyTick", "rtick", `["t",2]`, true},
	}
	states, err := api.PeriodicJobs(ctx)
	require.NoError(t, err)
	assert.Len(t, states, len(schedules)+len(created))
	for _, st := range states {
		w, ok := want[st.Name]
		if !ok {
			continue
		}
		delete(want, st.Name)
		assert.Equal(t, w.class, st.Class, "%q: class", st.Name)
		assert.Equal(t, w.queue, st.Queue, "%q: queue", st.Name)
		assert.JSONEq(t, w.args, string(st.Args), "%q: args", st.Name)
		assert.Equal(t, w.enabled, st.Enabled, "%q: enabled", st.Name)
		assert.Empty(t, st.Problem, "%q: exq reads it", st.Name)
		assert.Equal(t, w.enabled, !st.Next.IsZero(), "%q: next tick %s", st.Name, st.Next)
	}
	assert.Empty(t, want, "schedules sidekiq-cron saved that exq does not list")
	assert.Equal(t, "à Paris", stateOf(t, states, "ruby paris").Description)
	checkNextTicks(t, p, api)

	// An exq node (no sidekiq-cron poller anywhere) enqueues the per-second one sidekiq-cron
	// made, each tick once, with exq's tick jid.
	p.startExq(cronNodeOptions("cron-read-node"))
	waitFor(t, "the exq node to enqueue three ticks of sidekiq-cron's schedule", func() (bool, string) {
		return p.rdb.LLen(ctx, nsKey("queue:rtick")).Val() >= 3, p.keyState("rtick")
	})
	jobs := p.queued("rtick")
	ticks := map[string]string{}
	for _, z := range p.zmembers(cronKey("ruby tick", ":enqueued")) {
		ticks[cronTickJID("ruby tick", z.Member.(string))] = z.Member.(string)
	}
	var enqueued []string
	for _, j := range jobs {
		tick, ok := ticks[j.JID]
		assert.True(t, ok, "job %s has no tick's jid", j.JID)
		enqueued = append(enqueued, tick)
		assert.Equal(t, "RubyTick", j.Class)
		assert.Equal(t, "rtick", j.Queue)
		assert.JSONEq(t, `["t",2]`, string(j.Args))
	}
	for i := 1; i < len(enqueued); i++ {
		a, _ := time.Parse(tickLayout, enqueued[i-1])
		b, _ := time.Parse(tickLayout, enqueued[i])
		assert.Equal(t, time.Second, b.Sub(a), "consecutive ticks %v", enqueued)
	}
	st := stateOf(t, states, "ruby tick")
	hist, err := api.PeriodicHistory(ctx, st.Name)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(hist), 3, "the history exq wrote")
	// sidekiq-cron still reads it, with exq's enqueues in its history.
	out = p.ruby("", nil, filepath.Join(p.dir, "cron_read.rb"))
	require.NoError(t, json.Unmarshal([]byte(out), &read), out)
	for _, r := range read.Jobs {
		if r.Name == "ruby tick" {
			assert.NotNil(t, r.LastEnqueueTime)
			assert.GreaterOrEqual(t, len(r.JIDHistory), 3)
		}
	}
}

func stateOf(t *testing.T, states []exq.PeriodicState, name string) exq.PeriodicState {
	t.Helper()
	for _, s := range states {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no periodic job %q", name)
	return exq.PeriodicState{}
}
