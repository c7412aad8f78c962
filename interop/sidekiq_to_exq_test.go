package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

var sidekiqJID = regexp.MustCompile(`^[0-9a-f]{24}$`)

// Sidekiq's client pushes 500 jobs with varied args (push_bulk) and 20 scheduled ones (with
// perform_in); an exq node runs every one exactly once, with args equal
// to what Sidekiq wrote, byte for byte, and the scheduled ones not before they were due.
func TestSidekiqPushedJobsRunOnceOnExq(t *testing.T) {
	p := newPeer(t)
	runs := newRunLog(nil)
	e := p.startExq(exq.Options{
		Queues:  []exq.Queue{{Name: "default", Concurrency: 20}},
		Workers: map[string]exq.Worker{"GoRecord": runs},
	})

	// jid → args as Sidekiq's encoder wrote them.
	want := map[string]string{}
	out := p.ruby("", []string{"COUNT=500", "QUEUE=default", "CLASS=GoRecord"}, filepath.Join(p.dir, "push_varied.rb"))
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		jid, args, ok := strings.Cut(line, "\t")
		require.True(t, ok, "push_varied.rb line %q", line)
		want[jid] = args
	}
	require.Len(t, want, 500, "distinct jids pushed by push_varied.rb")

	const schedArgs = `["scheduled by Sidekiq",{"big":12345678901234567890,"ü":null,"list":[]},[]]`
	before := time.Now()
	out = p.ruby("", []string{"CLASS=GoRecord", "COUNT=20", "IN=2", "ARGS=" + schedArgs}, filepath.Join(p.dir, "perform_in.rb"))
	// perform_in computes "at" after the script started, so every job is due at before+2s or later.
	dueNotBefore := before.Add(2 * time.Second)
	scheduled := map[string]bool{}
	for _, jid := range strings.Fields(out) {
		scheduled[jid] = true
		want[jid] = schedArgs
	}
	require.Len(t, scheduled, 20, "jids printed by perform_in.rb")

	waitFor(t, "exq to run all 520 Sidekiq jobs", func() (bool, string) {
		n := len(runs.snapshot())
		return n >= len(want) && p.drained("default"), fmt.Sprintf("%d of %d jids ran; %s", n, len(want), p.keyState("default"))
	})
	// Stop first: a duplicate would have to come from a backup list, a queue or the sets, and
	// they are empty; Stop also writes the last counters.
	stopExq(t, e)

	got := runs.snapshot()
	once, byteEqual := 0, 0
	for jid, rs := range got {
		args, ok := want[jid]
		if !assert.True(t, ok, "exq ran jid %s that Sidekiq never pushed", jid) {
			continue
		}
		if !assert.Len(t, rs, 1, "runs of jid %s", jid) {
			continue
		}
		once++
		j := rs[0].job
		assert.Regexp(t, sidekiqJID, j.JID)
		assert.Equal(t, "GoRecord", j.Class)
		assert.Equal(t, "default", j.Queue)
		assert.Equal(t, 0, j.RetryCount)
		assert.Equal(t, 25, j.MaxRetries, `Sidekiq's "retry":true means the node's MaxRetries`)
		assert.False(t, j.CreatedAt.IsZero(), "created_at of %s", jid)
		same, err := sameJSON([]byte(args), j.Args)
		require.NoError(t, err)
		assert.True(t, same, "args of %s: exq got %s, Sidekiq wrote %s", jid, j.Args, args)
		if string(j.Args) == args {
			byteEqual++
		}
		if scheduled[jid] {
			assert.False(t, rs[0].at.Before(dueNotBefore), "scheduled job %s ran at %s, before it was due (%s)", jid, rs[0].at, dueNotBefore)
			// Sidekiq writes no enqueued_at into a scheduled job and its poller adds one when it
			// moves the job; exq's scheduler moves the raw string unchanged (WIRE.md §5), so
			// the job runs without one.
			assert.NotContains(t, fields(t, j.Raw()), "enqueued_at")
			assert.True(t, j.EnqueuedAt.IsZero())
		}
	}
	missing := 0
	for jid := range want {
		if _, ok := got[jid]; !ok {
			missing++
		}
	}
	assert.Zero(t, missing, "jids Sidekiq pushed that exq never ran")
	assert.Equal(t, len(want), once, "jids that ran exactly once")
	assert.Equal(t, len(want), byteEqual, "jobs whose args exq handed over byte for byte as Sidekiq wrote them")
	t.Logf("Sidekiq pushed %d jobs (500 with push_bulk, 20 scheduled); exq ran %d jids, %d exactly once, %d with byte-identical args, %d missing",
		len(want), len(got), once, byteEqual, missing)

	ctx := context.Background()
	assert.Equal(t, "520", p.rdb.Get(ctx, nsKey("stat:processed")).Val(), "stat:processed")
	assert.Zero(t, p.rdb.Exists(ctx, nsKey("stat:failed")).Val(), "stat:failed: nothing failed")
}

