package store

import "time"

// Limits are the cluster-wide limits of a queue, as a fetch request carries them: at most
// Global jobs running across the namespace (0: none), at most RateN starts in any window of
// RatePer (RateN 0: no rate).
type Limits struct {
	Global  int
	RateN   int
	RatePer time.Duration
}

// rateMargin stretches a rate's window: a job begins a moment after the fetch that took it,
// and the margin keeps even the times the jobs themselves see within N per Per.
const rateMargin = 0.01

// Any reports whether a limit is set: only then does a fetch number its jobs.
func (l Limits) Any() bool { return l.Global > 0 || l.RateN > 0 }

// window is the rate's window as the fetch script enforces it: Per plus the margin.
func (l Limits) window() time.Duration {
	return l.RatePer + time.Duration(float64(l.RatePer)*rateMargin)
}

// QueueLimits are the limits of the queue Name, as published in the limits hash.
type QueueLimits struct {
	Name string
	Limits
}

// AckReq is one acknowledgement of a batch: the finished job Raw taken off Queue's backup list,
// or, with Lease set, that lease of an ended job removed from Queue's leases; Epoch is the
// incarnation the job's run belongs to. Flow, for a finished job of a batch or workflow, is
// the transition recorded in the same call (AckMany).
type AckReq struct {
	Queue, Raw, Lease, Epoch string
	Flow                     *AckFlow
}

// AckFlow is the transitions of a successful job of a batch or workflow (its SettleItems, each
// with the outcome RunSucceeded, at time Now) that its acknowledgement records in the same
// atomic call as the LREM (scripts.AckSettle).
type AckFlow struct {
	Items []SettleItem
	Now   time.Time
	// Replies are the items' script replies once AckMany has written them, read with
	// BatchSettled or WorkflowSettled (nil for an item of a batch whose reply another job of
	// the same call was given).
	Replies [][]any
	// Done, when set, is called by the acker with Replies once the acknowledgement is in Redis.
	Done func(replies [][]any)
}

// Member is a member of a sorted set with its score.
type Member struct {
	Score float64
	Raw   string
}
