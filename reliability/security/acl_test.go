package security_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// aclRules are the least an exq node needs, for a user limited to the "acl" namespace: its
// keys (~acl:*), its wake-up channel (&acl:*, which enqueue scripts PUBLISH to and idle nodes
// SUBSCRIBE to) and every command that is not dangerous. Nothing more was needed.
var aclRules = []any{"on", ">userpw", "resetkeys", "~acl:*", "resetchannels", "&acl:*", "+@all", "-@dangerous"}

// aclServer starts a redis-server with the user exquser, limited to aclRules, and returns it
// with a client of the default (unrestricted) user for checks.
func aclServer(t *testing.T) (*testutil.Server, *redis.Client) {
	t.Helper()
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	ctx, cancel := bounded()
	defer cancel()
	require.NoError(t, admin.Do(ctx, append([]any{"ACL", "SETUSER", "exquser"}, aclRules...)...).Err())
	return srv, admin
}

func aclURL(srv *testutil.Server) string { return "redis://exquser:userpw@" + srv.Addr() + "/0" }

// TestACLUserLimitedToTheNamespace runs a node as a Redis ACL user that may touch only keys and
// channels under "acl:" and no dangerous command, through every kind of work: enqueue, a
// failure retried by the scheduler, EnqueueIn, EnqueueAll, unique jobs, a runtime Subscribe,
// the admin API (Queues, Dead, Requeue, Processes, Stats), heartbeats with a rescue of a dead
// node's jobs, the stats counters, and Stop. Nothing may fail for want of a permission.
func TestACLUserLimitedToTheNamespace(t *testing.T) {
	srv, admin := aclServer(t)
	ctx, cancel := bounded()
	defer cancel()
	logs := &logBuffer{}
	r := newRuns()
	o := fast(exq.Options{
		RedisURL:  aclURL(srv),
		Namespace: "acl",
		Queues:    []exq.Queue{{Name: "default", Concurrency: 4}},
		Logger:    jsonLogger(logs),
		Workers: map[string]exq.Worker{
			"ACL.Ok": r.worker(nil),
			"ACL.FailOnce": r.worker(func(_ *exq.Job, attempt int) error {
				if attempt == 1 {
					return errors.New("first attempt fails on purpose")
				}
				return nil
			}),
		},
	})
	// Idle nodes must be woken by the enqueue scripts' PUBLISH on acl:wake (a SUBSCRIBE under
	// the user's channel rule): with this poll interval, a job that waits for a poll would time
	// the test out.
	o.PollTimeout = time.Minute
	e := startNode(t, o)

	// Enqueue, and a failure that the scheduler retries.
	jid, err := e.Enqueue(ctx, "default", "ACL.Ok", []any{1})
	require.NoError(t, err)
	testutil.WaitFor(t, "an enqueued job runs", func() bool { return r.succeeded(jid) })
	failOnce, err := e.Enqueue(ctx, "default", "ACL.FailOnce", []any{2})
	require.NoError(t, err)
	testutil.WaitFor(t, "a failed job is retried by the scheduler and succeeds", func() bool {
		return r.succeeded(failOnce) && r.attempts(failOnce) == 2
	})

	// EnqueueIn and EnqueueAll (immediate and scheduled jobs in one script).
	in, err := e.EnqueueIn(ctx, "default", "ACL.Ok", 50*time.Millisecond, []any{3})
	require.NoError(t, err)
	results, err := e.EnqueueAll(ctx, []exq.JobSpec{
		{Queue: "default", Class: "ACL.Ok", Args: []any{4}},
		{Queue: "default", Class: "ACL.Ok", Args: []any{5}, In: 50 * time.Millisecond},
		{Queue: "default", Class: "ACL.Ok", Args: []any{6}, Options: []exq.EnqueueOption{exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Minute})}},
	})
	require.NoError(t, err)
	for _, res := range results {
		require.NoError(t, res.Err)
	}
	testutil.WaitFor(t, "scheduled and batched jobs run", func() bool {
		return r.succeeded(in) && r.succeeded(results[0].JID) && r.succeeded(results[1].JID) && r.succeeded(results[2].JID)
	})

	// Unique jobs, on a queue the node subscribes to only later: the lock holds while the job
	// waits, and is released when it succeeds.
	unique, err := e.Enqueue(ctx, "held", "ACL.Ok", []any{"once"}, exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Minute}))
	require.NoError(t, err)
	holder, err := e.Enqueue(ctx, "held", "ACL.Ok", []any{"once"}, exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Minute}))
	require.ErrorIs(t, err, exq.ErrUniqueConflict)
	assert.Equal(t, unique, holder)
	require.NoError(t, e.Subscribe("held", 1))
	testutil.WaitFor(t, "the unique job runs", func() bool { return r.succeeded(unique) })
	testutil.WaitFor(t, "its lock is released", func() bool {
		_, err := e.Enqueue(ctx, "held", "ACL.Ok", []any{"once"}, exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Minute}))
		return err == nil
	})

	// The admin API, as the same user: a dead job is listed and requeued; processes and stats.
	api, err := exq.NewAPI(ctx, exq.ClientOptions{RedisURL: aclURL(srv), Namespace: "acl"})
	require.NoError(t, err)
	defer api.Close()
	dead, err := e.Enqueue(ctx, "default", "ACL.FailOnce", []any{"dies"}, exq.MaxRetries(0))
	require.NoError(t, err)
	var deadJobs []exq.JobRecord
	testutil.WaitFor(t, "the job is in the dead set", func() bool {
		deadJobs, err = api.Dead(ctx, exq.ListOptions{})
		require.NoError(t, err)
		return len(deadJobs) == 1
	})
	deadJob, err := deadJobs[0].Job()
	require.NoError(t, err)
	require.Equal(t, dead, deadJob.JID)
	n, err := api.Requeue(ctx, exq.DeadSet, []string{deadJobs[0].Raw})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	testutil.WaitFor(t, "the requeued dead job runs", func() bool { return r.succeeded(dead) })
	queues, err := api.Queues(ctx)
	require.NoError(t, err)
	assert.Subset(t, queues, []string{"default", "held"})
	procs, err := api.Processes(ctx)
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(procs, func(p exq.Process) bool { return p.Identity == e.NodeID() }), "the node is registered: %+v", procs)
	testutil.WaitFor(t, "the counters are written", func() bool {
		s, err := api.Stats(ctx)
		require.NoError(t, err)
		return s.Processed >= 8 && s.Failed >= 2
	})

	// Heartbeats: the node beats, and rescues the jobs of a node that stopped beating.
	beat, err := admin.ZScore(ctx, "acl:heartbeats", e.NodeID()).Result()
	require.NoError(t, err, "the node beats into acl:heartbeats")
	assert.NotZero(t, beat)
	orphan, err := exq.PrepareJob(time.Now(), exq.JobSpec{Queue: "default", Class: "ACL.Ok", Args: []any{"orphan"}})
	require.NoError(t, err)
	require.NoError(t, admin.LPush(ctx, "acl:queue:backup::ghost::default", orphan.Raw()).Err())
	require.NoError(t, admin.ZAdd(ctx, "acl:heartbeats", redis.Z{Score: 1, Member: "ghost"}).Err())
	testutil.WaitFor(t, "the dead node's job is rescued and runs", func() bool { return r.succeeded(orphan.JID) })

	require.NoError(t, stopNode(e))
	keys, err := admin.Keys(ctx, "*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		assert.True(t, strings.HasPrefix(k, "acl:"), "key %q outside the namespace", k)
	}

	// Nothing failed for want of a permission, anywhere.
	for _, m := range logs.lines(t) {
		line, _ := m["msg"].(string)
		errText, _ := m["error"].(string)
		assert.NotContains(t, strings.ToUpper(errText), "NOPERM", "%s", line)
		if m["level"] == "WARN" || m["level"] == "ERROR" {
			expected := strings.Contains(line, "moved to the dead set") || strings.Contains(line, "rescued the in-flight jobs")
			assert.True(t, expected, "unexpected log line: %v", m)
		}
	}
	assert.NotContains(t, strings.ToUpper(redisLog.String()), "NOPERM", "go-redis logged a permission error")
}