// flakyError is the failure of the test's workers; its class is what Sidekiq shows.
type flakyError struct{ msg string }

func (f *flakyError) Error() string      { return f.msg }
func (f *flakyError) ErrorClass() string { return "Interop::FlakyError" }

// A Sidekiq-pushed job with Sidekiq's extra fields (created_at, bid, tags) fails on exq: it lands
// in exq:retry with every field it had unchanged, byte for byte and in order, plus exq's failure
// fields, and Sidekiq's own API reads the entry. exq's scheduler moves it back and it runs again;
// a second job is moved back by Sidekiq's poller instead, which re-encodes it, and still keeps
// the fields. A job with "retry": false goes to exq:dead (exq's documented behaviour: Sidekiq
// would drop it). exq's retry_count is 1 after the first failure (Sidekiq writes 0).
func TestSidekiqJobRetriedByExqKeepsSidekiqFields(t *testing.T) {
	p := newPeer(t)
	ctx := context.Background()
	flaky := newRunLog(func(job *exq.Job) error {
		if job.RetryCount == 0 {
			return &flakyError{"first run fails on purpose: " + job.JID}
		}
		return nil
	})
	never := newRunLog(func(*exq.Job) error { return &flakyError{"always fails"} })
	workers := map[string]exq.Worker{"GoFlaky": flaky, "GoNeverRetried": never}

	push := func(items string) []string {
		t.Helper()
		return strings.Fields(p.ruby(items, nil, filepath.Join(p.dir, "push_items.rb")))
	}
	// The documents exactly as Sidekiq's client stored them, read before any node runs.
	pushed := func(jids ...string) map[string]string {
		t.Helper()
		docs := map[string]string{}
		l, err := p.rdb.LRange(ctx, nsKey("queue:default"), 0, -1).Result()
		require.NoError(t, err)
		for _, doc := range l {
			docs[jidOf(t, doc)] = doc
		}
		for _, jid := range jids {
			require.Contains(t, docs, jid, "job %s in %s", jid, nsKey("queue:default"))
		}
		return docs
	}

	jids := push(`[
		{"class":"GoFlaky","args":["first",{"n":1,"big":12345678901234567890}],"bid":"bid-0f3a9c2e71d4","tags":["interop","ünïcode ✓"],"retry":5},
		{"class":"GoNeverRetried","args":["never"],"retry":false,"bid":"bid-77aa01","tags":["no-retry"]}
	]`)
	require.Len(t, jids, 2)
	first, noRetry := jids[0], jids[1]
	orig := pushed(first, noRetry)
	for _, jid := range jids {
		f := fields(t, orig[jid])
		for _, k := range []string{"created_at", "enqueued_at", "bid", "tags", "jid", "retry"} {
			require.Contains(t, f, k, "Sidekiq's document %s", orig[jid])
		}
	}

	// Node A runs the jobs but schedules nothing, so failures wait in exq:retry until a
	// scheduler is started on purpose.
	a := p.startExq(exq.Options{
		Queues:           []exq.Queue{{Name: "default", Concurrency: 5}},
		Workers:          workers,
		DisableScheduler: true,
		Backoff:          func(int, *exq.Job) time.Duration { return time.Second },
	})
	waitFor(t, "the first failure in exq:retry and the no-retry job in exq:dead", func() (bool, string) {
		return p.rdb.ZCard(ctx, nsKey("retry")).Val() == 1 && p.rdb.ZCard(ctx, nsKey("dead")).Val() == 1, p.keyState("default")
	})
	require.Len(t, flaky.of(first), 1)
	assert.Equal(t, orig[first], flaky.of(first)[0].job.Raw(), "exq ran the document Sidekiq stored")

	retried := p.zmembers(nsKey("retry"))[0]
	retriedDoc := retried.Member.(string)
	checkRewrite(t, orig[first], retriedDoc, "Interop::FlakyError", "first run fails on purpose: "+first)
	rf := fields(t, retriedDoc)
	retriedAt, err := strconv.ParseFloat(string(rf["retried_at"]), 64)
	require.NoError(t, err)
	assert.InDelta(t, retriedAt+1, retried.Score, 0.01, "retry score = time of failure + Backoff (1 s)")

	deadDoc := p.zmembers(nsKey("dead"))[0].Member.(string)
	checkRewrite(t, orig[noRetry], deadDoc, "Interop::FlakyError", "always fails")
	assert.JSONEq(t, "false", string(fields(t, deadDoc)["retry"]), `"retry": false is kept`)
	assert.Len(t, never.of(noRetry), 1, `a "retry": false job runs once and goes to exq:dead (Sidekiq would drop it)`)

	// What Sidekiq's own API (the Web UI's RetrySet and DeadSet) reads from exq's entries.
	var sets map[string][]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(p.ruby("", nil, filepath.Join(p.dir, "read_sets.rb"))), &sets))
	require.Len(t, sets["retry"], 1, "Sidekiq::RetrySet")
	require.Len(t, sets["dead"], 1, "Sidekiq::DeadSet")
	require.Empty(t, sets["schedule"], "Sidekiq::ScheduledSet")
	checkSidekiqEntry(t, sets["retry"][0], orig[first], "GoFlaky", retried.Score)
	checkSidekiqEntry(t, sets["dead"][0], orig[noRetry], "GoNeverRetried", p.zmembers(nsKey("dead"))[0].Score)

	// exq's scheduler (node B: a scheduler and nothing else) moves the retry back, raw string
	// unchanged, and node A runs it again.
	b := p.startExq(exq.Options{Queues: []exq.Queue{}})
	waitFor(t, "the first job's second run on exq", func() (bool, string) {
		return len(flaky.of(first)) == 2 && p.drained("default"), p.keyState("default")
	})
	stopExq(t, b)
	second := flaky.of(first)[1].job
	assert.Equal(t, retriedDoc, second.Raw(), "exq's scheduler moves the retry entry unchanged")
	assert.Equal(t, 1, second.RetryCount)
	assert.Equal(t, 5, second.MaxRetries)
	assert.Equal(t, "Interop::FlakyError", second.ErrorClass)
	checkKept(t, orig[first], second.Raw(), "created_at", "bid", "tags", "args", "jid", "class", "queue", "retry", "enqueued_at")

	// A second job fails on exq; this time Sidekiq's poller moves it back (Client.push: parsed,
	// re-encoded, with a new enqueued_at) and exq runs it again.
	jids = push(`[{"class":"GoFlaky","args":["second",["nested",{"ok":true}]],"bid":"bid-5e6f7a8b","tags":["interop","moved by sidekiq"]}]`)
	require.Len(t, jids, 1)
	secondJob := jids[0]
	waitFor(t, "the second job in exq:retry", func() (bool, string) {
		return p.rdb.ZCard(ctx, nsKey("retry")).Val() == 1 && len(flaky.of(secondJob)) == 1, p.keyState("default")
	})
	orig2 := flaky.of(secondJob)[0].job.Raw()
	retried2 := p.zmembers(nsKey("retry"))[0].Member.(string)
	checkRewrite(t, orig2, retried2, "Interop::FlakyError", "first run fails on purpose: "+secondJob)

	sk := p.startSidekiq("QUEUE=interop-idle", "CONCURRENCY=1", "POLL_INTERVAL=1",
		"RECORD_FILE="+filepath.Join(t.TempDir(), "performed.jsonl"))
	waitFor(t, "Sidekiq's poller to move the retry back and exq to run it", func() (bool, string) {
		if sk.exited() {
			t.Fatalf("Sidekiq ended early:\n%s", tail(sk.logPath, 40))
		}
		return len(flaky.of(secondJob)) == 2 && p.drained("default"), p.keyState("default")
	})
	sk.stop()
	moved := flaky.of(secondJob)[1].job
	assert.Equal(t, 1, moved.RetryCount, "retry_count survives Sidekiq's re-encoding")
	assert.Equal(t, "Interop::FlakyError", moved.ErrorClass)
	checkKept(t, orig2, moved.Raw(), "created_at", "bid", "tags", "args", "jid", "class", "queue", "retry")
	checkKept(t, retried2, moved.Raw(), "retry_count", "error_class", "error_message", "failed_at", "retried_at")
	assert.True(t, moved.EnqueuedAt.After(flaky.of(secondJob)[0].job.EnqueuedAt), "Sidekiq's poller sets a new enqueued_at")

	stopExq(t, a)
	assert.Equal(t, "2", p.rdb.Get(ctx, nsKey("stat:processed")).Val(), "stat:processed: the two successful runs (exq counts successes)")
	assert.Equal(t, "3", p.rdb.Get(ctx, nsKey("stat:failed")).Val(), "stat:failed: two first runs and the no-retry job")
}

