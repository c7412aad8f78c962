package exqpg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/exqgo/exq"
)

// Pusher is where a relay pushes jobs: an *exq.Client, or an *exq.Exq to run the relay inside
// a node (its Redis connection and namespace).
type Pusher interface {
	PushRelayed(ctx context.Context, markTTL time.Duration, jobs []exq.RelayedJob) ([]exq.RelayResult, error)
}

// Relay moves committed outbox rows to Redis. Any number of relays, in one process or many,
// may run on one table: each round takes a batch of rows with FOR UPDATE SKIP LOCKED, pushes
// it with exq's idempotent push, deletes the rows and commits. A relay that dies anywhere in
// a round leaves its rows locked only until Postgres ends its session; the next relay pushes
// them again, which writes nothing (the jids are marked in Redis) and deletes them.
type Relay struct {
	pool *pgxpool.Pool
	push Pusher
	o    RelayOptions
	sql  relaySQL
	// afterPush, when set (tests), runs between a round's push and its delete: the window in
	// which a killed relay leaves pushed rows behind.
	afterPush func()
}

type relaySQL struct {
	take, del, fail, status, listen string
}

// NewRelay returns a relay from the outbox table in o.Schema of pool's database to push. Run
// runs it.
func NewRelay(pool *pgxpool.Pool, push Pusher, o RelayOptions) (*Relay, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: the pool is nil", ErrInvalidOptions)
	}
	if push == nil {
		return nil, fmt.Errorf("%w: the pusher is nil", ErrInvalidOptions)
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	t := `"` + o.Schema + `".exq_outbox`
	return &Relay{pool: pool, push: push, o: o, sql: relaySQL{
		take: `SELECT id, job::text, run_at FROM ` + t + ` WHERE failed_at IS NULL ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $1`,
		del:  `DELETE FROM ` + t + ` WHERE id = ANY($1)`,
		fail: `UPDATE ` + t + ` SET failed_at = now(), error = $2 WHERE id = $1`,
		status: `SELECT count(*) FILTER (WHERE failed_at IS NULL),
			coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE failed_at IS NULL)), 0)::float8,
			count(*) FILTER (WHERE failed_at IS NOT NULL) FROM ` + t,
		listen: `LISTEN "` + channel(o.Schema) + `"`,
	}}, nil
}

// Run relays until ctx ends, then returns nil once its goroutines are done. Failures of Redis
// or Postgres are logged and retried with a capped exponential backoff: rows wait in the table,
// nothing is lost, and the relay goes on by itself when the server is back.
func (r *Relay) Run(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.listen(ctx, wake) }()
	go func() { defer wg.Done(); r.report(ctx) }()
	defer wg.Wait()
	poll := time.NewTimer(r.o.PollInterval)
	defer poll.Stop()
	var b backoff
	for ctx.Err() == nil {
		n, err := r.Round(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			d := b.next(r.o.MaxBackoff)
			r.o.Logger.Warn("exqpg: relay round failed; rows wait in the outbox", "err", err, "retry_in", d)
			sleep(ctx, d)
			continue
		}
		b.reset()
		if n == r.o.BatchSize {
			continue // more rows are likely waiting
		}
		poll.Reset(r.o.PollInterval)
		select {
		case <-ctx.Done():
		case <-wake:
		case <-poll.C:
		}
	}
	return nil
}

// Round runs one round: it takes up to BatchSize rows, pushes them, deletes them and commits,
// and returns how many rows it took. Run calls it in a loop; it is exported for tools and tests
// that relay on demand.
func (r *Relay) Round(ctx context.Context) (int, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("exqpg: relay: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, r.sql.take, r.o.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("exqpg: relay: take rows: %w", err)
	}
	var ids []int64
	var jobs []exq.RelayedJob
	for rows.Next() {
		var id int64
		var job string
		var runAt *time.Time
		if err := rows.Scan(&id, &job, &runAt); err != nil {
			rows.Close()
			return 0, fmt.Errorf("exqpg: relay: read rows: %w", err)
		}
		j := exq.RelayedJob{Job: job}
		if runAt != nil {
			j.At = *runAt
		}
		ids = append(ids, id)
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("exqpg: relay: read rows: %w", err)
	}
	if len(ids) == 0 {
		return 0, tx.Commit(ctx)
	}
	res, err := r.push.PushRelayed(ctx, r.o.MarkTTL, jobs)
	if err != nil && !errors.Is(err, exq.ErrNotReplicated) {
		return 0, fmt.Errorf("exqpg: relay: push %d jobs: %w", len(jobs), err)
	}
	if err != nil {
		r.o.Logger.Warn("exqpg: relay: jobs written on the Redis master only", "err", err)
	}
	if r.afterPush != nil {
		r.afterPush()
	}
	done := make([]int64, 0, len(ids))
	dups := 0
	for i, rr := range res {
		var conflict *exq.UniqueConflictError
		switch {
		case rr.Err == nil:
			if rr.Duplicate {
				dups++
			}
			done = append(done, ids[i])
		case errors.As(rr.Err, &conflict):
			// As a direct enqueue: a duplicate of a unique job is not written.
			r.o.Logger.Info("exqpg: relay: unique job not written, its lock is held", "jid", rr.JID, "holder", conflict.JID)
			done = append(done, ids[i])
		default:
			r.o.Logger.Error("exqpg: relay: row refused, kept in the outbox with its error", "id", ids[i], "jid", rr.JID, "err", rr.Err)
			if _, err := tx.Exec(ctx, r.sql.fail, ids[i], rr.Err.Error()); err != nil {
				return 0, fmt.Errorf("exqpg: relay: mark row %d failed: %w", ids[i], err)
			}
		}
	}
	if dups > 0 {
		// A relay died after its push and before its delete; these rows are done with now.
		r.o.Logger.Info("exqpg: relay: rows already pushed by an earlier round, deleted", "rows", dups)
	}
	if _, err := tx.Exec(ctx, r.sql.del, done); err != nil {
		return 0, fmt.Errorf("exqpg: relay: delete %d rows: %w", len(done), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("exqpg: relay: commit: %w", err)
	}
	return len(ids), nil
}

// listen holds a connection of its own that LISTENs on the outbox's channel and signals wake
// for each notification, reconnecting with a backoff when the connection fails.
func (r *Relay) listen(ctx context.Context, wake chan<- struct{}) {
	var b backoff
	for ctx.Err() == nil {
		err := r.listenOnce(ctx, wake, &b)
		if ctx.Err() != nil {
			return
		}
		d := b.next(r.o.MaxBackoff)
		r.o.Logger.Warn("exqpg: relay: LISTEN connection failed; polling meanwhile", "err", err, "retry_in", d)
		sleep(ctx, d)
	}
}

func (r *Relay) listenOnce(ctx context.Context, wake chan<- struct{}, b *backoff) error {
	pc, err := r.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection leaves the pool for good: it is in LISTEN mode.
	conn := pc.Hijack()
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, r.sql.listen); err != nil {
		return err
	}
	b.reset()
	notify(wake) // rows committed while not listening
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		notify(wake)
	}
}

func notify(wake chan<- struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// backoff is a capped exponential wait: 100 ms, 200 ms, … up to a cap.
type backoff struct{ d time.Duration }

func (b *backoff) next(maxWait time.Duration) time.Duration {
	if b.d == 0 {
		b.d = 100 * time.Millisecond
	} else {
		b.d *= 2
	}
	b.d = min(b.d, maxWait)
	return b.d
}

func (b *backoff) reset() { b.d = 0 }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
