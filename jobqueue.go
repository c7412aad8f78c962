package exq

import (
	"context"
	"time"

	"github.com/exqgo/exq/internal/acker"
	"github.com/exqgo/exq/internal/scheduler"
	"github.com/exqgo/exq/internal/store"
)

// The JobQueue is the engine's one seam to Redis: every part of a node that moves jobs (the
// manager's poll loop, the runner and its acker, the scheduler) reaches Redis through a small
// interface it declares itself, listing only the calls it makes, and *store.Store (where every
// Redis command lives) implements them all. A test gives a part a fake instead
// (internal/testutil/fakequeue), which can fail a call, hold it, or do it and lose the reply, and so
// checks the order of a run's writes without Redis and without timing.
//
// What each part calls:
//   - managerQueue (manager.go): fetch, reconcile, hand back and sweep the backup lists.
//   - runQueue (below): a run's outcome, through the ack, retry, dead and settle scripts.
//   - acker.Store: the pipelined acknowledgements and lease releases.
//   - scheduler.Store: due scheduled and retry jobs moved to their queues.
//
// The enqueuer, the API, the heartbeat and the pinger take the *store.Store itself: their
// calls go through internal packages (flows, periodic, heartbeat) that are built on it.
type jobQueue interface {
	managerQueue
	runQueue
	acker.Store
	scheduler.Store
}

var _ jobQueue = (*store.Store)(nil)

// runQueue is the JobQueue as a run writes its outcome (worker.go, retry.go). Each write but
// Settle names the incarnation of the node the run's fetch ran as (epoch): the scripts write
// nothing for a run from before the node was buried, whose job another node rescued.
type runQueue interface {
	// Ack takes a job that succeeded off its backup list and releases its unique lock
	// (token); the acker acknowledges the jobs that hold no lock.
	Ack(ctx context.Context, queue, raw, token, jid, epoch string) error
	// Retry moves a failed or snoozed job from its backup list to the retry set, due at at.
	Retry(ctx context.Context, queue, raw, doc string, at time.Time, epoch string) (bool, error)
	// RetryKeyed is Retry for a keyed job: it waits in its queue's delayed set, and with
	// hold its key starts nothing else before it.
	RetryKeyed(ctx context.Context, queue, key, jid string, hold bool, raw, doc string, at time.Time, epoch string) (bool, error)
	// Dead moves a job from its backup list to the dead set, trimmed to keepFor and keepMax.
	Dead(ctx context.Context, queue, raw, doc string, now time.Time, keepFor time.Duration, keepMax int, token, jid, epoch string) (bool, error)
	// Settle records the end of a run in its batch or workflow, before any of the above.
	Settle(item store.SettleItem, now func() time.Time, timeout time.Duration) ([]any, error)
	// Unlock releases a unique lock held until the job starts.
	Unlock(ctx context.Context, token, jid string) error
	// PutBack returns a job whose class has no worker yet to its queue.
	PutBack(ctx context.Context, queue, raw string) (bool, error)
	// Requeue moves raws from this node's backup list of queue back to the queue's front (an
	// interrupted iteration).
	Requeue(ctx context.Context, queue string, raws []string) (int, error)
	// BackupListName names the backup list of queue, for the logs.
	BackupListName(queue string) string
}
