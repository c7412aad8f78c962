package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/wire"
)

// keyRuns is the Go side's RecordJob on an exq node: it records, by jid, every run's start and
// end and the key it ran under (args[0]), and the most runs of one key at once. hold makes a
// run wait until released; fail makes a run fail.
type keyRuns struct {
	mu      sync.Mutex
	runs    map[string][]keyRun // jid → its runs, in start order
	starts  map[string][]string // key → jids in start order
	running map[string]int
	most    map[string]int
	hold    func(args []any) bool
	fail    func(jid string, args []any) bool
	release chan struct{}
	once    sync.Once
}

type keyRun struct {
	key        string
	start, end time.Time
	ok         bool
}

func newKeyRuns() *keyRuns {
	return &keyRuns{runs: map[string][]keyRun{}, starts: map[string][]string{}, running: map[string]int{}, most: map[string]int{},
		release: make(chan struct{})}
}

func (l *keyRuns) Perform(ctx context.Context, job *exq.Job) error {
	var args []any
	if err := json.Unmarshal(job.Args, &args); err != nil || len(args) == 0 {
		return fmt.Errorf("RecordJob on exq: args %s: %v", job.Args, err)
	}
	key, _ := args[0].(string)
	l.mu.Lock()
	l.running[key]++
	l.most[key] = max(l.most[key], l.running[key])
	l.starts[key] = append(l.starts[key], job.JID)
	i := len(l.runs[job.JID])
	l.runs[job.JID] = append(l.runs[job.JID], keyRun{key: key, start: time.Now()})
	l.mu.Unlock()

	var err error
	switch {
	case l.hold != nil && l.hold(args):
		select {
		case <-l.release:
		case <-ctx.Done():
			err = ctx.Err()
		}
	default:
		time.Sleep(20 * time.Millisecond) // long enough that two runs of a key would overlap
	}
	if err == nil && l.fail != nil && l.fail(job.JID, args) {
		err = &flakyError{"RecordJob failed on purpose"}
	}

	l.mu.Lock()
	l.running[key]--
	l.runs[job.JID][i].end = time.Now()
	l.runs[job.JID][i].ok = err == nil
	l.mu.Unlock()
	return err
}

func (l *keyRuns) free() { l.once.Do(func() { close(l.release) }) }

// of returns the runs of jid.
func (l *keyRuns) of(jid string) []keyRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]keyRun(nil), l.runs[jid]...)
}

// succeeded counts the jids of jids with a successful run.
func (l *keyRuns) succeeded(jids []string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, jid := range jids {
		for _, r := range l.runs[jid] {
			if r.ok {
				n++
				break
			}
		}
	}
	return n
}

// mostOf returns the most runs of key at once.
func (l *keyRuns) mostOf(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.most[key]
}

// startsOf returns the jids of key's runs in start order.
func (l *keyRuns) startsOf(key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.starts[key]...)
}

