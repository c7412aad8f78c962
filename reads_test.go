package exq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// Every read of the API writes nothing, whatever it finds: batches and workflows whose data
// expired (their ids still in the listings' indexes), a process that died without signing off,
// jobs in every set. The server's MONITOR sees every command, those a script runs too, so a
// write whose failure the caller would only log (a read-only Redis user) is caught as well.
func TestAPIReadsWriteNothingWhenBatchesAndWorkflowsExpired(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t)
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ctx := context.Background()
	keys := wire.NewKeys(ns)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()

	cl, err := NewClient(ctx, ClientOptions{RedisURL: srv.URL(), Namespace: ns, Logger: testLogger()})
	require.NoError(t, err)
	defer cl.Close()
	kept, _, err := cl.NewBatch(ctx, BatchOptions{Description: "kept"}, []JobSpec{{Queue: "default", Class: "W"}})
	require.NoError(t, err)
	gone, _, err := cl.NewBatch(ctx, BatchOptions{Description: "gone"}, []JobSpec{{Queue: "default", Class: "W"}})
	require.NoError(t, err)
	wfKept, err := cl.EnqueueWorkflow(ctx, WorkflowOptions{}, Chain(WorkflowJob{Name: "a", Queue: "default", Class: "W"}, WorkflowJob{Name: "b", Queue: "default", Class: "W"}))
	require.NoError(t, err)
	wfGone, err := cl.EnqueueWorkflow(ctx, WorkflowOptions{}, Chain(WorkflowJob{Name: "a", Queue: "default", Class: "W"}, WorkflowJob{Name: "b", Queue: "default", Class: "W"}))
	require.NoError(t, err)
	jid, err := cl.EnqueueIn(ctx, "default", "W", time.Hour, nil)
	require.NoError(t, err)
	now := float64(time.Now().UnixMicro()) / 1e6
	for _, set := range []string{keys.Retry(), keys.Dead()} {
		require.NoError(t, admin.ZAdd(ctx, set, redis.Z{Score: now, Member: fmt.Sprintf(`{"class":"W","args":[],"queue":"default","jid":"in-%s","failed_at":%f,"error_message":"x"}`, set, now)}).Err())
	}
	// A process that died without signing off: its busy list is left for the nodes to prune.
	require.NoError(t, admin.SAdd(ctx, keys.Processes(), "dead-host:1:aaaa").Err())
	require.NoError(t, admin.HSet(ctx, keys.Workers("dead-host:1:aaaa"), "r1", `{"queue":"default","payload":"{}","run_at":1}`).Err())
	api, err := NewAPI(ctx, ClientOptions{RedisURL: srv.URL(), Namespace: ns, Logger: testLogger()})
	require.NoError(t, err)
	defer api.Close()
	require.NoError(t, api.AddPeriodic(ctx, PeriodicJob{Name: "nightly", Spec: "0 2 * * *", Queue: "default", Class: "W"}))
	// The data of one batch and one workflow expires; their ids stay in the indexes.
	require.NoError(t, admin.Del(ctx, keys.Batch(gone), keys.BatchJobs(gone), keys.BatchPending(gone), keys.BatchDead(gone),
		keys.Workflow(wfGone.ID), keys.WorkflowGraph(wfGone.ID), keys.WorkflowJobs(wfGone.ID)).Err())

	watch := testutil.WatchWrites(t, srv.Addr(), ns)
	day := time.Now().UTC()
	reads := []struct {
		name string
		call func() error
	}{
		{"Queues", func() error { _, err := api.Queues(ctx); return err }},
		{"QueueSize", func() error { _, err := api.QueueSize(ctx, "default"); return err }},
		{"QueueSizes", func() error { _, err := api.QueueSizes(ctx); return err }},
		{"PausedQueues", func() error { _, err := api.PausedQueues(ctx); return err }},
		{"Jobs", func() error { _, err := api.Jobs(ctx, "default", ListOptions{}); return err }},
		{"Retries", func() error { _, err := api.Retries(ctx, ListOptions{}); return err }},
		{"Scheduled", func() error { _, err := api.Scheduled(ctx, ListOptions{}); return err }},
		{"Dead", func() error { _, err := api.Dead(ctx, ListOptions{}); return err }},
		{"Size", func() error { _, err := api.Size(ctx, DeadSet); return err }},
		{"Find", func() error { _, err := api.Find(ctx, ScheduledSet, jid); return err }},
		{"FindInQueue", func() error { _, _ = api.FindInQueue(ctx, "default", "no-such-jid"); return nil }},
		{"QueueStates", func() error { _, err := api.QueueStates(ctx); return err }},
		{"QueueStatesPage", func() error { _, _, err := api.QueueStatesPage(ctx, 0, 10); return err }},
		{"QueueLatencies", func() error { _, err := api.QueueLatencies(ctx); return err }},
		{"Processes", func() error { _, err := api.Processes(ctx); return err }},
		{"BusyJobs", func() error { _, err := api.BusyJobs(ctx); return err }},
		{"Stats", func() error { _, err := api.Stats(ctx); return err }},
		{"StatsBetween", func() error { _, err := api.StatsBetween(ctx, day.AddDate(0, 0, -2), day); return err }},
		{"Realtime", func() error { _, err := api.Realtime(ctx); return err }},
		{"Overview", func() error { _, err := api.Overview(ctx); return err }},
		{"RedisInfo", func() error { _, err := api.RedisInfo(ctx); return err }},
		{"PeriodicJobs", func() error { _, err := api.PeriodicJobs(ctx); return err }},
		{"PeriodicJob", func() error { _, err := api.PeriodicJob(ctx, "nightly"); return err }},
		{"PeriodicHistory", func() error { _, err := api.PeriodicHistory(ctx, "nightly"); return err }},
		{"ResolveRefs", func() error { _, err := api.ResolveRefs(ctx, ScheduledSet, []string{jid}); return err }},
		{"Outbox", func() error { _, err := api.Outbox(ctx); return err }},
		{"Batches", func() error {
			list, err := api.Batches(ctx, ListOptions{})
			if err == nil && (len(list) != 1 || list[0].ID != kept) {
				err = fmt.Errorf("listed %v, want only %s", list, kept)
			}
			return err
		}},
		{"Batch", func() error { _, err := api.Batch(ctx, kept); return err }},
		{"Batch of an expired one", func() error {
			if _, err := api.Batch(ctx, gone); err == nil {
				return fmt.Errorf("found expired batch %s", gone)
			}
			return nil
		}},
		{"Workflows", func() error {
			list, err := api.Workflows(ctx, ListOptions{})
			if err == nil && (len(list) != 1 || list[0].ID != wfKept.ID) {
				err = fmt.Errorf("listed %v, want only %s", list, wfKept.ID)
			}
			return err
		}},
		{"Workflow", func() error { _, err := api.Workflow(ctx, wfKept.ID); return err }},
		{"Workflow of an expired one", func() error {
			if _, err := api.Workflow(ctx, wfGone.ID); err == nil {
				return fmt.Errorf("found expired workflow %s", wfGone.ID)
			}
			return nil
		}},
	}
	for _, which := range []string{"pending", "dead", "all", "foreign", "unaccounted"} {
		reads = append(reads, struct {
			name string
			call func() error
		}{"BatchJobs " + which, func() error { _, err := api.BatchJobs(ctx, kept, which, 10); return err }})
	}
	for _, r := range reads {
		require.NoError(t, r.call(), r.name)
		assert.Empty(t, watch.Writes(), "%s wrote", r.name)
	}
	for _, k := range []string{keys.Batches(), keys.Workflows()} {
		assert.EqualValues(t, 2, admin.ZCard(ctx, k).Val(), "%s: the expired id is left for the nodes to trim", k)
	}
}
