package exqpg

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

func TestMigrateRunsTwiceAndRefusesBadSchemaNames(t *testing.T) {
	pool, schema := pgPool(t)
	ctx := context.Background()
	require.NoError(t, Migrate(ctx, pool, schema), "a second run changes nothing")
	for _, bad := range []string{"A", "1x", `x"; DROP TABLE y; --`, "a-b", string(make([]byte, 64))} {
		err := Migrate(ctx, pool, bad)
		require.ErrorIs(t, err, ErrInvalidSchema, bad)
		_, err = New(bad)
		require.ErrorIs(t, err, ErrInvalidSchema, bad)
	}
	sql, err := MigrationSQL("")
	require.NoError(t, err)
	assert.Contains(t, sql, `"public".exq_outbox`)
}

func TestEnqueueWritesTheDocumentADirectEnqueueWrites(t *testing.T) {
	pool, schema := pgPool(t)
	ob, err := New(schema)
	require.NoError(t, err)
	ctx := context.Background()
	var jid string
	require.NoError(t, inTx(t, pool, func(tx Tx) error {
		jid, err = ob.Enqueue(ctx, tx, "mail", "W", []any{1, "a"}, exq.MaxRetries(3))
		return err
	}))
	var doc, queue string
	var runAt *time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT job::text, queue, run_at FROM "`+schema+`".exq_outbox WHERE jid = $1`, jid).Scan(&doc, &queue, &runAt))
	assert.Equal(t, "mail", queue)
	assert.Nil(t, runAt)
	want, err := exq.PrepareJob(time.Now(), exq.JobSpec{Queue: "mail", Class: "W", Args: []any{1, "a"}, Options: []exq.EnqueueOption{exq.MaxRetries(3), exq.JID(jid)}})
	require.NoError(t, err)
	assert.Equal(t, want.Queue, queue)
	assert.Contains(t, doc, `"retry":3`)
	assert.Contains(t, doc, `"jid":"`+jid+`"`)
}

func TestEnqueueRefusesWhatExqRefusesAndWritesNothing(t *testing.T) {
	pool, schema := pgPool(t)
	ob, err := New(schema)
	require.NoError(t, err)
	ctx := context.Background()
	cases := []struct {
		name string
		call func(tx Tx) error
		is   error
	}{
		{"empty class", func(tx Tx) error { _, err := ob.Enqueue(ctx, tx, "q", "", nil); return err }, exq.ErrInvalidJob},
		{"bad queue", func(tx Tx) error { _, err := ob.Enqueue(ctx, tx, ":q", "W", nil); return err }, exq.ErrInvalidJob},
		{"args not a list", func(tx Tx) error { _, err := ob.Enqueue(ctx, tx, "q", "W", 5); return err }, exq.ErrInvalidJob},
		{"zero time", func(tx Tx) error { _, err := ob.EnqueueAt(ctx, tx, "q", "W", time.Time{}, nil); return err }, exq.ErrInvalidJob},
		{"bad job in a batch", func(tx Tx) error {
			_, err := ob.EnqueueAll(ctx, tx, []exq.JobSpec{{Queue: "q", Class: "W"}, {Queue: "q"}})
			return err
		}, exq.ErrInvalidJob},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := inTx(t, pool, tc.call)
			require.ErrorIs(t, err, tc.is)
		})
	}
	assert.Equal(t, 0, rows(t, pool, schema))
}

func TestRollbackLeavesNoJob(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = ob.Enqueue(ctx, tx, "q", "W", nil)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	r, err := NewRelay(pool, client(t, rdb, ns), RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	n, err := r.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	assert.Zero(t, rdb.LLen(ctx, ns+":queue:q").Val())
}

func TestATransactionThatFailsAfterEnqueueLeavesNoJob(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	err := inTx(t, pool, func(tx Tx) error {
		if _, err := ob.Enqueue(ctx, tx, "q", "W", nil); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT 1/0") // the application's own statement fails
		return err
	})
	require.Error(t, err)
	// A commit after the failure is a rollback in Postgres.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = ob.Enqueue(ctx, tx, "q", "W", nil)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO "`+schema+`".exq_outbox (jid, queue, job) VALUES ('x', 'q', 'not json')`)
	require.Error(t, err)
	assert.ErrorIs(t, tx.Commit(ctx), pgx.ErrTxCommitRollback)

	r, err := NewRelay(pool, client(t, rdb, ns), RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	n, err := r.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	assert.Zero(t, rdb.LLen(ctx, ns+":queue:q").Val())
}

