package exqpg

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/exqgo/exq"
)

// latestRunAt is the latest run_at the relay pushes: the last microsecond of year 9999 UTC,
// the latest due time exq schedules. Postgres holds times up to year 294276, whose
// microseconds since 1970 overflow an int64: such a row is set aside, never wrapped into a
// negative score (a job due at once).
var latestRunAt = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)

// takeColumns is what the take query returns per row, in this order: id, the job document as
// text (NULL when it is longer than exq.MaxJobBytes, so that a huge row never travels), the
// document's length in bytes, run_at. Every expression reads any value of its column: no
// cast that can fail on one row, which would fail the whole query and stop the relay.
const takeColumns = `id, CASE WHEN octet_length(job::text) <= $2 THEN job::text END, octet_length(job::text), run_at`

// errUnreadableID is the round's error when a row's id cannot be read: without it the row
// cannot be set aside, and the table is not an outbox Migrate made.
var errUnreadableID = errors.New("exqpg: relay: a row's id cannot be read")

// takenRow is one row of the take query: a job to push, or a row to set aside with err.
type takenRow struct {
	id    int64
	job   exq.RelayedJob
	bytes int
	err   error
}

// readRow reads one row of the take query from the values Postgres sent (vals, described by
// fds, decoded with m): one value at a time, so that a value that cannot be read (a NULL, an
// infinite or out-of-range time, a type the column was altered to, a document too long or not
// UTF-8) sets its row aside with an error saying why instead of failing the round. The error
// it returns is for an id it cannot read (errUnreadableID): nothing can mark that row.
func readRow(m *pgtype.Map, fds []pgconn.FieldDescription, vals [][]byte) (takenRow, error) {
	if len(fds) != 4 || len(vals) != 4 {
		return takenRow{}, fmt.Errorf("%w: %d columns, want 4", errUnreadableID, len(vals))
	}
	var id pgtype.Int8
	if err := m.Scan(fds[0].DataTypeOID, fds[0].Format, vals[0], &id); err != nil || !id.Valid {
		return takenRow{}, fmt.Errorf("%w: %v", errUnreadableID, cmpErr(err, "NULL"))
	}
	row := takenRow{id: id.Int64}
	row.job, row.bytes, row.err = readJob(m, fds[1:], vals[1:])
	return row, nil
}

func readJob(m *pgtype.Map, fds []pgconn.FieldDescription, vals [][]byte) (exq.RelayedJob, int, error) {
	var size pgtype.Int8
	if err := m.Scan(fds[1].DataTypeOID, fds[1].Format, vals[1], &size); err != nil {
		return exq.RelayedJob{}, 0, fmt.Errorf("the job's length cannot be read: %v", err)
	}
	switch {
	case !size.Valid:
		return exq.RelayedJob{}, 0, errors.New("the job is NULL")
	case size.Int64 > exq.MaxJobBytes:
		return exq.RelayedJob{}, 0, fmt.Errorf("the job takes %d bytes as JSON, more than MaxJobBytes (%d)", size.Int64, exq.MaxJobBytes)
	}
	var doc pgtype.Text
	if err := m.Scan(fds[0].DataTypeOID, fds[0].Format, vals[0], &doc); err != nil {
		return exq.RelayedJob{}, 0, fmt.Errorf("the job cannot be read as text: %v", err)
	}
	switch {
	case !doc.Valid:
		return exq.RelayedJob{}, 0, errors.New("the job is NULL")
	case len(doc.String) > exq.MaxJobBytes:
		return exq.RelayedJob{}, 0, fmt.Errorf("the job takes %d bytes as JSON, more than MaxJobBytes (%d)", len(doc.String), exq.MaxJobBytes)
	case !utf8.ValidString(doc.String):
		return exq.RelayedJob{}, 0, errors.New("the job is not valid UTF-8")
	}
	job := exq.RelayedJob{Job: doc.String}
	var at pgtype.Timestamptz
	if err := m.Scan(fds[2].DataTypeOID, fds[2].Format, vals[2], &at); err != nil {
		return exq.RelayedJob{}, len(doc.String), fmt.Errorf("run_at cannot be read as a time: %v", err)
	}
	switch {
	case !at.Valid:
		// NULL: due now.
	case at.InfinityModifier == pgtype.Infinity:
		return exq.RelayedJob{}, len(doc.String), errors.New("run_at is infinity, not a time exq can schedule")
	case at.InfinityModifier == pgtype.NegativeInfinity:
		return exq.RelayedJob{}, len(doc.String), errors.New("run_at is -infinity, not a time exq can schedule")
	case at.Time.After(latestRunAt):
		return exq.RelayedJob{}, len(doc.String), fmt.Errorf("run_at %s is after year 9999, the latest exq schedules", at.Time.UTC().Format(time.RFC3339))
	default:
		job.At = at.Time
	}
	return job, len(doc.String), nil
}

func cmpErr(err error, otherwise string) any {
	if err != nil {
		return err
	}
	return otherwise
}

// maxErrorBytes bounds the error text kept in a failed row.
const maxErrorBytes = 2000

// errorText is err as the error column keeps it: valid UTF-8 without NUL (Postgres text
// refuses both, and a refused UPDATE would fail the round: the row would hold back the
// others), at most maxErrorBytes.
func errorText(err error) string {
	s := strings.ToValidUTF8(err.Error(), "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", `\x00`)
	if len(s) > maxErrorBytes {
		cut := maxErrorBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