// TestACLNamespaceOutsideThePattern uses the same user with a namespace its key pattern does
// not cover: every call fails at once with Redis's NOPERM error, named in exq's error, instead
// of hanging or panicking.
func TestACLNamespaceOutsideThePattern(t *testing.T) {
	srv, _ := aclServer(t)
	ctx, cancel := bounded()
	defer cancel()
	o := exq.Options{RedisURL: aclURL(srv), Namespace: "other", RedisTimeout: 2 * time.Second, Logger: jsonLogger(&logBuffer{})}
	noperm := func(what string, err error) {
		t.Helper()
		if assert.Error(t, err, what) {
			assert.Contains(t, err.Error(), "NOPERM", what)
			t.Logf("%s: %v", what, err)
		}
	}
	within := func(what string, f func()) {
		t.Helper()
		begin := time.Now()
		f()
		assert.Less(t, time.Since(begin), 5*time.Second, "%s took too long", what)
	}

	within("Start", func() {
		_, err := exq.Start(ctx, o)
		noperm("Start", err)
	})
	within("enqueue", func() {
		c, err := exq.NewClient(ctx, o.ClientOptions()) // a PING needs no key: connecting works
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Enqueue(ctx, "default", "X", nil)
		noperm("Enqueue", err)
		_, err = c.EnqueueIn(ctx, "default", "X", time.Minute, nil)
		noperm("EnqueueIn", err)
		_, err = c.EnqueueAll(ctx, []exq.JobSpec{{Queue: "default", Class: "X"}})
		noperm("EnqueueAll", err)
	})
	within("admin API", func() {
		api, err := exq.NewAPI(ctx, o.ClientOptions())
		require.NoError(t, err)
		defer api.Close()
		_, err = api.Queues(ctx)
		noperm("API.Queues", err)
		_, err = api.Dead(ctx, exq.ListOptions{})
		noperm("API.Dead", err)
		_, err = api.Stats(ctx)
		noperm("API.Stats", err)
	})

	// Without heartbeats Start has nothing to write, so it succeeds; the node then logs the
	// permission error of its first fetch and stops promptly.
	logs := &logBuffer{}
	quiet := o
	quiet.DisableHeartbeat = true
	quiet.Logger = jsonLogger(logs)
	e, err := exq.Start(ctx, quiet)
	require.NoError(t, err)
	testutil.WaitFor(t, "the node logs NOPERM", func() bool { return strings.Contains(logs.String(), "NOPERM") })
	within("Stop", func() {
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		assert.NoError(t, e.Stop(stopCtx))
	})
}

