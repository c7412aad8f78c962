package exqpg

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// A row the relay cannot read, decode or push is set aside alone, with its error, between two
// good rows that are relayed; the status counts it as failed, in Postgres and in Redis. Each
// case is a column holding what no enqueue writes (rows written by hand or by another tool,
// columns altered); the last ones are odd but good rows, relayed with the others.
func TestAPoisonRowIsSetAsideAloneAndTheRowsAroundItAreRelayed(t *testing.T) {
	good := `'{"class":"W","args":[],"queue":"q","jid":"odd"}'`
	cases := []struct {
		name, alter, job, runAt, createdAt string
		want                               string // in the row's error; "" when the row is good
	}{
		{name: "run_at infinity", job: good, runAt: "'infinity'", want: "run_at is infinity"},
		{name: "run_at -infinity", job: good, runAt: "'-infinity'", want: "run_at is -infinity"},
		{name: "run_at in year 294270", job: good, runAt: "'294270-01-01 00:00:00+00'", want: "after year 9999"},
		{name: "run_at at Postgres' last microsecond", job: good, runAt: "'294276-12-31 23:59:59.999999+00'", want: "after year 9999"},
		{name: "run_at in year 10000", job: good, runAt: "'10000-01-01 00:00:00+00'", want: "after year 9999"},
		{name: "run_at a text column", alter: "ALTER COLUMN run_at TYPE text", job: good, runAt: "'soon'", want: "run_at cannot be read"},
		{name: "job NULL", alter: "ALTER COLUMN job DROP NOT NULL", job: "NULL", want: "the job is NULL"},
		{name: "job of 2 MB", job: `('{"class":"W","args":["' || repeat('x', 2000000) || '"],"queue":"q","jid":"big"}')::json`, want: "more than MaxJobBytes"},
		{name: "job not JSON in a text column", alter: "ALTER COLUMN job TYPE text", job: "'not json'", want: "not a job"},
		{name: "job a JSON array", job: "'[1,2]'", want: "not a job"},
		{name: "job a JSON string", job: `'"W"'`, want: "not a job"},
		{name: "job without jid", job: `'{"class":"W","args":[],"queue":"q"}'`, want: "no jid"},
		{name: "job with NULs in its queue and jid", job: `'{"class":"W","args":[],"queue":"q\u0000:","jid":"n\u0000ul"}'`, want: "queue"},
		{name: "job with a bad queue and a huge unlocks_at", job: `'{"class":"W","args":[],"queue":":","jid":"u","unique_token":"t","unlocks_at":1e300}'`, want: "queue"},
		{name: "job a jsonb column", alter: "ALTER COLUMN job TYPE jsonb", job: good},
		{name: "run_at in 4713 BC: due now", job: good, runAt: "'4713-01-01 00:00:00+00 BC'"},
		{name: "created_at -infinity", job: good, createdAt: "'-infinity'"},
		{name: "created_at infinity", job: good, createdAt: "'infinity'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool, schema := pgPool(t)
			rdb, ns := redisNS(t)
			c := client(t, rdb, ns)
			ob, _ := New(schema)
			ctx := context.Background()
			table := `"` + schema + `".exq_outbox`
			if tc.alter != "" {
				_, err := pool.Exec(ctx, `ALTER TABLE `+table+` `+tc.alter)
				require.NoError(t, err)
			}
			enqueue := func() string {
				var jid string
				require.NoError(t, inTx(t, pool, func(tx Tx) (err error) { jid, err = ob.Enqueue(ctx, tx, "q", "W", nil); return err }))
				return jid
			}
			before := enqueue()
			runAt, createdAt := cmpOr(tc.runAt, "NULL"), cmpOr(tc.createdAt, "now()")
			_, err := pool.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (jid, queue, job, run_at, created_at) VALUES ('poison', 'q', %s, %s, %s)`,
				table, tc.job, runAt, createdAt))
			require.NoError(t, err)
			after := enqueue()

			// StatusInterval of an hour: the reports to Redis below come from the rounds (a row
			// set aside, a drained backlog), not from the interval.
			r := runRelay(t, pool, c, RelayOptions{Schema: schema, StatusInterval: time.Hour})
			eventually(t, 10*time.Second, "no row waits", func() bool {
				s, err := r.Status(ctx)
				return err == nil && s.Backlog == 0
			})
			failed := int64(0)
			if tc.want != "" {
				failed = 1
				var msg string
				require.NoError(t, pool.QueryRow(ctx, `SELECT error FROM `+table+` WHERE jid = 'poison' AND failed_at IS NOT NULL`).Scan(&msg))
				assert.Contains(t, msg, tc.want)
			}
			s, err := r.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, Status{Failed: failed}, s, "exq-outbox status")
			pushed := jidsOf(t, rdb.LRange(ctx, ns+":queue:q", 0, -1).Val())
			assert.Contains(t, pushed, before, "the row before it is relayed")
			assert.Contains(t, pushed, after, "the row after it is relayed")
			if tc.want == "" {
				assert.Contains(t, pushed, "odd", "the odd but good row is relayed")
			} else {
				assert.Len(t, pushed, 2)
			}
			assert.Zero(t, rdb.ZCard(ctx, ns+":schedule").Val(), "nothing scheduled")
			api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns})
			require.NoError(t, err)
			defer api.Close()
			eventually(t, 10*time.Second, "the counts reach Redis", func() bool {
				st, err := api.Outbox(ctx)
				return err == nil && st.Backlog == 0 && st.Failed == failed
			})
		})
	}
}

func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// The status reads a table whose created_at holds infinities or a time millennia ago: the
// rows count, the age is clamped (never wrapped into a negative duration) and infinite ones
// are left out of it. It once failed ("cannot subtract infinite timestamps"), so no relay
// could report.
func TestStatusReadsRowsWithAnyCreatedAt(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ctx := context.Background()
	table := `"` + schema + `".exq_outbox`
	doc := `'{"class":"W","args":[],"queue":"q","jid":"j"}'`
	r, err := NewRelay(pool, client(t, rdb, ns), RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	for _, tc := range []struct {
		createdAt string
		want      time.Duration
	}{
		{"'infinity'", 0},
		{"'-infinity'", 0},
		{"now() - interval '1 hour'", time.Hour},
		{"'4713-01-01 00:00:00+00 BC'", math.MaxInt64},
	} {
		_, err := pool.Exec(ctx, `INSERT INTO `+table+` (jid, queue, job, created_at) VALUES ('j', 'q', `+doc+`, `+tc.createdAt+`)`)
		require.NoError(t, err)
		s, err := r.Status(ctx)
		require.NoError(t, err, tc.createdAt)
		assert.InDelta(t, float64(tc.want), float64(s.OldestAge), float64(time.Minute), tc.createdAt)
	}
	s, err := r.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(4), s.Backlog)
	assert.NoError(t, client(t, rdb, ns).ReportOutbox(ctx, s.Backlog, s.Failed, s.OldestAge), "a clamped age reports")
}

// Enqueue refuses a due time after year 9999 itself, whatever the core's version: such a row
// would only be set aside by the relay.
func TestEnqueueAtRefusesATimeAfterYear9999(t *testing.T) {
	pool, schema := pgPool(t)
	ob, _ := New(schema)
	ctx := context.Background()
	for _, at := range []time.Time{time.Date(294270, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		err := inTx(t, pool, func(tx Tx) error { _, err := ob.EnqueueAt(ctx, tx, "q", "W", at, nil); return err })
		require.ErrorIs(t, err, exq.ErrInvalidJob)
		assert.True(t, strings.Contains(err.Error(), "after year 9999"), err.Error())
		err = inTx(t, pool, func(tx Tx) error {
			_, err := ob.EnqueueAll(ctx, tx, []exq.JobSpec{{Queue: "q", Class: "W", At: at}})
			return err
		})
		require.ErrorIs(t, err, exq.ErrInvalidJob)
	}
	assert.Zero(t, rows(t, pool, schema))
}

// A round stops taking documents past maxRoundBytes (its first row always goes): the rows
// after wait, locked only until the round commits, for the next round. 20 documents of about
// 1 MB: 17 in the first round (16 MiB is crossed by the 17th), 3 in the second.
func TestARoundTakesDocumentsUpToItsByteBound(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO "`+schema+`".exq_outbox (jid, queue, job)
		SELECT 'j' || i, 'q', ('{"class":"W","args":["' || repeat('x', 1000000) || '"],"queue":"q","jid":"j' || i || '"}')::json
		FROM generate_series(1, 20) AS i`)
	require.NoError(t, err)
	r, err := NewRelay(pool, client(t, rdb, ns), RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	n, err := r.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, 17, n)
	assert.Equal(t, 3, rows(t, pool, schema))
	n, err = r.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, int64(20), rdb.LLen(ctx, ns+":queue:q").Val())
}

