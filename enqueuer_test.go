package exq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// enqueuer is a node's enqueue side without its loops, for tests that look at what an
// enqueue writes.
func (v *env) enqueuer(now func() time.Time) *enqueuer {
	return &enqueuer{jq: testStore(v.rdb, v.keys, "test-node"), now: now, maxRetries: DefaultMaxRetries}
}

// enqueueN enqueues n jobs of class W on queue q, with args [i], and returns their jids in order.
func (v *env) enqueueN(q string, n int) []string {
	v.t.Helper()
	en := v.enqueuer(time.Now)
	jids := make([]string, n)
	for i := range jids {
		jid, err := en.enqueue(context.Background(), q, "W", []any{i}, nil)
		require.NoError(v.t, err)
		jids[i] = jid
	}
	return jids
}

func TestEnqueueWritesExactWireJSONAndQueueMembership(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1796010415, 667948000)
	en := v.enqueuer(func() time.Time { return now })

	jid, err := en.enqueue(ctx, "default", "MyWorker", []any{1, "a"}, nil)
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, jid, "a UUID v4")
	assert.Equal(t, []string{
		`{"class":"MyWorker","args":[1,"a"],"queue":"default","jid":"` + jid + `","enqueued_at":1796010415.667948,"created_at":1796010415.667948,"retry":25}`,
	}, v.list(v.keys.Queue("default")))
	assert.Equal(t, []string{"default"}, v.rdb.SMembers(ctx, v.keys.Queues()).Val())

	_, err = en.enqueue(ctx, "mail", "Foo::Bar", nil, []EnqueueOption{MaxRetries(3), JID("abc")})
	require.NoError(t, err)
	assert.Equal(t, []string{
		`{"class":"Foo::Bar","args":[],"queue":"mail","jid":"abc","enqueued_at":1796010415.667948,"created_at":1796010415.667948,"retry":3}`,
	}, v.list(v.keys.Queue("mail")))
	assert.ElementsMatch(t, []string{"default", "mail"}, v.rdb.SMembers(ctx, v.keys.Queues()).Val())
}

func TestEnqueueKeepsArgsEqualAsJSON(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	en := v.enqueuer(time.Now)
	args := []any{map[string]any{"nested": []any{1, "x", nil}}, "üñí <b>&</b>", nil, json.Number("12345678901234567890"), []any{}}
	_, err := en.enqueue(ctx, "default", "W", args, nil)
	require.NoError(t, err)
	var got struct{ Args json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(v.list(v.keys.Queue("default"))[0]), &got))
	assert.JSONEq(t, `[{"nested":[1,"x",null]},"üñí <b>&</b>",null,12345678901234567890,[]]`, string(got.Args))
	assert.Contains(t, string(got.Args), `<b>&</b>`, "no HTML escaping")

	_, err = en.enqueue(ctx, "typed", "W", []string{"a", "b"}, nil)
	require.NoError(t, err)
	_, err = en.enqueue(ctx, "raw", "W", json.RawMessage(`[1, 2]`), nil)
	require.NoError(t, err)
	assert.Contains(t, v.list(v.keys.Queue("typed"))[0], `"args":["a","b"]`)
	assert.Contains(t, v.list(v.keys.Queue("raw"))[0], `"args":[1,2]`)
}

func TestEnqueueRejectsBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	en := v.enqueuer(time.Now)
	for _, tc := range []struct {
		name, queue, class string
		args               any
		opts               []EnqueueOption
		want               string
	}{
		{"empty class", "default", "", nil, nil, "exq: enqueue: class is empty"},
		{"empty queue", "", "W", nil, nil, "exq: enqueue: queue name is empty"},
		{"queue with separator", "a::b", "W", nil, nil, `exq: enqueue: queue name "a::b" contains "::"`},
		{"args a map", "default", "W", map[string]any{"a": 1}, nil, "exq: enqueue: args must be a list (a slice or array), got map[string]interface {}"},
		{"args a string", "default", "W", "x", nil, "exq: enqueue: args must be a list (a slice or array), got string"},
		{"args an int", "default", "W", 5, nil, "exq: enqueue: args must be a list (a slice or array), got int"},
		{"args a JSON object", "default", "W", json.RawMessage(`{"a":1}`), nil, "exq: enqueue: args must be a list (a slice or array), got JSON that is not an array"},
		{"args invalid JSON", "default", "W", json.RawMessage(`[1,`), nil, "exq: enqueue: args: invalid JSON"},
		{"args with a channel", "default", "W", []any{make(chan int)}, nil, "exq: enqueue: args cannot be encoded as JSON"},
		{"args with NaN", "default", "W", []any{math.NaN()}, nil, "exq: enqueue: args cannot be encoded as JSON"},
		{"negative MaxRetries", "default", "W", nil, []EnqueueOption{MaxRetries(-2)}, "exq: enqueue: MaxRetries must be NoRetries or not negative, got -2"},
		{"empty JID", "default", "W", nil, []EnqueueOption{JID("")}, "exq: enqueue: JID is empty"},
		{"nil option", "default", "W", nil, []EnqueueOption{nil}, "exq: enqueue: an option is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jid, err := en.enqueue(ctx, tc.queue, tc.class, tc.args, tc.opts)
			require.Error(t, err)
			assert.Empty(t, jid)
			assert.True(t, errors.Is(err, ErrInvalidJob), "errors.Is(err, ErrInvalidJob): %v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := en.enqueueAt(ctx, "enqueue at", "default", "W", time.Time{}, nil, nil)
	assert.EqualError(t, err, "exq: enqueue at: time is zero")
	n, err := v.rdb.Keys(ctx, v.ns+":*").Result()
	require.NoError(t, err)
	assert.Empty(t, n, "bad input must leave Redis unchanged")
}

func TestEnqueueInAndAtWriteTheScheduleWithDueTimeAsEnqueuedAt(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1796010415, 667948000)
	en := v.enqueuer(func() time.Time { return now })
	at := time.Unix(1796010475, 123456789)
	jid, err := en.enqueueAt(ctx, "enqueue at", "mail", "W", at, []any{1}, nil)
	require.NoError(t, err)
	z := v.zset(v.keys.Schedule())
	require.Len(t, z, 1)
	assert.Equal(t, 1796010475.123456, z[0].Score)
	assert.Equal(t, `{"class":"W","args":[1],"queue":"mail","jid":"`+jid+`","enqueued_at":1796010475.123456,"created_at":1796010415.667948,"retry":25}`, z[0].Member)
	assert.Empty(t, v.list(v.keys.Queue("mail")), "a scheduled job is not in its queue yet")
}

func TestEnqueueAllWritesMixedJobsAtomicallyInOrder(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1796010415, 0)
	en := v.enqueuer(func() time.Time { return now })
	client, counter := v.countingClient()
	en.jq = testStore(client, v.keys, "test-node")

	res, err := en.enqueueAll(ctx, []JobSpec{
		{Queue: "default", Class: "A", Args: []any{1}},
		{Queue: "default", Class: "B", Args: []any{2}, In: time.Minute},
		{Queue: "mail", Class: "C", Args: []any{3}, At: now.Add(time.Hour), Options: []EnqueueOption{JID("c-jid")}},
		{Queue: "default", Class: "D", Args: []any{4}},
	})
	require.NoError(t, err)
	require.Len(t, res, 4)
	assert.Equal(t, "c-jid", res[2].JID)
	assert.Equal(t, 1, counter.Count("evalsha"), "one script call for the whole batch")
	assert.Zero(t, counter.Count("lpush")+counter.Count("zadd")+counter.Count("sadd"), "nothing outside the script")

	q := v.list(v.keys.Queue("default"))
	require.Len(t, q, 2)
	assert.Contains(t, q[1], `"jid":"`+res[0].JID+`"`, "FIFO: the first job sits at the consumption end")
	assert.Contains(t, q[0], `"jid":"`+res[3].JID+`"`)
	z := v.zset(v.keys.Schedule())
	require.Len(t, z, 2)
	assert.Equal(t, float64(now.Add(time.Minute).Unix()), z[0].Score)
	assert.Contains(t, z[0].Member, `"jid":"`+res[1].JID+`"`)
	assert.Equal(t, float64(now.Add(time.Hour).Unix()), z[1].Score)
	assert.Equal(t, []string{"default"}, v.rdb.SMembers(ctx, v.keys.Queues()).Val(), "scheduled jobs join queues when they come due")

	// One bad job: nothing of the batch is written.
	_, err = en.enqueueAll(ctx, []JobSpec{{Queue: "x", Class: "A"}, {Queue: "x", Class: ""}})
	assert.EqualError(t, err, "exq: enqueue all: job 1: class is empty")
	_, err = en.enqueueAll(ctx, []JobSpec{{Queue: "x", Class: "A", At: now, In: time.Second}})
	assert.EqualError(t, err, "exq: enqueue all: job 0: both At and In are set")
	assert.Empty(t, v.list(v.keys.Queue("x")))

	// A key of the wrong type fails the whole batch before anything is written.
	require.NoError(t, v.rdb.Set(ctx, v.keys.Queue("broken"), "a string", 0).Err())
	_, err = en.enqueueAll(ctx, []JobSpec{
		{Queue: "ok", Class: "A"},
		{Queue: "ok", Class: "B", In: time.Minute},
		{Queue: "broken", Class: "C"},
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WRONGTYPE")
	assert.Empty(t, v.list(v.keys.Queue("ok")))
	assert.Equal(t, 2, v.zcard(v.keys.Schedule()), "the schedule is unchanged")
}

// countingClient returns a second client on the env's Redis that counts what it sends.
func (v *env) countingClient() (*redis.Client, *testutil.Counter) {
	opts := *v.rdb.Options()
	c := redis.NewClient(&opts)
	v.t.Cleanup(func() { _ = c.Close() })
	h := testutil.NewCounter()
	c.AddHook(h)
	return c, h
}

func TestSimpleArgsEncodeExactlyAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, args := range [][]any{
		{}, {1, -2, int64(1) << 62, "a", "ü<b>&\"\\\n\t\x01", true, false, nil},
		{"\xff bad utf-8", "\u2028"},
	} {
		want, err := wire.Marshal(args)
		require.NoError(t, err)
		got, ok := wire.AppendSimpleArgs(nil, args)
		require.True(t, ok)
		assert.Equal(t, string(want), string(got))
	}
	_, ok := wire.AppendSimpleArgs(nil, []any{1.5})
	assert.False(t, ok, "floats go through encoding/json")
	_, ok = wire.AppendSimpleArgs(nil, []any{map[string]int{}})
	assert.False(t, ok)
}

func TestEnqueueAtAPastTimeEnqueuesNow(t *testing.T) {
	t.Parallel()
	// As Sidekiq's perform_at and asynq's ProcessAt: a due time that has passed (however long
	// ago, before 1970 too) pushes the job to its queue at once, enqueued now.
	now := time.Unix(1796010415, 667948000)
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"now", now},
		{"a microsecond ago", now.Add(-time.Microsecond)},
		{"1969", time.Date(1969, 12, 31, 23, 59, 59, 500000000, time.UTC)},
		{"year 1 plus a second", time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC)},
		{"year -100000", time.Date(-100000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			ctx := context.Background()
			en := v.enqueuer(func() time.Time { return now })
			began := time.Now()
			jid, err := en.enqueueAt(ctx, "enqueue at", "mail", "W", tc.at, []any{1}, []EnqueueOption{Unique(UniqueOpts{Until: UntilSuccess, For: time.Minute})})
			require.NoError(t, err)
			assert.Zero(t, v.zcard(v.keys.Schedule()))
			assert.Equal(t, []string{`{"class":"W","args":[1],"queue":"mail","jid":"` + jid + `","enqueued_at":1796010415.667948,"created_at":1796010415.667948,"retry":25,` +
				`"unique_for":60,"unique_until":"success","unique_token":"` + mustToken(t, "mail", "W", `[1]`) + `","unlocks_at":1796010475.667948}`},
				v.list(v.keys.Queue("mail")))
			ttl := v.rdb.PTTL(ctx, v.keys.Unique(mustToken(t, "mail", "W", `[1]`))).Val()
			// The time since the enqueue is subtracted, not assumed under a second (a loaded
			// run read 58.75 s).
			assert.InDelta(t, time.Minute.Seconds(), (ttl + time.Since(began)).Seconds(), 1, "the lock lasts UniqueFor from now")
		})
	}
}