// A real Sidekiq and an exq node serve the same queue. exq enqueues keyed RecordJob jobs (a
// class both sides run) and plain ones. Sidekiq, started first and alone, runs every plain job,
// the scheduled one included, and none of the keyed ones: they wait in exq's per-key lists and
// delayed set, which it never reads. Then the exq node (KeyPolicy{Sequence: true}) runs every
// keyed job exactly once (one fails once: its retry waits in exq's keyed delayed set, not in
// the shared retry set, and holds its key), per key in enqueue order, never two of a key at
// once, while Sidekiq, still fetching and polling, records none of them.
func TestSidekiqNeverRunsKeyedJobsAndExqRunsThemInKeyOrder(t *testing.T) {
	p := newPeer(t)
	ctx := context.Background()
	kk := wire.NewKeys(ns)
	record := filepath.Join(t.TempDir(), "performed.jsonl")
	require.NoError(t, os.WriteFile(record, nil, 0o644))

	// This node only enqueues: no queue, no scheduler.
	e := p.startExq(exq.Options{Queues: []exq.Queue{}, DisableScheduler: true})
	keys := []string{"tenant-a", "tenant-b", "tenant-c"}
	keyed := map[string][]string{} // key → jids in enqueue order
	keyOf := map[string]string{}   // keyed jid → key
	plain := map[string]bool{}
	for i := range 10 {
		for _, k := range keys {
			jid, err := e.Enqueue(ctx, "default", "RecordJob", []any{k, i}, exq.Key(k))
			require.NoError(t, err)
			keyed[k] = append(keyed[k], jid)
			keyOf[jid] = k
		}
		for j := range 2 {
			jid, err := e.Enqueue(ctx, "default", "RecordJob", []any{"plain", 2*i + j})
			require.NoError(t, err)
			plain[jid] = true
		}
	}
	// Keyed jobs due in a second wait in exq's delayed set, not in the shared schedule that
	// Sidekiq's poller moves. The plain scheduled job is due after them: once Sidekiq has run it,
	// its poller has polled while the keyed ones were due too.
	const later = "tenant-later"
	for i := range 5 {
		jid, err := e.EnqueueIn(ctx, "default", "RecordJob", time.Second, []any{later, i}, exq.Key(later))
		require.NoError(t, err)
		keyed[later] = append(keyed[later], jid)
		keyOf[jid] = later
	}
	scheduled, err := e.EnqueueIn(ctx, "default", "RecordJob", time.Second, []any{"plain", "scheduled"})
	require.NoError(t, err)
	plain[scheduled] = true
	require.Len(t, keyOf, 35)
	require.Len(t, plain, 21)

	// Where they wait: the queue's list and the schedule hold the plain jobs only.
	assert.Equal(t, int64(20), p.rdb.LLen(ctx, kk.Queue("default")).Val(), "the queue's list holds the plain jobs only")
	assert.Equal(t, int64(1), p.rdb.ZCard(ctx, kk.Schedule()).Val(), "the schedule holds the plain scheduled job only")
	for _, k := range keys {
		assert.Equal(t, int64(10), p.rdb.LLen(ctx, kk.KeyJobs("default", k)).Val(), "key %s's list", k)
	}
	assert.Equal(t, int64(5), p.rdb.ZCard(ctx, kk.KeyDelayed("default")).Val(), "the keyed delayed set")

	sk := p.startSidekiq("QUEUE=default", "CONCURRENCY=5", "POLL_INTERVAL=1", "RECORD_FILE="+record)
	sidekiqRan := func() map[string]int {
		t.Helper()
		recs, err := readRecords(record)
		require.NoError(t, err)
		seen := map[string]int{}
		for _, r := range recs {
			seen[r.JID]++
		}
		return seen
	}
	waitFor(t, "Sidekiq to run the 21 plain jobs", func() (bool, string) {
		if sk.exited() {
			t.Fatalf("Sidekiq ended early:\n%s", tail(sk.logPath, 40))
		}
		seen := sidekiqRan()
		n := 0
		for jid := range plain {
			if seen[jid] > 0 {
				n++
			}
		}
		return n == len(plain) && p.drained("default"), fmt.Sprintf("%d of %d plain jobs ran; %s", n, len(plain), p.keyState("default"))
	})
	for jid, n := range sidekiqRan() {
		assert.True(t, plain[jid], "Sidekiq ran jid %s (%d times), which is not a plain job (key %q)", jid, n, keyOf[jid])
	}
	for _, k := range keys {
		assert.Equal(t, int64(10), p.rdb.LLen(ctx, kk.KeyJobs("default", k)).Val(), "key %s's list after Sidekiq drained the queue", k)
	}
	assert.Equal(t, int64(5), p.rdb.ZCard(ctx, kk.KeyDelayed("default")).Val(), "the keyed delayed set after Sidekiq's poller ran")
	if t.Failed() {
		t.FailNow() // the exq node would wait for keyed jobs Sidekiq has run
	}

	// The exq node serves the queue beside Sidekiq, which keeps fetching. One keyed job fails its
	// first run: its retry waits in exq's keyed delayed set (never in the shared retry set, which
	// Sidekiq's poller moves into the queue's list) and holds its key's later jobs.
	runs := newKeyRuns()
	retried := keyed["tenant-b"][3]
	runs.fail = func(jid string, _ []any) bool { return jid == retried && len(runs.of(jid)) == 1 }
	p.startExq(exq.Options{
		Queues:  []exq.Queue{{Name: "default", Concurrency: 5, Keys: exq.KeyPolicy{Sequence: true}}},
		Workers: map[string]exq.Worker{"RecordJob": runs},
		Backoff: func(int, *exq.Job) time.Duration { return time.Second },
	})
	allKeyed := make([]string, 0, len(keyOf))
	for jid := range keyOf {
		allKeyed = append(allKeyed, jid)
	}
	sawDelayedRetry := false
	waitFor(t, "the exq node to run the 35 keyed jobs", func() (bool, string) {
		if sk.exited() {
			t.Fatalf("Sidekiq ended early:\n%s", tail(sk.logPath, 40))
		}
		if n := p.rdb.ZCard(ctx, kk.Retry()).Val(); n != 0 {
			t.Fatalf("%d jobs in the shared retry set, which Sidekiq's poller reads: %v", n, p.rdb.ZRange(ctx, kk.Retry(), 0, -1).Val())
		}
		if len(runs.of(retried)) == 1 && p.rdb.ZCard(ctx, kk.KeyDelayed("default")).Val() == 1 {
			sawDelayedRetry = true
		}
		n := runs.succeeded(allKeyed)
		waiting := p.rdb.ZCard(ctx, kk.KeyDelayed("default")).Val()
		for _, k := range append(keys, later) {
			waiting += p.rdb.LLen(ctx, kk.KeyJobs("default", k)).Val()
		}
		return n == len(allKeyed) && waiting == 0 && p.drained("default"),
			fmt.Sprintf("%d of %d keyed jobs ran; %d still waiting; %s", n, len(allKeyed), waiting, p.keyState("default"))
	})
	sk.stop()

	for jid, n := range sidekiqRan() {
		assert.True(t, plain[jid], "Sidekiq ran jid %s (%d times), which is not a plain job (key %q)", jid, n, keyOf[jid])
		assert.Equal(t, 1, n, "runs of plain job %s on Sidekiq", jid)
	}
	for jid := range plain {
		assert.Empty(t, runs.of(jid), "the exq node ran plain job %s, which Sidekiq had run", jid)
	}
	assert.True(t, sawDelayedRetry, "the failed keyed job's retry was seen waiting in the keyed delayed set")
	for k, jids := range keyed {
		var all []keyRun // the key's runs, in start order
		for _, jid := range jids {
			r := runs.of(jid)
			want := 1
			if jid == retried {
				want = 2 // failed, then succeeded
			}
			if assert.Len(t, r, want, "runs of keyed job %s (key %s) on exq", jid, k) {
				assert.True(t, r[want-1].ok, "keyed job %s's last run succeeded", jid)
			}
			for _, x := range r {
				assert.Equal(t, k, x.key)
			}
			all = append(all, r...)
		}
		assert.Equal(t, 1, runs.mostOf(k), "key %s ran two jobs at once", k)
		if k != later { // jobs due at the same time join their key in due-time order
			var order []string // the starts, a failed job's repeat folded
			for _, jid := range runs.startsOf(k) {
				if len(order) == 0 || order[len(order)-1] != jid {
					order = append(order, jid)
				}
			}
			assert.Equal(t, jids, order, "key %s's jobs ran out of enqueue order", k)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].start.Before(all[j].start) })
		for i := 1; i < len(all); i++ {
			assert.False(t, all[i].start.Before(all[i-1].end), "key %s: a run started at %s, before the one before it ended (%s)", k, all[i].start, all[i-1].end)
		}
	}
	t.Logf("Sidekiq ran the %d plain jobs, none of the keyed; exq ran the %d keyed jobs of %d keys, one at a time per key", len(plain), len(keyOf), len(keyed))
}

