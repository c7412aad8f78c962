package exq

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/cronspec"
	"github.com/exqgo/exq/internal/periodic"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func TestPeriodicSpecsAreStoredAsCronLinesSidekiqCronReads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		job  PeriodicJob
		want string
	}{
		{"five fields as given", PeriodicJob{Spec: "*/5 * * * *"}, "*/5 * * * *"},
		{"six fields, seconds first", PeriodicJob{Spec: "30 * * * * *"}, "30 * * * * *"},
		{"a trailing zone stays", PeriodicJob{Spec: "0 9 * * 1-5 Europe/Paris"}, "0 9 * * 1-5 Europe/Paris"},
		{"Timezone is appended", PeriodicJob{Spec: "0 9 * * *", Timezone: "America/New_York"}, "0 9 * * * America/New_York"},
		{"a zone in the spec wins", PeriodicJob{Spec: "0 9 * * * UTC", Timezone: "America/New_York"}, "0 9 * * * UTC"},
		{"@hourly as given", PeriodicJob{Spec: "@hourly"}, "@hourly"},
		{"@daily with a zone becomes its line", PeriodicJob{Spec: "@daily", Timezone: "Asia/Tokyo"}, "0 0 * * * Asia/Tokyo"},
		{"@every seconds", PeriodicJob{Spec: "@every 30s"}, "*/30 * * * * *"},
		{"@every minutes", PeriodicJob{Spec: "@every 15m"}, "0 */15 * * * *"},
		{"@every hours", PeriodicJob{Spec: "@every 6h"}, "0 0 */6 * * *"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.job.Name, tc.job.Class = "n", "C"
			line, _, err := tc.job.check()
			require.NoError(t, err)
			assert.Equal(t, tc.want, line)
		})
	}
}

