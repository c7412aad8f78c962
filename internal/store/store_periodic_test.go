package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Per-method tests of periodic jobs in sidekiq-cron 1.x's layout: save, enqueue with a tick's
// claim, status, delete and the reads.

func cronJob(name string) CronJob {
	return CronJob{Name: name, Class: "Report", Queue: "cron", Description: "nightly", Spec: "0 3 * * *",
		Args: json.RawMessage(`[1,"a"]`)}
}

func TestSaveCronWritesSidekiqCronsFieldsAndTheTicksBeforeNow(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	now := time.Unix(1796010415, 0)
	p := cronJob("nightly")
	p.Prev = []string{"2026-12-01T03:00:00Z", "2026-11-30T03:00:00Z"}
	r, err := jq.SaveCron(ctx(t), p, CronUpsert, now)
	require.NoError(t, err)
	assert.EqualValues(t, 1, r, "created")
	assert.Equal(t, map[string]string{"cron_jobs": "set", "cron_job:nightly": "hash", "cron_job:nightly:enqueued": "zset"}, v.layout())
	assert.Equal(t, []string{"cron_job:nightly"}, v.members(v.p("cron_jobs")), "the member without the namespace")
	assert.Equal(t, map[string]string{
		"name": "nightly", "klass": "Report", "cron": "0 3 * * *", "description": "nightly", "args": `[1,"a"]`,
		"date_as_argument": "false", "message": `{"queue":"cron","class":"Report","args":[1,"a"]}`, "active_job": "false",
		"queue_name_prefix": "", "queue_name_delimiter": "", "symbolize_args": "false",
		"status": "enabled", "last_enqueue_time": "",
	}, v.hash(v.p("cron_job:nightly")))
	ticks := v.zset(v.p("cron_job:nightly:enqueued"))
	require.Len(t, ticks, 2)
	assert.Equal(t, float64(now.Unix()), ticks[0].Score)

	// An update keeps the status, the last enqueue and the claimed ticks.
	require.NoError(t, v.rdb.HSet(ctx(t), v.p("cron_job:nightly"), "status", "disabled", "last_enqueue_time", "2026-12-01 03:00:00 +0000").Err())
	p.Spec, p.Prev = "0 4 * * *", []string{"2026-12-02T04:00:00Z"}
	r, err = jq.SaveCron(ctx(t), p, CronUpdate, now)
	require.NoError(t, err)
	assert.EqualValues(t, 0, r, "updated")
	h := v.hash(v.p("cron_job:nightly"))
	assert.Equal(t, "0 4 * * *", h["cron"])
	assert.Equal(t, "disabled", h["status"])
	assert.Equal(t, "2026-12-01 03:00:00 +0000", h["last_enqueue_time"])
	assert.Len(t, v.zset(v.p("cron_job:nightly:enqueued")), 2)

	for _, tc := range []struct {
		mode, name string
		want       int64
	}{
		{CronCreate, "nightly", -2},
		{CronUpdate, "absent", -1},
	} {
		r, err := jq.SaveCron(ctx(t), cronJob(tc.name), tc.mode, now)
		require.NoError(t, err)
		assert.Equal(t, tc.want, r, "%s %s", tc.mode, tc.name)
	}
	assert.NotContains(t, v.layout(), "cron_job:absent")

	p = cronJob("off")
	p.Disabled = true
	r, err = jq.SaveCron(ctx(t), p, CronCreate, now)
	require.NoError(t, err)
	assert.EqualValues(t, 1, r)
	assert.Equal(t, "disabled", v.hash(v.p("cron_job:off"))["status"])

	_, err = jq.SaveCron(ctx(t), CronJob{Name: "bad", Args: json.RawMessage(`{`)}, CronUpsert, now)
	assert.Error(t, err, "args that are not JSON")
	assert.NotContains(t, v.layout(), "cron_job:bad")
}