// morgueKey matches the checkbox of a dead job on Sidekiq Web's Dead page: its value is
// "<score>-<jid>".
var morgueKey = regexp.MustCompile(`name=["']key\[\]["'] value=["']([^"']+)["']`)

// A keyed job that dies is in the shared dead set, and Sidekiq Web lists it there. Its "Retry
// Now" (the real form post) pushes it onto the queue's own list; the exq node serving the queue
// moves it to the head of its key's list, where the key's sequence holds it behind the key's
// running job and ahead of the key's waiting ones. While the key's jobs wait, Sidekiq Web counts
// none of them as enqueued; its Busy page lists the running one.
func TestADeadKeyedJobRetriedInSidekiqWebRunsBeforeItsKeysNext(t *testing.T) {
	p := newPeer(t)
	ctx := context.Background()
	kk := wire.NewKeys(ns)
	const key = "tenant-a"
	runs := newKeyRuns()
	var mu sync.Mutex
	failed := map[string]bool{}
	runs.hold = func(args []any) bool { return len(args) > 1 && args[1] == "hold" }
	runs.fail = func(jid string, args []any) bool { // a "dies" job fails its first run only
		mu.Lock()
		defer mu.Unlock()
		if len(args) > 1 && args[1] == "dies" && !failed[jid] {
			failed[jid] = true
			return true
		}
		return false
	}
	e := p.startExq(exq.Options{
		Queues:  []exq.Queue{{Name: "default", Concurrency: 5, Keys: exq.KeyPolicy{Sequence: true}}},
		Workers: map[string]exq.Worker{"RecordJob": runs},
	})
	t.Cleanup(runs.free) // registered after the node, so it runs before the node's Stop
	web := p.startWebUI()

	enqueue := func(tag string, opts ...exq.EnqueueOption) string {
		t.Helper()
		jid, err := e.Enqueue(ctx, "default", "RecordJob", []any{key, tag}, append(opts, exq.Key(key))...)
		require.NoError(t, err)
		return jid
	}
	dead := enqueue("dies", exq.MaxRetries(0))
	waitFor(t, "the keyed job to die", func() (bool, string) {
		return p.rdb.ZCard(ctx, kk.Dead()).Val() == 1 && len(runs.of(dead)) == 1, p.keyState("default")
	})
	// The key is free again: its next job runs and holds it; two more wait behind it.
	held := enqueue("hold")
	waitFor(t, "the key's next job to start", func() (bool, string) {
		return len(runs.of(held)) == 1, p.keyState("default")
	})
	next1, next2 := enqueue("next-1"), enqueue("next-2")
	waiting := func() []string {
		t.Helper()
		docs, err := p.rdb.LRange(ctx, kk.KeyJobs("default", key), 0, -1).Result()
		require.NoError(t, err)
		jids := make([]string, len(docs))
		for i, d := range docs {
			jids[i] = jidOf(t, d)
		}
		return jids
	}
	require.Equal(t, []string{next1, next2}, waiting(), "the key's waiting jobs")

	// What Sidekiq Web sees: no enqueued job, the dead one in its Dead tab.
	web.waitStats("Sidekiq Web to count the dead keyed job and no enqueued one",
		sidekiqStats{Processed: 0, Failed: 1, Busy: 1, Processes: 1, Enqueued: 0, Scheduled: 0, Retries: 0, Dead: 1})
	waitFor(t, "the Busy page to list the key's running job", func() (bool, string) {
		busy, err := web.get("/busy")
		return err == nil && strings.Contains(busy, held), fmt.Sprint(err)
	})
	morgue := web.mustGet("/morgue")
	var entry string
	for _, m := range morgueKey.FindAllStringSubmatch(morgue, -1) {
		if len(m[1]) > len(dead) && m[1][len(m[1])-len(dead):] == dead {
			entry = m[1]
		}
	}
	require.NotEmpty(t, entry, "the Dead page lists the keyed job %s", dead)
	tokens := csrfToken.FindStringSubmatch(morgue)
	require.NotNil(t, tokens, "the Dead page's CSRF token")

	// "Retry Now" of that row.
	status, location := web.post("/morgue", url.Values{
		"authenticity_token": {tokens[1]},
		"key[]":              {entry},
		"retry":              {"Retry Now"},
	})
	assert.Equal(t, http.StatusFound, status)
	assert.Contains(t, location, "/morgue")

	waitFor(t, "the exq node to move the retried job to the head of its key's list", func() (bool, string) {
		if len(runs.of(dead)) > 1 {
			t.Fatalf("the retried job ran again while its key's job %s held the sequence; starts %v", held, runs.startsOf(key))
		}
		w := waiting()
		// (The held job is in the node's backup list: p.drained would not hold.)
		return len(w) == 3 && w[0] == dead && p.rdb.ZCard(ctx, kk.Dead()).Val() == 0 && p.rdb.LLen(ctx, kk.Queue("default")).Val() == 0,
			fmt.Sprintf("key list %v; %s", w, p.keyState("default"))
	})
	assert.Equal(t, []string{dead, next1, next2}, waiting(), "the retried job waits ahead of its key's next ones")
	assert.Len(t, runs.of(dead), 1, "the retried job did not run while its key's job held the sequence")
	head, err := p.rdb.LIndex(ctx, kk.KeyJobs("default", key), 0).Result()
	require.NoError(t, err)
	assert.JSONEq(t, `"`+key+`"`, string(fields(t, head)[wire.KeyField]), "the retried job keeps its key")
	t.Logf("the retried job at the head of its key's list: %s", head)
	s, err := web.stats()
	require.NoError(t, err)
	assert.Zero(t, s.Enqueued, "Sidekiq Web counts the routed job as enqueued")

	runs.free()
	waitFor(t, "the key's jobs to run", func() (bool, string) {
		return runs.succeeded([]string{dead, held, next1, next2}) == 4 && len(waiting()) == 0 && p.drained("default"),
			fmt.Sprintf("starts %v; %s", runs.startsOf(key), p.keyState("default"))
	})
	assert.Equal(t, []string{dead, held, dead, next1, next2}, runs.startsOf(key), "the key's runs, in start order")
	assert.Equal(t, 1, runs.mostOf(key), "the key ran two jobs at once")
	h, d := runs.of(held), runs.of(dead)
	require.Len(t, h, 1)
	require.Len(t, d, 2)
	assert.False(t, d[1].start.Before(h[0].end), "the retried job started before the key's running job ended")
}