func TestStartRefusesABadPeriodicJobNamingIt(t *testing.T) {
	t.Parallel()
	// Validation comes first: a Redis that cannot be reached shows that nothing was written.
	unreachable := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = unreachable.Close() })
	for _, tc := range []struct {
		name string
		job  PeriodicJob
		want string
	}{
		{"bad spec", PeriodicJob{Name: "nightly", Spec: "0 25 * * *", Class: "C"}, `Periodic[0]: exq: invalid periodic job "nightly": Spec: spec "0 25 * * *"`},
		{"seven fields", PeriodicJob{Name: "x", Spec: "0 0 0 * * * *", Class: "C"}, `"x": Spec: spec "0 0 0 * * * *": 7 fields`},
		{"unknown zone", PeriodicJob{Name: "x", Spec: "0 0 * * * Mars/Base", Class: "C"}, `"x": Spec: spec "0 0 * * * Mars/Base": time zone "Mars/Base"`},
		{"bad Timezone", PeriodicJob{Name: "x", Spec: "0 0 * * *", Class: "C", Timezone: "Nowhere/Land"}, `"x": Timezone: unknown time zone Nowhere/Land`},
		{"@every that divides nothing", PeriodicJob{Name: "x", Spec: "@every 7m", Class: "C"}, "must divide a minute, an hour or a day"},
		{"no class", PeriodicJob{Name: "x", Spec: "@hourly"}, `"x": Class: is empty`},
		{"no name", PeriodicJob{Spec: "@hourly", Class: "C"}, `"": Name: is empty`},
		{"slash in name", PeriodicJob{Name: "a/b", Spec: "@hourly", Class: "C"}, `"a/b": Name: must not contain "/"`},
		{"another schedule's key", PeriodicJob{Name: "a:enqueued", Spec: "@hourly", Class: "C"}, "must not end in :enqueued"},
		{"args not a list", PeriodicJob{Name: "x", Spec: "@hourly", Class: "C", Args: map[string]int{"a": 1}}, `"x": Args: args must be a list`},
		{"bad queue", PeriodicJob{Name: "x", Spec: "@hourly", Class: "C", Queue: "a::b"}, `"x": Queue: queue name "a::b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Start(context.Background(), Options{Redis: unreachable, Periodic: []PeriodicJob{tc.job}})
			if e != nil {
				_ = e.Stop(context.Background())
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalidOptions), "%v", err)
			assert.True(t, errors.Is(err, ErrInvalidPeriodic), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := Start(context.Background(), Options{Redis: unreachable,
		Periodic: []PeriodicJob{{Name: "a", Spec: "@hourly", Class: "C"}, {Name: "a", Spec: "@daily", Class: "C"}}})
	assert.ErrorContains(t, err, `Periodic[1]: periodic job "a" is listed twice`)
}

// ticksBetween lists the ticks of spec from (exclusive) to until (inclusive).
func ticksBetween(t *testing.T, spec string, from, until time.Time) []time.Time {
	t.Helper()
	s, err := cronspec.Parse(spec, "")
	require.NoError(t, err)
	var out []time.Time
	for at := s.Next(from); !at.After(until); at = s.Next(at) {
		out = append(out, at)
	}
	return out
}

func TestDSTNeitherSkipsNorDoublesATick(t *testing.T) {
	t.Parallel()
	ny := mustLoad(t, "America/New_York")
	at := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, ny) }
	// 2026-03-08: clocks go from 2:00 EST to 3:00 EDT. 2026-11-01: from 2:00 EDT back to 1:00 EST.
	for _, tc := range []struct {
		name        string
		spec        string
		from, until time.Time
		want        []string // the ticks in UTC
	}{
		{"a time the clocks skip fires once, as far on as they jumped", "30 2 * * * America/New_York",
			at(2026, 3, 7, 12, 0), at(2026, 3, 9, 12, 0), []string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"}},
		{"a time the clocks repeat fires once, the first time", "30 1 * * * America/New_York",
			at(2026, 10, 31, 12, 0), at(2026, 11, 2, 12, 0), []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"seconds field, repeated hour", "15 30 1 * * * America/New_York",
			at(2026, 10, 31, 12, 0), at(2026, 11, 1, 12, 0), []string{"2026-11-01T05:30:15Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, tick := range ticksBetween(t, tc.spec, tc.from, tc.until) {
				got = append(got, wire.CronTick(tick))
			}
			assert.Equal(t, tc.want, got)
		})
	}
	// A schedule that runs every hour ticks in real time: 23 hours on the short day, 25 on
	// the long one, every tick an hour after the one before.
	for _, day := range []struct {
		d     time.Time
		hours int
	}{{at(2026, 3, 8, 0, 0), 23}, {at(2026, 11, 1, 0, 0), 25}} {
		ticks := ticksBetween(t, "0 * * * * America/New_York", day.d.Add(-time.Second), day.d.AddDate(0, 0, 1).Add(-time.Second))
		assert.Len(t, ticks, day.hours, "hourly ticks on %s", day.d.Format("2006-01-02"))
		for i := 1; i < len(ticks); i++ {
			assert.Equal(t, time.Hour, ticks[i].Sub(ticks[i-1]))
		}
	}
}

// periodicRunner builds a runner on the env's Redis with clock now, as a node would.
func (v *env) periodicRunner(now func() time.Time, grace time.Duration, hooks ...EnqueueHook) *periodic.Runner {
	return storePeriodicRunner(testStore(v.client, v.keys, "test-node"), now, grace, hooks...)
}

// storePeriodicRunner builds a runner on jq with clock now, as a node would.
func storePeriodicRunner(jq *store.Store, now func() time.Time, grace time.Duration, hooks ...EnqueueHook) *periodic.Runner {
	return newPeriodicRunner(&enqueuer{jq: jq, now: now, maxRetries: DefaultMaxRetries, hooks: hooks}, grace, 5*time.Second, now, testLogger())
}

// tickJID is the jid of schedule name's job for tick.
var tickJID = periodic.TickJID

// savePeriodic writes p as a node's Start does, at time now.
func (v *env) savePeriodic(p PeriodicJob, now time.Time) {
	v.t.Helper()
	line, s, err := p.check()
	require.NoError(v.t, err)
	stored, err := p.stored(line, s, now)
	require.NoError(v.t, err)
	_, err = testStore(v.client, v.keys, "").SaveCron(context.Background(), stored, store.CronUpsert, now)
	require.NoError(v.t, err)
}

func TestTwoNodesThroughDSTWithAFakeClockEnqueueEachDailyTickOnce(t *testing.T) {
	t.Parallel()
	ny := mustLoad(t, "America/New_York")
	for _, tc := range []struct {
		name        string
		spec        string
		from, until time.Time
		wantJIDs    []time.Time
	}{
		{"spring forward", "30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), time.Date(2026, 3, 9, 12, 0, 0, 0, ny),
			[]time.Time{time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC), time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC)}},
		{"fall back", "30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), time.Date(2026, 11, 2, 12, 0, 0, 0, ny),
			[]time.Time{time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			clock := &fixedClock{t: tc.from}
			v.savePeriodic(PeriodicJob{Name: "nightly", Spec: tc.spec, Timezone: "America/New_York", Class: "Nightly", Queue: "cron"}, clock.now())
			nodes := []*periodic.Runner{v.periodicRunner(clock.now, 5*time.Minute), v.periodicRunner(clock.now, 5*time.Minute)}
			ctx := context.Background()
			for !clock.now().After(tc.until) {
				for _, n := range nodes {
					require.NoError(t, n.Load(ctx))
					_, err := n.Evaluate(ctx, clock.now())
					require.NoError(t, err)
				}
				clock.add(time.Minute)
			}
			var want []string
			for _, tick := range tc.wantJIDs {
				want = append(want, tickJID("nightly", tick))
			}
			var got []string
			for _, raw := range v.list(v.keys.Queue("cron")) {
				got = append([]string{decode(t, raw)["jid"].(string)}, got...) // the list is newest first
			}
			assert.Equal(t, want, got, "one job per night, for the ticks in UTC %v", tc.wantJIDs)
		})
	}
}

func TestMissedTicksOnlyTheLatestWithinGraceIsEnqueued(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		startAt time.Time // when the first node comes up, after no node ran
		grace   time.Duration
		want    []time.Time // ticks enqueued
	}{
		{"down over several ticks: the latest within grace", base.Add(5*time.Minute + 30*time.Second), time.Minute, []time.Time{base.Add(5 * time.Minute)}},
		{"the latest tick is older than grace: none", base.Add(5*time.Minute + 30*time.Second), 10 * time.Second, nil},
		{"a longer grace still enqueues one tick, not all", base.Add(5*time.Minute + 30*time.Second), time.Hour, []time.Time{base.Add(5 * time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			// The schedule exists since before base; its last enqueued tick is base.
			v.savePeriodic(PeriodicJob{Name: "minutely", Spec: "* * * * * UTC", Class: "C", Queue: "cron"}, base.Add(time.Second))
			clock := &fixedClock{t: tc.startAt}
			r := v.periodicRunner(clock.now, tc.grace)
			ctx := context.Background()
			require.NoError(t, r.Load(ctx))
			_, err := r.Evaluate(ctx, clock.now())
			require.NoError(t, err)
			var got []time.Time
			for _, raw := range v.list(v.keys.Queue("cron")) {
				jid := decode(t, raw)["jid"].(string)
				for m := base; !m.After(tc.startAt); m = m.Add(time.Minute) {
					if tickJID("minutely", m) == jid {
						got = append(got, m)
					}
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPeriodicAPIManagesSchedules(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	a, _ := v.api()
	ctx := context.Background()
	job := PeriodicJob{Name: "report", Spec: "0 6 * * *", Timezone: "Europe/Paris", Queue: "reports", Class: "Report", Args: []any{"daily", 1},
		Description: "the morning report"}
	require.NoError(t, a.AddPeriodic(ctx, job))
	assert.ErrorIs(t, a.AddPeriodic(ctx, job), ErrPeriodicExists)
	assert.ErrorIs(t, a.AddPeriodic(ctx, PeriodicJob{Name: "x", Spec: "nope", Class: "C"}), ErrInvalidPeriodic)

	got, err := a.PeriodicJob(ctx, "report")
	require.NoError(t, err)
	assert.Equal(t, "0 6 * * * Europe/Paris", got.Spec)
	assert.Equal(t, "reports", got.Queue)
	assert.Equal(t, "Report", got.Class)
	assert.JSONEq(t, `["daily",1]`, string(got.Args))
	assert.True(t, got.Enabled)
	assert.True(t, got.LastEnqueued.IsZero())
	paris := mustLoad(t, "Europe/Paris")
	assert.Equal(t, 6, got.Next.In(paris).Hour(), "next tick at 6:00 in Paris")
	assert.True(t, got.Next.After(time.Now()))

	require.NoError(t, a.DisablePeriodic(ctx, "report"))
	got, err = a.PeriodicJob(ctx, "report")
	require.NoError(t, err)
	assert.False(t, got.Enabled)
	assert.True(t, got.Next.IsZero(), "a disabled schedule has no next tick")

	job.Spec, job.Timezone, job.Disabled = "0 7 * * *", "", false
	require.NoError(t, a.UpdatePeriodic(ctx, job))
	got, err = a.PeriodicJob(ctx, "report")
	require.NoError(t, err)
	assert.Equal(t, "0 7 * * *", got.Spec)
	assert.False(t, got.Enabled, "an update keeps the status")
	require.NoError(t, a.EnablePeriodic(ctx, "report"))

	jid, err := a.EnqueuePeriodicNow(ctx, "report")
	require.NoError(t, err)
	queued := v.list(v.keys.Queue("reports"))
	require.Len(t, queued, 1)
	assert.Equal(t, jid, decode(t, queued[0])["jid"])
	history, err := a.PeriodicHistory(ctx, "report")
	require.NoError(t, err)
	require.Len(t, history, 1)
	assert.Equal(t, jid, history[0].JID)
	assert.WithinDuration(t, time.Now(), history[0].Enqueued, 5*time.Second)
	all, err := a.PeriodicJobs(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.WithinDuration(t, time.Now(), all[0].LastEnqueued, 5*time.Second)

	require.NoError(t, a.DeletePeriodic(ctx, "report"))
	for _, key := range []string{v.keys.CronJob("report"), v.keys.CronEnqueued("report"), v.keys.CronHistory("report")} {
		assert.Zero(t, v.rdb.Exists(ctx, key).Val(), "%s is gone", key)
	}
	assert.Empty(t, v.rdb.SMembers(ctx, v.keys.CronJobs()).Val())
	for _, err := range []error{a.DeletePeriodic(ctx, "report"), a.EnablePeriodic(ctx, "report"), a.UpdatePeriodic(ctx, job)} {
		assert.ErrorIs(t, err, ErrPeriodicNotFound)
	}
	_, err = a.EnqueuePeriodicNow(ctx, "report")
	assert.ErrorIs(t, err, ErrPeriodicNotFound)
}

func TestStartKeepsAnExistingSchedulesStatusAndTicks(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	a, _ := v.api()
	ctx := context.Background()
	require.NoError(t, a.AddPeriodic(ctx, PeriodicJob{Name: "sweep", Spec: "@hourly", Class: "Sweep"}))
	require.NoError(t, a.DisablePeriodic(ctx, "sweep"))
	ticks := v.zset(v.keys.CronEnqueued("sweep"))
	require.Len(t, ticks, 1, "a new schedule's tick before now counts as done, as sidekiq-cron does")

	v.start(Options{DisableScheduler: true, Periodic: []PeriodicJob{{Name: "sweep", Spec: "*/5 * * * *", Class: "Sweep", Queue: "low"}}})
	got, err := a.PeriodicJob(ctx, "sweep")
	require.NoError(t, err)
	assert.False(t, got.Enabled, "still disabled")
	assert.Equal(t, "*/5 * * * *", got.Spec, "the rest is the node's")
	assert.Equal(t, "low", got.Queue)
	assert.Equal(t, ticks, v.zset(v.keys.CronEnqueued("sweep")), "ticks kept")
}

func TestANodeEnqueuesAPerSecondScheduleEveryTick(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.start(Options{Queues: []Queue{{Name: "other"}}, Periodic: []PeriodicJob{{Name: "tick", Spec: "* * * * * *", Class: "Tick", Queue: "cron"}}})
	v.start(Options{Queues: []Queue{{Name: "other"}}})
	testutil.WaitFor(t, "three ticks enqueued", func() bool { return len(v.list(v.keys.Queue("cron"))) >= 3 })
	// Read the queue and the ticks at one instant: a tick's claim and its job are one script.
	var queue *redis.StringSliceCmd
	var ticks *redis.ZSliceCmd
	_, err := v.client.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		queue = p.LRange(context.Background(), v.keys.Queue("cron"), 0, -1)
		ticks = p.ZRangeWithScores(context.Background(), v.keys.CronEnqueued("tick"), 0, -1)
		return nil
	})
	require.NoError(t, err)
	jobs, members := queue.Val(), ticks.Val()
	jids := map[string]bool{}
	for _, m := range members {
		tick, err := time.Parse("2006-01-02T15:04:05Z", m.Member.(string))
		require.NoError(t, err)
		jids[tickJID("tick", tick)] = true
	}
	queued := map[string]bool{}
	for _, raw := range jobs {
		queued[decode(t, raw)["jid"].(string)] = true
	}
	// The ticks before the schedule was made count as done and have no job.
	for len(members) > 0 && !queued[tickJIDOf(t, "tick", members[0].Member.(string))] {
		members = members[1:]
	}
	assert.Len(t, jobs, len(members), "one job per claimed tick, with two nodes")
	for _, raw := range jobs {
		assert.True(t, jids[decode(t, raw)["jid"].(string)], "every job is a tick's")
	}
}

func TestANewScheduleCountsTheTicksBeforeItAsDoneForExqAndSidekiqCron(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	now := time.Date(2026, 11, 30, 20, 55, 56, 50_000_000, time.UTC)
	v.savePeriodic(PeriodicJob{Name: "tick", Spec: "* * * * * *", Class: "C"}, now)
	var members []string
	for _, z := range v.zset(v.keys.CronEnqueued("tick")) {
		members = append(members, z.Member.(string))
	}
	// exq's latest tick at or before now, and sidekiq-cron's (at or before the second before).
	assert.ElementsMatch(t, []string{"2026-11-30T20:55:56Z", "2026-11-30T20:55:55Z"}, members)
}

// tickJIDOf is the jid of schedule name's job for the tick named member.
func tickJIDOf(t *testing.T, name, member string) string {
	t.Helper()
	tick, err := time.Parse("2006-01-02T15:04:05Z", member)
	require.NoError(t, err)
	return tickJID(name, tick)
}

func TestAPeriodicTickReachesTheEnqueueHooksAndListeners(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var mu sync.Mutex
	var hooked, enqueued []string
	hook := EnqueueHook(func(ctx context.Context, job *OutgoingJob) func(string, error) {
		return func(jid string, err error) {
			mu.Lock()
			defer mu.Unlock()
			if jid != "" {
				hooked = append(hooked, jid)
			}
		}
	})
	listen := Listener(func(ev Event) {
		if ev.Kind == JobEnqueued {
			mu.Lock()
			enqueued = append(enqueued, ev.JID)
			mu.Unlock()
		}
	})
	v.start(Options{Queues: []Queue{{Name: "other"}}, EnqueueHooks: []EnqueueHook{hook}, Listeners: []Listener{listen},
		Periodic: []PeriodicJob{{Name: "tick", Spec: "* * * * * *", Class: "Tick", Queue: "cron"}}})
	testutil.WaitFor(t, "two ticks enqueued", func() bool { return len(v.list(v.keys.Queue("cron"))) >= 2 })
	testutil.WaitFor(t, "the hook and the listener heard them", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(hooked) >= 2 && len(enqueued) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	queued := map[string]bool{}
	for _, raw := range v.list(v.keys.Queue("cron")) {
		queued[decode(t, raw)["jid"].(string)] = true
	}
	for _, jid := range hooked {
		assert.True(t, queued[jid], "the hook heard %s, a tick's job", jid)
	}
	assert.Equal(t, hooked, enqueued)
}

type periodicReport struct {
	Kind string `json:"kind"`
}

func (periodicReport) Class() string { return "App.Report" }
func (periodicReport) Queue() string { return "reports" }

type periodicPanics struct{}

func (*periodicPanics) Class() string { panic("nil receiver") }

// PeriodicArgs stores what EnqueueArgs would enqueue: the args type's class and queue, and
// the one-element list of its JSON.
func TestPeriodicArgsStoresTheTypedJob(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	nightly := PeriodicArgs("nightly", "0 3 * * *", periodicReport{Kind: "nightly"})
	nightly.Timezone = "UTC"
	e := v.start(Options{Periodic: []PeriodicJob{nightly}, DisableScheduler: true})
	got, err := e.API().PeriodicJob(context.Background(), "nightly")
	require.NoError(t, err)
	assert.Equal(t, "App.Report", got.Class)
	assert.Equal(t, "reports", got.Queue)
	assert.JSONEq(t, `[{"kind":"nightly"}]`, string(got.Args))

	_, _, err = PeriodicArgs[*periodicPanics]("p", "@hourly", nil).check()
	require.ErrorIs(t, err, ErrInvalidPeriodic)
	assert.Contains(t, err.Error(), `"p": Class: `)
}