func TestEnqueueAllWithPastTimesEnqueuesNow(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	now := time.Unix(1796010415, 0)
	en := v.enqueuer(func() time.Time { return now })
	res, err := en.enqueueAll(ctx, []JobSpec{
		{Queue: "default", Class: "A", At: time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC)},
		{Queue: "default", Class: "B", In: -time.Hour},
		{Queue: "default", Class: "C", In: time.Hour},
	})
	require.NoError(t, err)
	q := v.list(v.keys.Queue("default"))
	require.Len(t, q, 2)
	assert.Contains(t, q[1], `"jid":"`+res[0].JID+`","enqueued_at":1796010415.000000,`)
	assert.Contains(t, q[0], `"jid":"`+res[1].JID+`","enqueued_at":1796010415.000000,`)
	z := v.zset(v.keys.Schedule())
	require.Len(t, z, 1)
	assert.Contains(t, z[0].Member, res[2].JID)
}

func mustToken(t *testing.T, queue, class, args string) string {
	t.Helper()
	tok, err := DefaultUniqueToken(queue, class, json.RawMessage(args))
	require.NoError(t, err)
	return tok
}

func TestEnqueueAllPlacesEveryJobWhateverTheMixOfQueuesAndTimes(t *testing.T) {
	t.Parallel()
	now := time.Unix(1796010415, 0)
	later := JobSpec{In: time.Minute}
	for _, tc := range []struct {
		name      string
		specs     []JobSpec // Queue and In only; each job's class names its index
		queues    map[string]int
		scheduled int
	}{
		{"one queue, all now", []JobSpec{{Queue: "a"}, {Queue: "a"}, {Queue: "a"}}, map[string]int{"a": 3}, 0},
		{"two queues interleaved", []JobSpec{{Queue: "a"}, {Queue: "b"}, {Queue: "a"}, {Queue: "b"}}, map[string]int{"a": 2, "b": 2}, 0},
		{"all scheduled", []JobSpec{{Queue: "a", In: later.In}, {Queue: "b", In: later.In}}, map[string]int{}, 2},
		{"one queue and a scheduled job", []JobSpec{{Queue: "a", In: later.In}, {Queue: "a"}}, map[string]int{"a": 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			en := v.enqueuer(func() time.Time { return now })
			for i := range tc.specs {
				tc.specs[i].Class = fmt.Sprint("J", i)
			}
			res, err := en.enqueueAll(context.Background(), tc.specs)
			require.NoError(t, err)
			require.Len(t, res, len(tc.specs))
			for q, n := range tc.queues {
				list := v.list(v.keys.Queue(q))
				require.Len(t, list, n, q)
				var want []string // the queue's jobs in batch order, newest at the head
				for i, s := range tc.specs {
					if s.Queue == q && s.In == 0 {
						want = append([]string{fmt.Sprint("J", i)}, want...)
					}
				}
				for k, raw := range list {
					assert.Contains(t, raw, `"class":"`+want[k]+`"`, "%s position %d", q, k)
				}
			}
			assert.Len(t, v.zset(v.keys.Schedule()), tc.scheduled)
		})
	}
}

