package exqpg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

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
// them again, which writes nothing (the jids are marked in Redis for MarkTTL) and deletes them.
// A row it cannot read, decode or push is set aside alone (failed_at and error set).
type Relay struct {
	pool *pgxpool.Pool
	push Pusher
	o    RelayOptions
	sql  relaySQL
	// afterPush, when set (tests), runs between a round's push and its delete: the window in
	// which a killed relay leaves pushed rows behind.
	afterPush func()
	// reported is the backlog of the relay's last report to Redis (-1 before the first): a
	// round that drains a reported backlog asks for a report at once.
	reported atomic.Int64
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
	r := &Relay{pool: pool, push: push, o: o, sql: relaySQL{
		take: `SELECT ` + takeColumns + ` FROM ` + t + ` WHERE failed_at IS NULL ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $1`,
		del:  `DELETE FROM ` + t + ` WHERE id = ANY($1)`,
		fail: `UPDATE ` + t + ` SET failed_at = now(), error = $2 WHERE id = $1`,
		status: `SELECT count(*) FILTER (WHERE failed_at IS NULL),
			coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE failed_at IS NULL AND isfinite(created_at))), 0)::float8,
			count(*) FILTER (WHERE failed_at IS NOT NULL) FROM ` + t,
		listen: `LISTEN "` + channel(o.Schema) + `"`,
	}}
	r.reported.Store(-1)
	return r, nil
}