func TestCronEnqueueClaimsATickOnceAndRecordsTheEnqueue(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	now := time.Date(2026, 12, 2, 3, 0, 1, 0, time.UTC)
	tick := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	_, err := jq.SaveCron(ctx(t), cronJob("nightly"), CronUpsert, now)
	require.NoError(t, err)
	claim := CronClaim{ID: "c1", TTL: time.Hour}

	ok, err := jq.CronEnqueue(ctx(t), "nightly", "cron", "j1", job("cron", "j1"), tick, now, claim)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, []string{job("cron", "j1")}, v.list(v.p("queue:cron")))
	assert.Equal(t, []string{"cron"}, v.members(v.p("queues")))
	assert.Equal(t, "2026-12-02 03:00:01 +0000", v.hash(v.p("cron_job:nightly"))["last_enqueue_time"])
	assert.Equal(t, []string{`{"jid":"j1","enqueued":"2026-12-02 03:00:01 +0000"}`}, v.list(v.p("cron_job:nightly:jid_history")))
	assert.Contains(t, v.zset(v.p("cron_job:nightly:enqueued")), redis.Z{Score: float64(tick.Unix()), Member: "2026-12-02T03:00:00Z"})
	assert.Equal(t, "string", v.layout()["cron_claim:c1"])

	ok, err = jq.CronEnqueue(ctx(t), "nightly", "cron", "j1", job("cron", "j1"), tick, now, claim)
	require.NoError(t, err)
	assert.True(t, ok, "the same claim sent again learns the tick is its own")
	ok, err = jq.CronEnqueue(ctx(t), "nightly", "cron", "j1", job("cron", "j1"), tick, now, CronClaim{ID: "c2", TTL: time.Hour})
	require.NoError(t, err)
	assert.False(t, ok, "another claim of the same tick")
	ok, err = jq.CronEnqueue(ctx(t), "nightly", "cron", "j1", job("cron", "j1"), tick, now, CronClaim{ID: "c3", Check: true})
	require.NoError(t, err)
	assert.False(t, ok, "a check of a claim never made")
	ok, err = jq.CronEnqueue(ctx(t), "nightly", "cron", "j1", job("cron", "j1"), tick, now, CronClaim{ID: "c1", Check: true})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Len(t, v.list(v.p("queue:cron")), 1, "one job for the tick")

	// Enqueue now (no tick): no claim, no enabled check.
	ok, err = jq.CronEnqueue(ctx(t), "nightly", "cron", "j2", job("cron", "j2"), time.Time{}, now, CronClaim{})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Len(t, v.list(v.p("queue:cron")), 2)
}

