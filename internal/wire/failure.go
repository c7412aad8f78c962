package wire

import "time"

// PanicBacktraceLines is how many frames of a panic's stack a job without a "backtrace" field
// keeps in error_backtrace.
const PanicBacktraceLines = 50

// Failed rewrites the job after a failure and returns it: retry_count, error_class, the
// fields of MarkRetried, and error_backtrace (SetBacktrace). Only the fields exq owns change.
func (o *Object) Failed(queue string, count int, message, class string, isPanic bool, panicLines []string, now time.Time, unit TimeUnit) string {
	o.SetInt("retry_count", count)
	o.SetString("error_class", class)
	o.MarkRetried(queue, message, now, unit)
	o.SetBacktrace(isPanic, panicLines)
	return o.String()
}

// SetBacktrace writes error_backtrace as Sidekiq does for a job with "backtrace": true (every
// line) or N (the first N): the failure's backtrace, base64 of the zlib-deflated JSON array.
// Only a panic has one (panicLines), so for any other failure of such a job a stale
// error_backtrace, from an earlier failure, is removed. A panic in a job without the field
// keeps its first PanicBacktraceLines frames too (Sidekiq would store none: exq's choice,
// docs/jobs.md); "backtrace": false stores none.
func (o *Object) SetBacktrace(isPanic bool, panicLines []string) {
	raw, present := o.Get("backtrace")
	limit, want := BacktraceLimit(raw)
	if !present && isPanic {
		limit, want = PanicBacktraceLines, true
	}
	if !want {
		return
	}
	lines := panicLines
	if limit >= 0 && len(lines) > limit {
		lines = lines[:limit]
	}
	if len(lines) == 0 {
		o.Delete("error_backtrace")
		return
	}
	o.SetString("error_backtrace", CompressBacktrace(lines))
}

// MarkRetried sets the fields every failure, snooze and death rewrites: error_message,
// failed_at (the first time only), retried_at, and queue when it is missing. The times are
// written in the unit of the job's own timestamps (seconds or Sidekiq 8's milliseconds), so
// that no job mixes units; def, the node's, for a job that has none.
func (o *Object) MarkRetried(queue, message string, now time.Time, def TimeUnit) {
	o.SetString("error_message", message)
	unit := o.StampUnit(def)
	if !o.Has("failed_at") {
		o.SetStamp("failed_at", now, unit)
	}
	o.SetStamp("retried_at", now, unit)
	if !o.Has("queue") {
		o.SetString("queue", queue) // the scheduler routes by this field
	}
}
