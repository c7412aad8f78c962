package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// aclDashboard is a dashboard on a private ACL server, logged in as user.
func aclDashboard(t *testing.T, srv *testutil.ACLServer, ns, user string, o Options) (*exq.API, *fixture) {
	t.Helper()
	api, err := exq.NewAPI(context.Background(), exq.ClientOptions{RedisURL: srv.UserURL(user), Namespace: ns, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { _ = api.Close() })
	o.Logger, o.AllowedHosts = quiet, []string{"example.com"}
	return api, &fixture{t: t, rdb: srv.Admin, ns: ns, keys: wire.NewKeys(ns), api: api, h: New(api, o)}
}

// Under an ACL without channel permissions (Redis 7's default), wake-ups fail, and nothing
// else may: a periodic job enqueued now is pushed once and reported done, a queue resumed is
// resumed and reported done, by the API and by the dashboard.
func TestWakeUpsWithoutChannelPermissionNeverTurnADoneWriteIntoAnError(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t)
	srv := testutil.StartACLServer(t, ns)
	api, f := aclDashboard(t, srv, ns, "nochannels", Options{})
	ctx := context.Background()
	keys := wire.NewKeys(ns)
	// The user may not publish: the premise of the test.
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "nochannels", Password: "pw-nochannels"})
	defer c.Close()
	require.ErrorContains(t, c.Publish(ctx, keys.Wake(), "x").Err(), "NOPERM")

	require.NoError(t, api.AddPeriodic(ctx, exq.PeriodicJob{Name: "nightly", Spec: "0 2 * * *", Queue: "reports", Class: "Report"}))
	_, err := api.EnqueuePeriodicNow(ctx, "nightly")
	require.NoError(t, err, "the job was pushed: the missing wake-up is no failure")
	assert.EqualValues(t, 1, srv.Admin.LLen(ctx, keys.Queue("reports")).Val())

	require.NoError(t, api.PauseQueue(ctx, "reports"))
	require.NoError(t, api.ResumeQueue(ctx, "reports"))
	assert.Empty(t, srv.Admin.SMembers(ctx, keys.Paused()).Val())

	// The missing permission is said once per API, naming the grant.
	var logs strings.Builder
	logged, err := exq.NewAPI(ctx, exq.ClientOptions{RedisURL: srv.UserURL("nochannels"), Namespace: ns, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer logged.Close()
	for range 3 {
		require.NoError(t, logged.PauseQueue(ctx, "reports"))
		require.NoError(t, logged.ResumeQueue(ctx, "reports"))
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "cannot publish on the wake-up channel"), logs.String())
	assert.Contains(t, logs.String(), "ACL &"+keys.Wake())

	require.NoError(t, api.PauseQueue(ctx, "reports"))
	code, loc := f.post("/queues/reports/resume", nil)
	assert.Equal(t, http.StatusSeeOther, code)
	assert.Contains(t, loc, "done=resumed")
	assert.Empty(t, srv.Admin.SMembers(ctx, keys.Paused()).Val())
	code, loc = f.post("/periodic/nightly/enqueue", nil)
	assert.Equal(t, http.StatusSeeOther, code)
	assert.Contains(t, loc, "done=enqueued")
	assert.EqualValues(t, 2, srv.Admin.LLen(ctx, keys.Queue("reports")).Val(), "pushed once per enqueue")
}