func TestCronEnqueueTrimsTheHistoryAndOldTicks(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	_, err := jq.SaveCron(ctx(t), cronJob("often"), CronUpsert, now)
	require.NoError(t, err)
	require.NoError(t, v.rdb.ZAdd(ctx(t), v.p("cron_job:often:enqueued"), redis.Z{Score: float64(now.Add(-48 * time.Hour).Unix()), Member: "old"}).Err())
	for i := range 12 {
		tick := now.Add(time.Duration(i) * time.Minute)
		ok, err := jq.CronEnqueue(ctx(t), "often", "cron", "j", job("cron", "j"), tick, tick, CronClaim{ID: tick.String(), TTL: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
	}
	assert.Len(t, v.list(v.p("cron_job:often:jid_history")), 10, "10 kept")
	for _, z := range v.zset(v.p("cron_job:often:enqueued")) {
		assert.NotEqual(t, "old", z.Member, "ticks older than a day leave the set")
	}
	history, err := jq.CronHistory(ctx(t), "often")
	require.NoError(t, err)
	assert.Len(t, history, 10)
}

func TestCronEnqueueOfAMissingOrDisabledScheduleWritesNothing(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	ok, err := jq.CronEnqueue(ctx(t), "absent", "cron", "j", job("cron", "j"), now, now, CronClaim{ID: "a", TTL: time.Hour})
	require.NoError(t, err)
	assert.False(t, ok)
	ok, err = jq.CronEnqueue(ctx(t), "absent", "cron", "j", job("cron", "j"), time.Time{}, now, CronClaim{})
	require.NoError(t, err)
	assert.False(t, ok, "nor now")
	assert.Empty(t, v.layout())

	_, err = jq.SaveCron(ctx(t), cronJob("off"), CronUpsert, now)
	require.NoError(t, err)
	found, err := jq.SetCronStatus(ctx(t), "off", "disabled")
	require.NoError(t, err)
	assert.True(t, found)
	ok, err = jq.CronEnqueue(ctx(t), "off", "cron", "j", job("cron", "j"), now, now, CronClaim{ID: "b", TTL: time.Hour})
	require.NoError(t, err)
	assert.False(t, ok, "a disabled schedule's tick")
	assert.NotContains(t, v.layout(), "queue:cron")

	found, err = jq.SetCronStatus(ctx(t), "absent", "enabled")
	require.NoError(t, err)
	assert.False(t, found)
	assert.NotContains(t, v.layout(), "cron_job:absent", "no hash holding only a status")
}

func TestDeleteCronRemovesTheScheduleWithItsTicksAndHistory(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	p := cronJob("gone")
	p.Prev = []string{"2026-12-01T03:00:00Z"}
	_, err := jq.SaveCron(ctx(t), p, CronUpsert, now)
	require.NoError(t, err)
	_, err = jq.CronEnqueue(ctx(t), "gone", "cron", "j", job("cron", "j"), time.Time{}, now, CronClaim{})
	require.NoError(t, err)
	_, err = jq.SaveCron(ctx(t), cronJob("kept"), CronUpsert, now)
	require.NoError(t, err)

	existed, err := jq.DeleteCron(ctx(t), "gone")
	require.NoError(t, err)
	assert.True(t, existed)
	assert.Equal(t, map[string]string{"cron_jobs": "set", "cron_job:kept": "hash", "queues": "set", "queue:cron": "list"}, v.layout())
	existed, err = jq.DeleteCron(ctx(t), "gone")
	require.NoError(t, err)
	assert.False(t, existed)
}

func TestLoadCronReadsWhatSidekiqCronWrites(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	recs, err := jq.LoadCron(ctx(t))
	require.NoError(t, err)
	assert.Empty(t, recs)

	write := func(name string, fields ...string) {
		require.NoError(t, v.rdb.SAdd(ctx(t), v.p("cron_jobs"), "cron_job:"+name).Err())
		if len(fields) > 0 {
			require.NoError(t, v.rdb.HSet(ctx(t), v.p("cron_job:"+name), fields).Err())
		}
	}
	write("ruby", "name", "ruby", "klass", "Ruby", "cron", "* * * * *", "message", `{"queue":"low","class":"Ruby","args":[9]}`,
		"last_enqueue_time", "2026-12-01 03:00:00 UTC")
	write("argswin", "klass", "A", "args", `[1]`, "message", `{"args":[2]}`, "status", "disabled")
	write("strarg", "klass", "S", "args", "not json")
	write("noclass", "cron", "* * * * *")
	write("badmsg", "klass", "B", "message", "{")
	write("badtime", "klass", "T", "last_enqueue_time", "yesterday")
	write("member-only")

	recs, err = jq.LoadCron(ctx(t))
	require.NoError(t, err)
	byName := map[string]CronRecord{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	assert.Len(t, byName, 6, "a member without a hash is skipped")
	ruby := byName["ruby"]
	assert.Equal(t, "low", ruby.Queue)
	assert.JSONEq(t, `[9]`, string(ruby.Args), "message's args when there is no args field")
	assert.True(t, ruby.Enabled, "no status: enabled")
	assert.Equal(t, time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), ruby.LastEnqueue.UTC())
	assert.Empty(t, ruby.Problem)

	assert.JSONEq(t, `[1]`, string(byName["argswin"].Args), "the args field wins")
	assert.False(t, byName["argswin"].Enabled)
	assert.Equal(t, "default", byName["argswin"].Queue)
	assert.JSONEq(t, `["not json"]`, string(byName["strarg"].Args), "a string that is not JSON is wrapped in a list")
	assert.Equal(t, "no klass", byName["noclass"].Problem)
	assert.Equal(t, "message is not JSON", byName["badmsg"].Problem)
	assert.Contains(t, byName["badtime"].Problem, "not a time")

	rec, ok, err := jq.CronRecordOf(ctx(t), "ruby")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, ruby, rec)
	_, ok, err = jq.CronRecordOf(ctx(t), "absent")
	require.NoError(t, err)
	assert.False(t, ok)

	// A periodic job's key of another type reads as no periodic job: the others load (one
	// bad key stopped every periodic job of the namespace and every list of them).
	v.garbage(v.p("cron_job:ruby"))
	recs, err = jq.LoadCron(ctx(t))
	require.NoError(t, err)
	assert.Len(t, recs, len(byName)-1)
	for _, r := range recs {
		assert.NotEqual(t, "ruby", r.Name)
	}
}