// Run relays until ctx ends, then returns nil once its goroutines are done. Failures of Redis
// or Postgres are logged and retried with a capped exponential backoff: rows wait in the table,
// nothing is lost, and the relay goes on by itself when the server is back.
//
// The relay reports the outbox's status (see Reporter) every StatusInterval, soon after a round
// that drained the rows it could see or set rows aside, and once more as it returns (waiting
// at most 5 s for it), so that what tools show is never a backlog the relay has since drained.
func (r *Relay) Run(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	kick := make(chan struct{}, 1)
	rep, _ := r.push.(Reporter)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.listen(ctx, wake) }()
	go func() { defer wg.Done(); r.report(ctx, rep, kick) }()
	defer func() {
		wg.Wait()
		// The last word: the table as this relay leaves it (bounded: the caller is stopping).
		fin, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalReportTimeout)
		defer cancel()
		r.reportOnce(fin, rep)
	}()
	poll := time.NewTimer(r.o.PollInterval)
	defer poll.Stop()
	var b backoff
	for ctx.Err() == nil {
		res, err := r.round(ctx)
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
		if res.failed > 0 || (!res.more && r.reported.Load() > 0) {
			notify(kick) // rows set aside, or a reported backlog drained: say so soon
		}
		if res.more {
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

// finalReportTimeout bounds the report a relay writes as Run returns.
const finalReportTimeout = 5 * time.Second

// Round runs one round: it takes up to BatchSize rows, pushes them, deletes them and commits,
// and returns how many rows it took. Run calls it in a loop; it is exported for tools and tests
// that relay on demand. A row it cannot read or push is set aside alone (failed_at and error
// set, see readRow) and the others go on: one row never holds back the rows behind it.
func (r *Relay) Round(ctx context.Context) (int, error) {
	res, err := r.round(ctx)
	return res.taken, err
}

// roundResult is what one round did: rows taken (pushed, deleted or set aside), rows set
// aside, and whether more rows are likely waiting (a full batch, or rows left over the byte
// bound).
type roundResult struct {
	taken, failed int
	more          bool
}

// maxRoundBytes bounds the documents one round pushes in its script call (a round always takes
// its first row): 1 000 rows of 1 MiB would be a gigabyte in the relay and in Redis at once.
// Rows past the bound stay in the table for the next round.
const maxRoundBytes = 16 << 20

func (r *Relay) round(ctx context.Context) (roundResult, error) {
	var out roundResult
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return out, fmt.Errorf("exqpg: relay: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, r.sql.take, r.o.BatchSize, exq.MaxJobBytes)
	if err != nil {
		return out, fmt.Errorf("exqpg: relay: take rows: %w", err)
	}
	var taken []takenRow
	seen, bytes := 0, 0
	for rows.Next() {
		seen++
		if bytes >= maxRoundBytes {
			out.more = true // locked until this round commits, then the next round's
			continue
		}
		row, err := readRow(tx.Conn().TypeMap(), rows.FieldDescriptions(), rows.RawValues())
		if err != nil {
			rows.Close()
			return out, err
		}
		bytes += row.bytes
		taken = append(taken, row)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("exqpg: relay: read rows: %w", err)
	}
	out.taken, out.more = len(taken), out.more || seen == r.o.BatchSize
	if len(taken) == 0 {
		return out, tx.Commit(ctx)
	}
	fail := func(id int64, jid string, err error) error {
		out.failed++
		r.o.Logger.Error("exqpg: relay: row set aside, kept in the outbox with its error", "id", id, "jid", jid, "err", err)
		if _, err := tx.Exec(ctx, r.sql.fail, id, errorText(err)); err != nil {
			return fmt.Errorf("exqpg: relay: mark row %d failed: %w", id, err)
		}
		return nil
	}
	var ids []int64
	var jobs []exq.RelayedJob
	for _, row := range taken {
		if row.err != nil {
			if err := fail(row.id, "", row.err); err != nil {
				return out, err
			}
			continue
		}
		ids, jobs = append(ids, row.id), append(jobs, row.job)
	}
	done := make([]int64, 0, len(ids))
	if len(jobs) > 0 {
		res, err := r.pushIsolating(ctx, jobs)
		if err != nil && !errors.Is(err, exq.ErrNotReplicated) {
			return out, fmt.Errorf("exqpg: relay: push %d jobs: %w", len(jobs), err)
		}
		if err != nil {
			r.o.Logger.Warn("exqpg: relay: jobs written on the Redis master only", "err", err)
		}
		if len(res) != len(jobs) {
			return out, fmt.Errorf("exqpg: relay: push %d jobs: %d results", len(jobs), len(res))
		}
		if r.afterPush != nil {
			r.afterPush()
		}
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
				if err := fail(ids[i], rr.JID, rr.Err); err != nil {
					return out, err
				}
			}
		}
		if dups > 0 {
			// A relay died after its push and before its delete; these rows are done with now.
			r.o.Logger.Info("exqpg: relay: rows already pushed by an earlier round, deleted", "rows", dups)
		}
	}
	if len(done) > 0 {
		if _, err := tx.Exec(ctx, r.sql.del, done); err != nil {
			return out, fmt.Errorf("exqpg: relay: delete %d rows: %w", len(done), err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return out, fmt.Errorf("exqpg: relay: commit: %w", err)
	}
	return out, nil
}

// pushIsolating pushes jobs in one call. When Redis refuses that call for the type of a key
// (WRONGTYPE: the script checks every key before it writes anything, so nothing was written),
// one row's key may be the cause, a queue or a unique lock another program wrote with another
// type: each job is then pushed alone, and a job refused alone with WRONGTYPE gets that error
// as its result, to be set aside, unless every job is refused with one error, which is then no
// row's (the schedule set, say) but the round's.
func (r *Relay) pushIsolating(ctx context.Context, jobs []exq.RelayedJob) ([]exq.RelayResult, error) {
	res, err := r.push.PushRelayed(ctx, r.o.MarkTTL, jobs)
	if err == nil || len(jobs) == 1 || !wrongType(err) {
		return res, err
	}
	r.o.Logger.Warn("exqpg: relay: Redis refused a push for a key's type; pushing its rows one by one", "rows", len(jobs), "err", err)
	out := make([]exq.RelayResult, len(jobs))
	var notReplicated error
	refused, first := 0, ""
	for i, j := range jobs {
		one, err := r.push.PushRelayed(ctx, r.o.MarkTTL, []exq.RelayedJob{j})
		switch {
		case err != nil && wrongType(err):
			out[i] = exq.RelayResult{Err: err}
			if refused++; refused == 1 {
				first = err.Error()
			} else if first != err.Error() {
				first = "" // refusals of more than one kind
			}
			continue
		case errors.Is(err, exq.ErrNotReplicated):
			notReplicated = err
		case err != nil:
			return nil, err
		}
		if len(one) != 1 {
			return nil, fmt.Errorf("exqpg: relay: push 1 job: %d results", len(one))
		}
		out[i] = one[0]
	}
	if refused == len(jobs) && first != "" {
		return nil, err // the same refusal for every row: not a row's doing
	}
	return out, notReplicated
}

// wrongType says whether err is Redis refusing a key for its type.
func wrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE")
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