// TestACLWithoutChannelPermission: a user with the key pattern but no channel permission may
// not PUBLISH the wake-up. Wake-ups are best effort, so enqueues still succeed and write the job
// exactly once, the node warns at Start, and it finds jobs by polling.
func TestACLWithoutChannelPermission(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	ctx, cancel := bounded()
	defer cancel()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "exquser", "on", ">userpw", "~acl:*", "resetchannels", "+@all", "-@dangerous").Err())

	c, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: aclURL(srv), Namespace: "acl"})
	require.NoError(t, err)
	defer c.Close()
	jid, err := c.Enqueue(ctx, "default", "X", nil)
	require.NoError(t, err, "the refused wake-up does not fail the enqueue")
	n, err := admin.LLen(ctx, "acl:queue:default").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "the job is written exactly once")

	logs := &logBuffer{}
	r := newRuns()
	startNode(t, fast(exq.Options{RedisURL: aclURL(srv), Namespace: "acl", Logger: jsonLogger(logs),
		Workers: map[string]exq.Worker{"X": r.worker(nil)}}))
	assert.True(t, logs.has(t, "cannot use the wake-up channel"), "Start warns about the channel")
	testutil.WaitFor(t, "the job runs by polling", func() bool { return r.succeeded(jid) })
	jid2, err := c.EnqueueAll(ctx, []exq.JobSpec{{Queue: "default", Class: "X"}})
	require.NoError(t, err)
	testutil.WaitFor(t, "a batch job runs by polling", func() bool { return r.succeeded(jid2[0].JID) })
}