func TestCommitMakesExactlyOneJobThatRuns(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	ran := newRuns()
	startNode(t, rdb, ns, ran, "q")
	runRelay(t, pool, client(t, rdb, ns), RelayOptions{Schema: schema})
	var jid string
	require.NoError(t, inTx(t, pool, func(tx Tx) (err error) {
		jid, err = ob.Enqueue(ctx, tx, "q", "W", []any{"x"})
		return err
	}))
	eventually(t, 10*time.Second, "the job runs", func() bool { return ran.snapshot()[jid] == 1 })
	eventually(t, 10*time.Second, "the row is deleted", func() bool { return rows(t, pool, schema) == 0 })
	assert.Zero(t, rdb.LLen(ctx, ns+":queue:q").Val(), "no second copy waits")
	assert.Equal(t, map[string]int{jid: 1}, ran.snapshot())
}

type Signup struct {
	UserID int `json:"user_id"`
}

func (Signup) Class() string { return "W" }
func (Signup) Queue() string { return "signups" }

func TestEveryEnqueueFormGoesThroughTheRelay(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	var jids []string
	require.NoError(t, inTx(t, pool, func(tx Tx) error {
		a, err := ob.Enqueue(ctx, tx, "q", "W", nil)
		if err != nil {
			return err
		}
		b, err := exq.EnqueueArgs(ctx, ob.In(tx), Signup{UserID: 7})
		if err != nil {
			return err
		}
		all, err := ob.EnqueueAll(ctx, tx, []exq.JobSpec{{Queue: "q", Class: "W"}, {Queue: "q", Class: "W", In: time.Hour}})
		if err != nil {
			return err
		}
		c, err := ob.EnqueueIn(ctx, tx, "q", "W", time.Hour, nil)
		if err != nil {
			return err
		}
		d, err := ob.EnqueueAt(ctx, tx, "q", "W", time.Now().Add(2*time.Hour), nil)
		if err != nil {
			return err
		}
		jids = append([]string{a, b, c, d}, all...)
		return nil
	}))
	r, err := NewRelay(pool, client(t, rdb, ns), RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	n, err := r.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, 6, n)
	assert.Equal(t, int64(2), rdb.LLen(ctx, ns+":queue:q").Val())
	signup := rdb.LRange(ctx, ns+":queue:signups", 0, -1).Val()
	require.Len(t, signup, 1)
	assert.Contains(t, signup[0], `"args":[{"user_id":7}]`)
	assert.Equal(t, int64(3), rdb.ZCard(ctx, ns+":schedule").Val())
	assert.Len(t, jids, 6)
}

func TestScheduledRowsKeepTheirDueTime(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	at := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	var jid string
	require.NoError(t, inTx(t, pool, func(tx Tx) (err error) {
		jid, err = ob.EnqueueAt(ctx, tx, "q", "W", at, nil)
		return err
	}))
	r, err := NewRelay(pool, client(t, rdb, ns), RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	_, err = r.Round(ctx)
	require.NoError(t, err)
	z := rdb.ZRangeWithScores(ctx, ns+":schedule", 0, -1).Val()
	require.Len(t, z, 1)
	assert.InDelta(t, float64(at.UnixMicro())/1e6, z[0].Score, 1e-6)
	assert.Contains(t, z[0].Member, jid)
	assert.Zero(t, rdb.LLen(ctx, ns+":queue:q").Val())

	// A due time that passed while the row waited puts the job onto its queue.
	require.NoError(t, inTx(t, pool, func(tx Tx) (err error) {
		_, err = ob.EnqueueIn(ctx, tx, "q", "W", time.Hour, nil)
		return err
	}))
	_, err = pool.Exec(ctx, `UPDATE "`+schema+`".exq_outbox SET run_at = now() - interval '1 minute'`)
	require.NoError(t, err)
	_, err = r.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), rdb.LLen(ctx, ns+":queue:q").Val())
}

