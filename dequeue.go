package exq

// Dequeuer decides how many jobs of each queue this node may fetch now: Exq's Dequeue
// behaviour (Exq.Dequeue.Behaviour) in Go. Set it with Options.Dequeuer; nil keeps the default,
// each queue's local Concurrency, at no extra cost per job.
//
// The local limit always applies first: the poll loop offers a Dequeuer only the free slots of
// a queue (Concurrency minus its running jobs) and never fetches more than that, whatever
// Available returns. A paused queue (API.PauseQueue) gives no jobs whatever Available says.
//
// The poll loop calls the methods one at a time for a queue's admission (Available, then
// Fetched with what the fetch took), but Finished runs on the worker goroutines, concurrently
// with the poll loop and with each other: an implementation must be safe for concurrent use.
// None of them may block for long: the poll loop (or the job's worker) waits for them.
type Dequeuer interface {
	// Available returns how many of the free local slots of queue may be fetched now (0 to
	// free; more is taken as free, less than 0 as 0). It is called before every fetch, for
	// every subscribed queue with free > 0. A queue for which it returns 0 is polled again
	// after PollTimeout (or sooner, when a job ends or an enqueue wakes the node).
	Available(queue string, free int) int
	// Fetched reports that n (> 0) jobs of queue were taken from Redis and are about to run.
	// It is called before any of them can finish.
	Fetched(queue string, n int)
	// Finished reports that one job of queue fetched by this node has ended, whatever the
	// outcome (done, retried, dead, snoozed, cancelled, or handed back at shutdown).
	Finished(queue string)
	// Stopped is called once, by Stop, after the last job of this node has ended. It is not
	// called when the process dies without Stop.
	Stopped()
}

// clampAvailable bounds a Dequeuer's answer to [0, free].
func clampAvailable(n, free int) int { return min(max(n, 0), free) }
