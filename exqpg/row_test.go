package exqpg

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/exqgo/exq"
)

// The columns of the take query as Postgres describes them, in the formats pgx asks for.
var takeFields = []pgconn.FieldDescription{
	{Name: "id", DataTypeOID: pgtype.Int8OID, Format: pgtype.BinaryFormatCode},
	{Name: "job", DataTypeOID: pgtype.TextOID, Format: pgtype.TextFormatCode},
	{Name: "octet_length", DataTypeOID: pgtype.Int4OID, Format: pgtype.BinaryFormatCode},
	{Name: "run_at", DataTypeOID: pgtype.TimestamptzOID, Format: pgtype.BinaryFormatCode},
}

// y2k is Postgres' epoch for timestamps.
var y2k = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// FuzzReadRow feeds the relay's row reader any values for its columns (a NULL where a flag
// says so) and checks that it never panics, that a row it takes is one exq can push (a
// document within MaxJobBytes, valid UTF-8, a due time that is zero or within year 9999) and
// that an 8-byte run_at reads as the time Postgres meant, or is set aside when it is infinite
// or after year 9999: never wrapped. What it keeps as an error is text Postgres takes.
func FuzzReadRow(f *testing.F) {
	f.Add(int64(1), false, []byte(`{"class":"W","args":[],"queue":"q","jid":"j"}`), false, int32(46), false, pgMicros(0))
	f.Add(int64(2), false, []byte(`{}`), false, int32(2), false, pgMicros(math.MaxInt64))
	f.Add(int64(3), false, []byte(`{}`), false, int32(2), false, pgMicros(math.MinInt64))
	f.Add(int64(4), false, []byte(`{}`), false, int32(2), false, pgMicros(9223371331200000000-1))
	f.Add(int64(5), true, []byte(nil), true, int32(0), true, []byte(nil))
	f.Add(int64(6), false, []byte("\xff\x00"), false, int32(2), false, []byte{1, 2, 3})
	f.Add(int64(7), false, []byte(`{}`), false, int32(exq.MaxJobBytes+1), false, pgMicros(-1))
	f.Fuzz(func(t *testing.T, id int64, docNull bool, doc []byte, sizeNull bool, size int32, atNull bool, at []byte) {
		vals := [][]byte{be64(id), doc, be32(size), at}
		if docNull {
			vals[1] = nil
		}
		if sizeNull {
			vals[2] = nil
		}
		if atNull {
			vals[3] = nil
		}
		row, err := readRow(pgtype.NewMap(), takeFields, vals)
		if err != nil {
			t.Fatalf("a readable id refused: %v", err)
		}
		if row.id != id {
			t.Fatalf("id %d read as %d", id, row.id)
		}
		if row.err != nil {
			if s := errorText(row.err); !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > maxErrorBytes+len("…") {
				t.Fatalf("error text Postgres refuses: %q", s)
			}
		} else {
			if len(row.job.Job) > exq.MaxJobBytes || !utf8.ValidString(row.job.Job) || row.bytes != len(row.job.Job) {
				t.Fatalf("took a document exq cannot push: %d bytes, valid UTF-8 %t", len(row.job.Job), utf8.ValidString(row.job.Job))
			}
			if row.job.At.After(latestRunAt) {
				t.Fatalf("took a due time after year 9999: %s", row.job.At)
			}
		}
		if docNull || sizeNull || size > exq.MaxJobBytes || !utf8.Valid(doc) || len(doc) > exq.MaxJobBytes {
			if row.err == nil {
				t.Fatal("took a NULL, too long or invalid document")
			}
			return
		}
		switch want := pgTime(at); {
		case atNull:
			if row.err != nil || !row.job.At.IsZero() {
				t.Fatalf("a NULL run_at is now: %v, %s", row.err, row.job.At)
			}
		case len(at) != 8:
			if row.err == nil {
				t.Fatalf("took a run_at of %d bytes", len(at))
			}
		case want == nil:
			if row.err == nil || !strings.Contains(row.err.Error(), "infinity") {
				t.Fatalf("an infinite run_at: %v", row.err)
			}
		case !inPostgresRange(at):
			// No value Postgres sends: pgx may refuse it (out of range) or read it; a time taken
			// is the one meant, never a wrapped one.
			if row.err == nil && !row.job.At.Equal(*want) {
				t.Fatalf("run_at %s read as %s", want, row.job.At)
			}
		case want.After(latestRunAt):
			if row.err == nil || !strings.Contains(row.err.Error(), "after year 9999") {
				t.Fatalf("run_at %s: %v", want, row.err)
			}
		default:
			if row.err != nil || !row.job.At.Equal(*want) {
				t.Fatalf("run_at %s read as %s (%v)", want, row.job.At, row.err)
			}
		}
	})
}

// pgTime is the time an 8-byte binary timestamptz stands for (nil for the infinities),
// computed without int64 arithmetic that could wrap.
func pgTime(b []byte) *time.Time {
	if len(b) != 8 {
		return nil
	}
	us := int64(binary.BigEndian.Uint64(b))
	if us == math.MaxInt64 || us == math.MinInt64 {
		return nil
	}
	sec := new(big.Int).Div(big.NewInt(us), big.NewInt(1e6)) // rounds toward -inf for us < 0
	rem := new(big.Int).Sub(big.NewInt(us), new(big.Int).Mul(sec, big.NewInt(1e6)))
	sec.Add(sec, big.NewInt(y2k.Unix()))
	if !sec.IsInt64() {
		t := latestRunAt.Add(time.Hour)
		return &t
	}
	t := time.Unix(sec.Int64(), rem.Int64()*1000)
	return &t
}

// inPostgresRange says whether an 8-byte binary timestamptz is within Postgres' range: 4714-11-24
// BC to 294276-12-31 (MIN_TIMESTAMP and END_TIMESTAMP in microseconds since 2000).
func inPostgresRange(b []byte) bool {
	us := int64(binary.BigEndian.Uint64(b))
	return us >= -211813488000000000 && us < 9223371331200000000
}

func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// pgMicros is a seed's run_at: v microseconds since 2000 as Postgres sends it.
func pgMicros(v int64) []byte { return be64(v) }

// A readRow error is only for the id: a row whose id is NULL cannot be marked.
func TestReadRowRefusesAnUnreadableIDAndNothingElse(t *testing.T) {
	_, err := readRow(pgtype.NewMap(), takeFields, [][]byte{nil, nil, nil, nil})
	if !errors.Is(err, errUnreadableID) {
		t.Fatalf("a NULL id: %v", err)
	}
	row, err := readRow(pgtype.NewMap(), takeFields, [][]byte{be64(1), nil, nil, nil})
	if err != nil || row.err == nil || !strings.Contains(row.err.Error(), "NULL") {
		t.Fatalf("a NULL job: %v, %v", err, row.err)
	}
}