func TestARepeatedPushOfOneJIDMakesOneJob(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	c := client(t, rdb, ns)
	var jid string
	require.NoError(t, inTx(t, pool, func(tx Tx) (err error) {
		jid, err = ob.Enqueue(ctx, tx, "q", "W", nil)
		return err
	}))
	// A relay that pushed the row and died before its DELETE committed.
	var doc string
	require.NoError(t, pool.QueryRow(ctx, `SELECT job::text FROM "`+schema+`".exq_outbox`).Scan(&doc))
	res, err := c.PushRelayed(ctx, 0, []exq.RelayedJob{{Job: doc}})
	require.NoError(t, err)
	assert.Equal(t, []exq.RelayResult{{JID: jid}}, res)

	r, err := NewRelay(pool, c, RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	n, err := r.Round(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, 0, rows(t, pool, schema), "the duplicate's row is deleted")
	assert.Equal(t, []string{doc}, rdb.LRange(ctx, ns+":queue:q", 0, -1).Val())
}

func TestUniqueOptionsBehaveAsADirectEnqueue(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	c := client(t, rdb, ns)
	u := exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Hour})
	first, err := c.Enqueue(ctx, "q", "W", []any{1}, u)
	require.NoError(t, err)
	var dup, other string
	require.NoError(t, inTx(t, pool, func(tx Tx) (err error) {
		if dup, err = ob.Enqueue(ctx, tx, "q", "W", []any{1}, u); err != nil {
			return err
		}
		other, err = ob.Enqueue(ctx, tx, "q", "W", []any{2}, u)
		return err
	}))
	r, err := NewRelay(pool, c, RelayOptions{Schema: schema, Logger: quietLogger()})
	require.NoError(t, err)
	_, err = r.Round(ctx)
	require.NoError(t, err)
	jobs := rdb.LRange(ctx, ns+":queue:q", 0, -1).Val()
	require.Len(t, jobs, 2, "the duplicate of %s is not written", first)
	assert.Contains(t, jobs[0], other)
	assert.NotContains(t, jobs[0]+jobs[1], dup)
	assert.Equal(t, 0, rows(t, pool, schema), "a conflict's row is done with")
	_, err = c.Enqueue(ctx, "q", "W", []any{2}, u)
	var conflict *exq.UniqueConflictError
	require.True(t, errors.As(err, &conflict))
	assert.Equal(t, other, conflict.JID, "the relayed job holds its lock")
}

func TestDatabaseSQLTransactions(t *testing.T) {
	pool, schema := pgPool(t)
	ob, _ := New(schema)
	ctx := context.Background()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = ob.Enqueue(ctx, SQLTx(tx), "q", "W", nil)
		require.NoError(t, err)
		if commit {
			require.NoError(t, tx.Commit())
		} else {
			require.NoError(t, tx.Rollback())
		}
	}
	assert.Equal(t, 1, rows(t, pool, schema))
	_, err := ob.Enqueue(ctx, SQLTx(nil), "q", "W", nil)
	require.Error(t, err)
	var _ *sql.Tx
}

// Every valid schema name has a NOTIFY channel Postgres takes (at most 63 bytes): a schema of
// 53 to 63 characters once passed Migrate and then failed every enqueue ("channel name too
// long"). Names of up to 52 characters keep the channel earlier releases used.
func TestEverySchemaNameHasAChannelPostgresTakes(t *testing.T) {
	long := "s" + strings.Repeat("x", 62)
	other := long[:50] + strings.Repeat("y", 13)
	assert.Equal(t, "exq_outbox_public", channel("public"), "the channel of earlier releases")
	assert.Equal(t, "exq_outbox_"+long[:52], channel(long[:52]))
	for _, s := range []string{long[:53], long, other} {
		assert.LessOrEqual(t, len(channel(s)), maxChannel, s)
	}
	assert.NotEqual(t, channel(long), channel(other), "two names with one prefix")

	// A 63-character schema works end to end, woken by the notification alone.
	pool, _ := pgPool(t)
	rdb, ns := redisNS(t)
	ctx := context.Background()
	schema := "t" + randomName() + strings.Repeat("x", 50)
	require.Len(t, schema, 63)
	require.NoError(t, Migrate(ctx, pool, schema))
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`) })
	ob, err := New(schema)
	require.NoError(t, err)
	runRelay(t, pool, client(t, rdb, ns), RelayOptions{Schema: schema, PollInterval: time.Hour})
	var jid string
	require.NoError(t, inTx(t, pool, func(tx Tx) (err error) { jid, err = ob.Enqueue(ctx, tx, "q", "W", nil); return err }))
	eventually(t, 10*time.Second, "the job relayed on its notification", func() bool {
		return rdb.LLen(ctx, ns+":queue:q").Val() == 1
	})
	assert.Equal(t, []string{jid}, jidsOf(t, rdb.LRange(ctx, ns+":queue:q", 0, -1).Val()))
}