// A row whose Redis key another program wrote with another type (its queue a hash here) makes
// Redis refuse the whole push (WRONGTYPE, nothing written): the relay then pushes the round's
// rows one by one and sets that row aside alone. When every row of a round is refused so (all
// go to that queue), no row is at fault: they wait, and go once the key is fixed.
func TestARowWhoseRedisKeyHasAnotherTypeIsSetAsideAlone(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	require.NoError(t, rdb.HSet(ctx, ns+":queue:bad", "not", "a list").Err())
	enqueue := func(queue string) string {
		var jid string
		require.NoError(t, inTx(t, pool, func(tx Tx) (err error) { jid, err = ob.Enqueue(ctx, tx, queue, "W", nil); return err }))
		return jid
	}
	before, _, after := enqueue("q"), enqueue("bad"), enqueue("q")
	r, err := NewRelay(pool, client(t, rdb, ns), RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	n, err := r.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.ElementsMatch(t, []string{before, after}, jidsOf(t, rdb.LRange(ctx, ns+":queue:q", 0, -1).Val()))
	var msg string
	require.NoError(t, pool.QueryRow(ctx, `SELECT error FROM "`+schema+`".exq_outbox WHERE queue = 'bad' AND failed_at IS NOT NULL`).Scan(&msg))
	assert.Contains(t, msg, "WRONGTYPE")

	_, err = pool.Exec(ctx, `DELETE FROM "`+schema+`".exq_outbox`)
	require.NoError(t, err)
	enqueue("bad")
	enqueue("bad")
	_, err = r.Round(ctx)
	require.ErrorContains(t, err, "WRONGTYPE")
	s, err := r.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.Backlog, "no row set aside")
	assert.Zero(t, s.Failed)
	require.NoError(t, rdb.Del(ctx, ns+":queue:bad").Err())
	n, err = r.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, int64(2), rdb.LLen(ctx, ns+":queue:bad").Val())
}