// checkRewrite checks exq's rewrite of a failed job: the original document with its closing
// brace replaced by exq's failure fields, so every field Sidekiq wrote keeps its bytes and its
// place; retry_count 1 (exq counts failures from 1, Sidekiq from 0).
func checkRewrite(t *testing.T, orig, rewritten, errClass, errMsg string) {
	t.Helper()
	assert.True(t, strings.HasPrefix(rewritten, strings.TrimSuffix(orig, "}")+","),
		"the rewrite must keep the original document as its prefix:\noriginal:  %s\nrewritten: %s", orig, rewritten)
	of, rf := fields(t, orig), fields(t, rewritten)
	for k, v := range of {
		assert.Equal(t, string(v), string(rf[k]), "field %q after exq's rewrite", k)
	}
	assert.Equal(t, "1", string(rf["retry_count"]), "exq's retry_count after the first failure (1-based; Sidekiq writes 0)")
	assert.Equal(t, strconv.Quote(errClass), string(rf["error_class"]))
	var msg string
	require.NoError(t, json.Unmarshal(rf["error_message"], &msg))
	assert.Equal(t, errMsg, msg)
	assert.Equal(t, string(rf["failed_at"]), string(rf["retried_at"]), "failed_at and retried_at are the time of the first failure")
	assert.Len(t, rf, len(of)+5, "exq adds exactly retry_count, error_message, error_class, failed_at and retried_at")
}

