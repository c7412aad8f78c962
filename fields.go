package exq

import (
	"encoding/json"
	"time"

	"github.com/exqgo/exq/internal/wire"
)

// DecodeBacktrace reads the error_backtrace field of a stored job (its raw JSON value): the
// compressed string Sidekiq and exq write, or the plain list older versions stored. Tools that
// show a job's details (the dashboard, the exq command) call it.
func DecodeBacktrace(raw json.RawMessage) ([]string, error) { return wire.DecompressBacktrace(raw) }

// ParseJobTime reads a timestamp field of a stored job (enqueued_at, created_at, failed_at,
// retried_at…; its raw JSON value): float seconds, or Sidekiq 8's integer milliseconds. ok
// is false when the value is not a number, or is zero.
func ParseJobTime(raw string) (t time.Time, ok bool) {
	t, _, ok = wire.ParseStamp(raw)
	return t, ok
}