// A job over MaxJobBytes is refused with ErrJobTooLarge (and ErrInvalidJob), naming the
// limit, and nothing is written; one just under it is written.
func TestEnqueueRefusesAJobOverMaxJobBytes(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	en := v.enqueuer(time.Now)
	_, err := en.enqueue(ctx, "default", "W", []any{strings.Repeat("x", MaxJobBytes)}, nil)
	require.ErrorIs(t, err, ErrJobTooLarge)
	require.ErrorIs(t, err, ErrInvalidJob)
	assert.Contains(t, err.Error(), "more than MaxJobBytes (1048576)")
	// Args under the limit whose document (with jid, times, meta) goes over it.
	_, err = en.enqueue(ctx, "default", "W", []any{strings.Repeat("x", MaxJobBytes-20)}, nil)
	require.ErrorIs(t, err, ErrJobTooLarge)
	assert.Empty(t, v.list(v.keys.Queue("default")), "nothing written")
	_, err = en.enqueue(ctx, "default", "W", []any{strings.Repeat("x", MaxJobBytes-300)}, nil)
	require.NoError(t, err)
	assert.Len(t, v.list(v.keys.Queue("default")), 1)
}

// The per-call option takes the literal count, and NoRetries, the Options spelling of none,
// means the same as 0 there: both write "retry":0.
func TestMaxRetriesOptionNoRetriesIsZero(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, NoRetries} {
		j, err := PrepareJob(time.Now(), JobSpec{Queue: "mail", Class: "W", Options: []EnqueueOption{MaxRetries(n)}})
		require.NoError(t, err)
		assert.Equal(t, 0, j.MaxRetries, "MaxRetries(%d)", n)
		assert.Contains(t, j.Raw(), `"retry":0`, "MaxRetries(%d)", n)
	}
}