// checkKept checks that the listed fields of doc have the same value as in orig (equal as JSON:
// Sidekiq's re-encoding may rewrite a float's text, never its value).
func checkKept(t *testing.T, orig, doc string, keys ...string) {
	t.Helper()
	of, df := fields(t, orig), fields(t, doc)
	for _, k := range keys {
		if !assert.Contains(t, df, k, "field %q in %s", k, doc) {
			continue
		}
		same, err := sameJSON(of[k], df[k])
		require.NoError(t, err)
		assert.True(t, same, "field %q: %s, originally %s", k, df[k], of[k])
	}
}

// checkSidekiqEntry checks what Sidekiq's API (read_sets.rb) read from an entry exq wrote.
func checkSidekiqEntry(t *testing.T, e map[string]json.RawMessage, orig, class string, score float64) {
	t.Helper()
	of := fields(t, orig)
	str := func(k string) string {
		var s string
		if err := json.Unmarshal(e[k], &s); err != nil {
			t.Errorf("Sidekiq's %q is %s, not a string", k, e[k])
		}
		return s
	}
	assert.Equal(t, jidOf(t, orig), str("jid"))
	assert.Equal(t, class, str("class"))
	assert.Equal(t, class, str("display_class"))
	assert.Equal(t, "default", str("queue"))
	assert.Equal(t, "Interop::FlakyError", str("error_class"))
	assert.NotEmpty(t, str("error_message"))
	assert.Equal(t, "1", string(e["retry_count"]), "Sidekiq reads exq's retry_count as is")
	assert.Equal(t, "true", string(e["error"]), "SortedEntry#error?")
	for _, k := range []string{"args", "bid", "tags", "created_at"} {
		same, err := sameJSON(of[k], e[k])
		require.NoError(t, err)
		assert.True(t, same, "Sidekiq reads %q as %s, pushed as %s", k, e[k], of[k])
	}
	var at float64
	require.NoError(t, json.Unmarshal(e["at"], &at))
	assert.InDelta(t, score, at, 0.001, "SortedEntry#at is the score")
	if t.Failed() {
		view, _ := json.Marshal(e)
		t.Logf("Sidekiq's view of the entry: %s", view)
	}
}