// Listing processes, busy jobs, the overview, batches and workflows only reads: a read-only
// Redis user sees every page, a stale process (one that died without signing off) stays listed
// in Redis for the nodes to prune, and so do the ids of a batch and a workflow whose data
// expired; none is shown, and the server runs no write (MONITOR).
func TestReadsNeverWriteAndWorkForAReadOnlyUser(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t)
	srv := testutil.StartACLServer(t, ns)
	ctx := context.Background()
	keys := wire.NewKeys(ns)
	admin := srv.Admin
	now := float64(time.Now().UnixMicro()) / 1e6
	live, stale := "live-host:1:aaaa", "dead-host:2:bbbb"
	info := func(id string) string {
		return fmt.Sprintf(`{"hostname":"h","started_at":%f,"pid":1,"tag":"","concurrency":5,"queues":["default"],"labels":["exq-go"],"identity":%q,"busy":1,"quiet":false}`, now, id)
	}
	require.NoError(t, admin.HSet(ctx, keys.Node(live), "info", info(live), "busy", "1", "beat", fmt.Sprint(now), "quiet", "false").Err())
	require.NoError(t, admin.HSet(ctx, keys.Workers(live), "t1", fmt.Sprintf(`{"queue":"default","payload":%q,"run_at":%f}`, `{"class":"W","args":[],"queue":"default","jid":"running-1"}`, now)).Err())
	require.NoError(t, admin.HSet(ctx, keys.Workers(stale), "t1", fmt.Sprintf(`{"queue":"default","payload":%q,"run_at":%f}`, `{"class":"W","args":[],"queue":"default","jid":"ghost-1"}`, now)).Err())
	require.NoError(t, admin.SAdd(ctx, keys.Processes(), live, stale).Err())
	require.NoError(t, admin.SAdd(ctx, keys.Queues(), "default").Err())
	require.NoError(t, admin.LPush(ctx, keys.Queue("default"), `{"class":"W","args":[],"queue":"default","jid":"waiting-1"}`).Err())

	cl, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: srv.URL(), Namespace: ns, Logger: quiet})
	require.NoError(t, err)
	bid, _, err := cl.NewBatch(ctx, exq.BatchOptions{}, []exq.JobSpec{{Queue: "default", Class: "W"}})
	require.NoError(t, err)
	gone, _, err := cl.NewBatch(ctx, exq.BatchOptions{Description: "expired"}, []exq.JobSpec{{Queue: "default", Class: "W"}})
	require.NoError(t, err)
	wf, err := cl.EnqueueWorkflow(ctx, exq.WorkflowOptions{}, []exq.WorkflowJob{{Name: "a", Queue: "default", Class: "W"}})
	require.NoError(t, err)
	wfGone, err := cl.EnqueueWorkflow(ctx, exq.WorkflowOptions{Description: "expired"}, []exq.WorkflowJob{{Name: "a", Queue: "default", Class: "W"}})
	require.NoError(t, err)
	require.NoError(t, cl.Close())
	// Their data expires; the ids stay in the listings' indexes.
	require.NoError(t, admin.Del(ctx, keys.Batch(gone), keys.BatchJobs(gone), keys.BatchPending(gone),
		keys.Workflow(wfGone.ID), keys.WorkflowGraph(wfGone.ID), keys.WorkflowJobs(wfGone.ID)).Err())
	watch := testutil.WatchWrites(t, srv.Addr(), ns)

	for _, user := range []string{"readonly", "default"} {
		var api *exq.API
		var f *fixture
		if user == "default" {
			// Full rights, but a read-only dashboard: a GET must still write nothing.
			a, err := exq.NewAPI(ctx, exq.ClientOptions{RedisURL: srv.URL(), Namespace: ns, Logger: quiet})
			require.NoError(t, err)
			t.Cleanup(func() { _ = a.Close() })
			api, f = a, &fixture{t: t, rdb: admin, ns: ns, keys: keys, api: a,
				h: New(a, Options{ReadOnly: true, Logger: quiet, AllowedHosts: []string{"example.com"}})}
		} else {
			api, f = aclDashboard(t, srv, ns, user, Options{ReadOnly: true})
		}
		procs, err := api.Processes(ctx)
		require.NoError(t, err, user)
		require.Len(t, procs, 1, user)
		assert.Equal(t, live, procs[0].Identity)
		busy, err := api.BusyJobs(ctx)
		require.NoError(t, err, user)
		require.Len(t, busy, 1, "%s: the stale node's workers are not shown", user)
		o, err := api.Overview(ctx)
		require.NoError(t, err, user)
		assert.Equal(t, 1, o.Processes, user)
		for _, path := range []string{"/", "/busy", "/search?jid=running-1", "/stats.json", "/queues", "/queues/default", "/queues/default/keys", "/retries", "/dead", "/periodic",
			"/batches", "/batches/" + bid, "/batches/" + bid + "?audit=1", "/batches/" + gone, "/workflows", "/workflows/" + wf.ID, "/workflows/" + wfGone.ID,
			"/metrics", "/metrics?hours=8&class=W"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			res, body := f.do(req)
			if strings.Contains(path, gone) || strings.Contains(path, wfGone.ID) {
				assert.Equal(t, http.StatusNotFound, res.StatusCode, "%s GET %s: %s", user, path, body)
			} else {
				assert.Equal(t, http.StatusOK, res.StatusCode, "%s GET %s: %s", user, path, body)
				assert.NotContains(t, body, gone, "%s GET %s: the expired batch is not listed", user, path)
				assert.NotContains(t, body, wfGone.ID, "%s GET %s: the expired workflow is not listed", user, path)
			}
			assert.NotContains(t, body, "ghost-1", "%s GET %s", user, path)
			assert.Empty(t, watch.Writes(), "%s GET %s wrote", user, path)
		}
		for _, k := range []string{keys.Batches(), keys.Workflows()} {
			assert.EqualValues(t, 2, admin.ZCard(ctx, k).Val(), "%s: %s keeps the expired id for the nodes to trim", user, k)
		}
		assert.True(t, admin.SIsMember(ctx, keys.Processes(), stale).Val(), "%s: the stale member is left for the nodes to prune", user)
		assert.EqualValues(t, 1, admin.Exists(ctx, keys.Workers(stale)).Val(), "%s: its workers key too", user)
	}
}
