package exq

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// verdicts records what the EnqueueHooks of a fleet said of each jid.
type verdicts struct {
	mu      sync.Mutex
	written map[string]int // jid → hooks that said "written"
	not     map[string]int // jid → hooks that said "not written"
}

func (vs *verdicts) hook() EnqueueHook {
	return func(_ context.Context, job *OutgoingJob) func(string, error) {
		jid := job.JID
		return func(got string, err error) {
			vs.mu.Lock()
			defer vs.mu.Unlock()
			if vs.written == nil {
				vs.written, vs.not = map[string]int{}, map[string]int{}
			}
			if got != "" && err == nil {
				vs.written[jid]++
			} else {
				vs.not[jid]++
			}
		}
	}
}

// A node whose periodic enqueues lose their replies (the proxy forwards the script and cuts the
// connection before its reply) tells its EnqueueHook the truth: "written" for a tick whose job
// it wrote, "not written" for one it did not, whether its Redis client sends the script again
// or not, and "not written" for the ticks another claimed.
func TestPeriodicEnqueueWithALostReplyTellsItsHookWhetherTheJobWasWritten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		maxRetries int
	}{
		{"the client sends the script again", 3},
		{"the client does not", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCutter(t)
			ticks, cuts := 12, 6
			if testutil.Long() {
				ticks, cuts = 40, 20
			}
			vs := &verdicts{}
			spec := []PeriodicJob{{Name: "each-second", Spec: "* * * * * *", Class: "Tick", Queue: "cron"}}
			opts := *c.rdb.Options()
			opts.Addr, opts.MaxRetries = c.proxy.Addr(), tc.maxRetries
			cut := redis.NewClient(&opts)
			t.Cleanup(func() { _ = cut.Close() })
			o := Options{Queues: []Queue{{Name: "idle"}}, Periodic: spec, EnqueueHooks: []EnqueueHook{vs.hook()}}
			o.Redis = cut
			cutNode := c.start(o)
			// Every third tick is another's: claimed ahead, as sidekiq-cron claims (ZADD of the
			// tick's member, scored by its time), so the node must not enqueue it.
			now := c.serverTime().Truncate(time.Second)
			others := map[string]bool{}
			for i := 2; i < ticks+10; i += 3 {
				tick := now.Add(time.Duration(i) * time.Second)
				others[tickJID("each-second", tick)] = true
				require.NoError(t, c.rdb.ZAdd(context.Background(), c.keys.CronEnqueued("each-second"),
					redis.Z{Score: float64(tick.Unix()), Member: wire.CronTick(tick)}).Err())
			}
			require.NoError(t, scripts.CronEnqueue.Load(context.Background(), c.rdb).Err())
			// One cut at a time, a tick apart, so that each falls on a tick of its own (a
			// client that sends the script again would otherwise meet the next cut).
			for i := 0; i < cuts; i++ {
				waitCut(t, c.proxy.CutReplyTo(1, scripts.CronEnqueue.Hash()))
				time.Sleep(1100 * time.Millisecond)
			}
			waitLong(t, time.Duration(ticks)*time.Second+time.Minute, "the ticks", func() bool {
				return len(c.list(c.keys.Queue("cron"))) >= ticks
			})
			// Stop the node, so that every hook has heard its write's end.
			require.NoError(t, cutNode.Stop(context.Background()))
			jobs := map[string]int{}
			for _, raw := range c.list(c.keys.Queue("cron")) {
				jobs[decode(t, raw)["jid"].(string)]++
			}
			vs.mu.Lock()
			defer vs.mu.Unlock()
			falseNot, falseWritten, twice, heard := 0, 0, 0, 0
			for jid, n := range jobs {
				if n > 1 {
					twice++
				}
				switch w := vs.written[jid]; {
				case w == 0 && vs.not[jid] > 0:
					falseNot++ // a job that runs, and no hook says it was written
				case w > 1:
					falseWritten += w - 1 // more hooks than one say they wrote it
				}
				if vs.written[jid]+vs.not[jid] > 0 {
					heard++
				}
			}
			for jid, w := range vs.written {
				if w > 0 && jobs[jid] == 0 {
					falseWritten++ // a hook says written, no job
				}
			}
			othersRun := 0
			for jid := range others {
				othersRun += jobs[jid]
			}
			t.Logf("%d ticks' jobs, %d replies cut: %d jobs the hook called not written, %d false \"written\", %d jobs twice, %d jobs of others' ticks, %d jobs heard of",
				len(jobs), cuts, falseNot, falseWritten, twice, othersRun, heard)
			assert.Zero(t, falseNot, "written jobs the hooks called not written")
			assert.Zero(t, falseWritten, "hooks that said written for a job another wrote, or none")
			assert.Zero(t, twice, "ticks enqueued twice")
			assert.Zero(t, othersRun, "jobs of ticks another claimed")
		})
	}
}

// A tick whose enqueue Redis never answered (the link is down) is sent again, the same job
// under the same claim, once Redis is back: the hook hears once, "written". A runner that stops
// while Redis is still down tells the hook the outcome is unknown, with the cause.
func TestAPendingTickIsSentAgainUntilRedisAnswersOrTheRunnerStops(t *testing.T) {
	t.Parallel()
	c := newCutter(t)
	ctx := context.Background()
	clock := &fixedClock{t: time.Date(2026, 12, 1, 10, 0, 0, 500_000_000, time.UTC)}
	c.savePeriodic(PeriodicJob{Name: "minutely", Spec: "* * * * *", Class: "M", Queue: "cron"}, clock.now())
	var mu sync.Mutex
	var heard []string
	hook := func(_ context.Context, job *OutgoingJob) func(string, error) {
		return func(jid string, err error) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, fmt.Sprintf("%s|%v", jid, err))
		}
	}
	opts := *c.rdb.Options()
	opts.Addr, opts.MaxRetries = c.proxy.Addr(), -1
	via := redis.NewClient(&opts)
	t.Cleanup(func() { _ = via.Close() })
	r := storePeriodicRunner(testStore(via, c.keys, "test-node"), clock.now, time.Minute, hook)
	require.NoError(t, r.Load(ctx))

	c.proxy.Down()
	clock.add(time.Minute) // 10:01:00.5: the 10:01 tick is due
	_, err := r.Evaluate(ctx, clock.now())
	require.Error(t, err)
	require.Equal(t, 1, r.Pending())
	clock.add(5 * time.Second)
	_, err = r.Evaluate(ctx, clock.now())
	require.Error(t, err, "still down")
	assert.Empty(t, heard, "no verdict while Redis does not answer")
	c.proxy.Up()
	clock.add(5 * time.Second)
	_, err = r.Evaluate(ctx, clock.now())
	require.NoError(t, err)
	jid := tickJID("minutely", time.Date(2026, 12, 1, 10, 1, 0, 0, time.UTC))
	assert.Equal(t, []string{jid + "|<nil>"}, heard, "one verdict: written")
	assert.Len(t, c.list(c.keys.Queue("cron")), 1)

	heard = nil
	c.proxy.Down()
	clock.add(time.Minute)
	_, err = r.Evaluate(ctx, clock.now())
	require.Error(t, err)
	r.Settle()
	require.Len(t, heard, 1)
	assert.Contains(t, heard[0], "|exq: periodic job \"minutely\", tick 2026-12-01T10:02:00Z: Redis did not answer before the node stopped, so whether its job was written is unknown: ")
	assert.Zero(t, r.Pending())
}
