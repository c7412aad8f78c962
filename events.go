package exq

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/exqgo/exq/internal/eventorder"
)

// EventKind says what an Event reports.
type EventKind uint8

// The events a node (and a Client, for JobEnqueued) reports to its Listeners.
const (
	// JobEnqueued: an Enqueue call wrote a job (At is set for a scheduled one).
	JobEnqueued EventKind = iota + 1
	// JobStarted: a worker is about to run the job.
	JobStarted
	// JobSucceeded: the job ran without error (its acknowledgement is on its way to Redis).
	JobSucceeded
	// JobRetried: the job failed and runs again at At (Err is the failure).
	JobRetried
	// JobDied: the job failed for good and went to the dead set (Err is the failure), or its
	// document could not be read at all (Class is then empty).
	JobDied
	// JobSnoozed: the worker asked to run the job again at At.
	JobSnoozed
	// JobHandedBack: Stop put the unfinished job back at the front of its queue; or this node
	// was taken for dead while the job ran (it could not beat past its window), another node
	// put the job back, and the run's outcome was not written.
	JobHandedBack
	// JobNotStored: the job's outcome could not be written (Redis did not answer); the job stays
	// in this node's backup list and runs again after a rescue.
	JobNotStored
	// JobsRescued: this node moved Count jobs of dead node From back to their queue Queue.
	JobsRescued
	// NodeStarted: Start finished.
	NodeStarted
	// NodeQuiet: the node fetches no more jobs (Quiet, a TSTP or TERM signal).
	NodeQuiet
	// NodeStopping: Stop began.
	NodeStopping
	// NodeStopped: Stop ended.
	NodeStopped
	// RedisLost: fetching jobs failed (Err); the node backs off until Redis answers.
	RedisLost
	// RedisBack: fetching works again, Duration after RedisLost.
	RedisBack
	// BatchCallback: the job JID (of batch Flow) ended a run, and that fired the batch's
	// callback Callback ("success", "complete" or "death"): its job is enqueued. Reported at
	// most once per callback, by the node whose write fired it (not when that write's reply
	// was lost: the callback job itself is enqueued once either way).
	BatchCallback
	// WorkflowReleased: the job JID (of workflow Flow) ended for good, and that pushed Count of
	// its dependents to their queues (and canceled Canceled of them); Callback is "finished"
	// when it was the workflow's last job. Reported at most once, by the node whose write did
	// it (not when that write's reply was lost).
	WorkflowReleased
	// ForeignRun: this node saw the job JID of batch or workflow Flow running on node From, a
	// Sidekiq or Exq node, which records nothing there (docs/workflows.md). Once per job.
	ForeignRun
	// JobExpired: the job was not run because its expiry (ExpiresIn, ExpiresAt) had passed by
	// the Redis server's clock when it was fetched; At is the expiry. It was dropped, or with
	// Options.KeepExpiredJobs moved to the dead set.
	JobExpired
)

var eventNames = [...]string{"", "job_enqueued", "job_started", "job_succeeded", "job_retried", "job_died", "job_snoozed",
	"job_handed_back", "job_not_stored", "jobs_rescued", "node_started", "node_quiet", "node_stopping", "node_stopped",
	"redis_lost", "redis_back", "batch_callback", "workflow_released", "foreign_run",
	"job_expired"}

// String names the kind: "job_succeeded", "redis_lost", …
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k != 0 {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// Event is one thing that happened to a job or to the node. Fields that do not apply to the
// Kind are zero.
type Event struct {
	Kind EventKind
	// Time is when it happened.
	Time time.Time
	// Node is the node that reports it ("" for a Client).
	Node string
	// Queue, Class and JID name the job (JobsRescued: Queue only).
	Queue, Class, JID string
	// RetryCount is the job's retry_count as stored after the event.
	RetryCount int
	// Duration is the run's length for the outcomes of a run (JobSucceeded, JobRetried,
	// JobDied, JobSnoozed, JobHandedBack, JobNotStored), and how long Redis was lost for
	// RedisBack.
	Duration time.Duration
	// At is when the job runs again (JobRetried, JobSnoozed), is due (a scheduled
	// JobEnqueued), or expired (JobExpired).
	At time.Time
	// Err is the failure (JobRetried, JobDied, JobNotStored) or Redis' error (RedisLost).
	Err error
	// Count and From: JobsRescued moved Count jobs of dead node From; WorkflowReleased pushed
	// Count jobs; ForeignRun saw the job on node From.
	Count int
	From  string
	// Flow is the batch (BatchCallback, ForeignRun) or workflow (WorkflowReleased, ForeignRun)
	// id; Callback the callback that fired, or "finished"; Canceled how many dependents a
	// WorkflowReleased canceled.
	Flow, Callback string
	Canceled       int
}

// Listener receives events. It is called synchronously on the goroutine where the event
// happened (a worker's, the poll loop's), so it must be quick and must not block: hand slow
// work to a goroutine or a buffered channel. A Listener that panics is logged and skipped.
// A node's events of one job arrive in order: JobEnqueued when this node wrote the job (a
// worker that fetched it first waits with JobStarted until then), JobStarted, the run's
// outcome, and the next run's JobStarted only after a JobRetried or JobSnoozed. Events of
// different jobs interleave, and events that different nodes (or a Client) report go to
// their own Listeners with no order between them.
type Listener func(Event)

// listeners calls each of its Listeners with an event. The zero value has none, and callers
// check has() before they build an Event, so a node without listeners pays nothing per job.
type listeners struct {
	fns  []Listener
	node string
	log  *slog.Logger
	// order holds a job's JobStarted back until the event of the write that made it runnable
	// (eventorder.Order); nil for a Client, which runs no jobs.
	order *eventorder.Order
}

func (ls listeners) has() bool { return len(ls.fns) > 0 }

func (ls listeners) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.Node = ls.node
	for _, l := range ls.fns {
		ls.call(l, ev)
	}
}

func (ls listeners) call(l Listener, ev Event) {
	defer func() {
		if v := recover(); v != nil && ls.log != nil {
			ls.log.Error("exq: a Listener panicked", "event", ev.Kind.String(), "panic", v)
		}
	}()
	l(ev)
}

// outcomeEvents maps a stored outcome to its event.
var outcomeEvents = map[string]EventKind{
	"done": JobSucceeded, "retry": JobRetried, "dead": JobDied, "snoozed": JobSnoozed,
	"handed back": JobHandedBack, "rescued": JobHandedBack, "left in backup": JobNotStored,
	"interrupted": JobHandedBack, // an iteration the node's stop interrupted (iteration.go)
}

// jobOutcome reports the outcome of a run that took d.
func (ls listeners) jobOutcome(job *Job, o outcome, d time.Duration) {
	ls.emit(Event{Kind: outcomeEvents[o.name], Queue: job.Queue, Class: job.Class, JID: job.JID, RetryCount: o.retryCount,
		Duration: d, At: o.at, Err: o.err})
}
