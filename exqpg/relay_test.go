package exqpg

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

func TestNewRelayRefusesBadOptions(t *testing.T) {
	pool, _ := pgPool(t)
	rdb, ns := redisNS(t)
	c := client(t, rdb, ns)
	cases := []struct {
		name string
		o    RelayOptions
		want string
	}{
		{"schema", RelayOptions{Schema: "Bad"}, "Schema"},
		{"batch size", RelayOptions{BatchSize: -1}, "BatchSize"},
		{"batch too big", RelayOptions{BatchSize: maxRowsPerInsert + 1}, "BatchSize"},
		{"poll", RelayOptions{PollInterval: -time.Second}, "PollInterval"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRelay(pool, c, tc.o)
			require.ErrorIs(t, err, ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := NewRelay(nil, c, RelayOptions{})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = NewRelay(pool, nil, RelayOptions{})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

func jidsOf(t *testing.T, docs []string) []string {
	t.Helper()
	out := make([]string, len(docs))
	for i, d := range docs {
		var j struct {
			JID string `json:"jid"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &j))
		out[i] = j.JID
	}
	return out
}

func TestManyRelaysPushEveryRowOnce(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	for range 3 {
		runRelay(t, pool, client(t, rdb, ns), RelayOptions{Schema: schema, BatchSize: 50})
	}
	const total = 2000
	var jids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < total/4; n += 25 {
				specs := make([]exq.JobSpec, 25)
				for i := range specs {
					specs[i] = exq.JobSpec{Queue: "q", Class: "W", Args: []any{w, n + i}}
				}
				// Not inTx: require may not stop the test from this goroutine.
				var got []string
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
					got, err = ob.EnqueueAll(ctx, tx, specs)
					return err
				})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				jids = append(jids, got...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	eventually(t, 30*time.Second, "every row relayed", func() bool { return rows(t, pool, schema) == 0 })
	pushed := map[string]int{}
	for _, jid := range jidsOf(t, rdb.LRange(ctx, ns+":queue:q", 0, -1).Val()) {
		pushed[jid]++
	}
	require.Len(t, jids, total)
	for _, jid := range jids {
		require.Equal(t, 1, pushed[jid], jid)
	}
	assert.Len(t, pushed, total)
}

func TestARelayThatCannotReachRedisKeepsTheBacklogThenDrainsInOrder(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	px := newProxy(t, rdb.Options().Addr)
	via := redis.NewClient(&redis.Options{Addr: px.addr(), DB: rdb.Options().DB, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { _ = via.Close() })
	c := client(t, via, ns)
	px.cut()
	var logs syncBuffer
	r := runRelay(t, pool, c, RelayOptions{Schema: schema, PollInterval: 20 * time.Millisecond,
		MaxBackoff: 100 * time.Millisecond, StatusInterval: 20 * time.Millisecond, WarnBacklog: 5,
		Logger: logs.logger()})
	var want []string
	for i := range 20 {
		require.NoError(t, inTx(t, pool, func(tx Tx) error {
			jid, err := ob.Enqueue(ctx, tx, "q", "W", []any{i})
			want = append(want, jid)
			return err
		}))
	}
	eventually(t, 10*time.Second, "the failed pushes are logged", func() bool {
		return strings.Contains(logs.String(), "relay round failed")
	})
	s, err := r.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(20), s.Backlog, "every row waits")
	assert.Positive(t, s.OldestAge)
	eventually(t, 10*time.Second, "the backlog warning", func() bool {
		return strings.Contains(logs.String(), "outbox backlog")
	})
	assert.Zero(t, rdb.LLen(ctx, ns+":queue:q").Val())

	px.restore()
	eventually(t, 20*time.Second, "the backlog drains", func() bool { return rows(t, pool, schema) == 0 })
	got := jidsOf(t, rdb.LRange(ctx, ns+":queue:q", 0, -1).Val())
	for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
		got[i], got[j] = got[j], got[i] // LPUSH: the first pushed is at the right end
	}
	assert.Equal(t, want, got, "in commit order")
	// The status reaches Redis for exq's API.
	api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns})
	require.NoError(t, err)
	defer api.Close()
	eventually(t, 10*time.Second, "an empty backlog reported", func() bool {
		st, err := api.Outbox(ctx)
		return err == nil && st.Reported && st.Backlog == 0 && st.OldestAt.IsZero()
	})
}

func TestStatusReachesTheAdminAPI(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	c := client(t, rdb, ns)
	api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns})
	require.NoError(t, err)
	defer api.Close()
	st, err := api.Outbox(ctx)
	require.NoError(t, err)
	assert.False(t, st.Reported)
	for range 3 {
		require.NoError(t, inTx(t, pool, func(tx Tx) error { _, err := ob.Enqueue(ctx, tx, "q", "W", nil); return err }))
	}
	_, err = pool.Exec(ctx, `UPDATE "`+schema+`".exq_outbox SET created_at = now() - interval '1 hour'`)
	require.NoError(t, err)
	r, err := NewRelay(pool, c, RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	r.reportOnce(ctx, c) // what Run does every StatusInterval
	st, err = api.Outbox(ctx)
	require.NoError(t, err)
	assert.True(t, st.Reported)
	assert.Equal(t, int64(3), st.Backlog)
	assert.InDelta(t, time.Hour.Seconds(), time.Since(st.OldestAt).Seconds(), 60)
	assert.WithinDuration(t, time.Now(), st.UpdatedAt, time.Minute)
}

func TestARowThatIsNotAJobIsKeptWithItsError(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO "`+schema+`".exq_outbox (jid, queue, job) VALUES ('bad', 'q', '{"class":"W","args":[],"queue":":q","jid":"bad"}')`)
	require.NoError(t, err)
	require.NoError(t, inTx(t, pool, func(tx Tx) error { _, err := ob.Enqueue(ctx, tx, "q", "W", nil); return err }))
	r, err := NewRelay(pool, client(t, rdb, ns), RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	n, err := r.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, int64(1), rdb.LLen(ctx, ns+":queue:q").Val(), "the good row is relayed")
	var msg string
	require.NoError(t, pool.QueryRow(ctx, `SELECT error FROM "`+schema+`".exq_outbox WHERE jid = 'bad' AND failed_at IS NOT NULL`).Scan(&msg))
	assert.Contains(t, msg, "queue")
	s, err := r.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, Status{Failed: 1}, s)
	n, err = r.Round(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a failed row is not taken again")
}
