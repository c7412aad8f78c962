package exq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// A retry_count written by another runtime (or by hand) is read as: a non-negative integer is
// the failures so far; a negative, fractional, non-numeric or null one is 0; one beyond the
// int range is "retries exhausted". Whatever it is, the failure lands in retry or dead with a
// due time in the future and never panics or overflows.
func TestHostileRetryCountFailsIntoRetryOrDead(t *testing.T) {
	t.Parallel()
	const maxExqBackoff = 309*309*309*309 + 15 // seconds, before the random part
	for _, tc := range []struct {
		name, retry, count string
		wantSet            string // "retry" or "dead"
		wantCount          string // retry_count written
		minDelay, maxDelay float64
	}{
		{"negative", `25`, `-5`, "retry", "1", 16, 16 + 60},
		{"minus 1e300", `25`, `-1e300`, "retry", "1", 16, 16 + 60},
		{"fraction", `25`, `2.5`, "retry", "1", 16, 16 + 60},
		{"string", `25`, `"3"`, "retry", "1", 16, 16 + 60},
		{"null", `25`, `null`, "retry", "1", 16, 16 + 60},
		{"object", `25`, `{"n":3}`, "retry", "1", 16, 16 + 60},
		{"integral float", `25`, `3.0`, "retry", "4", 4*4*4*4 + 15, 4*4*4*4 + 15 + 150},
		{"1e300", `25`, `1e300`, "dead", fmt.Sprint(math.MaxInt), 0, 0},
		{"1e400, beyond float64", `25`, `1e400`, "dead", fmt.Sprint(math.MaxInt), 0, 0},
		{"huge int", `25`, `99999999999999999999999`, "dead", fmt.Sprint(math.MaxInt), 0, 0},
		{"huge int with a huge limit", `9000000000000000000`, `99999999999999999999999`, "dead", fmt.Sprint(math.MaxInt), 0, 0},
		{"largest int64", `9000000000000000000`, `9223372036854775807`, "dead", fmt.Sprint(math.MaxInt), 0, 0},
		{"backoff capped", `1000000`, `999998`, "retry", "999999", maxExqBackoff, maxExqBackoff + 30*310},
		{"beyond the cap by one", `1000000`, `309`, "retry", "310", maxExqBackoff, maxExqBackoff + 30*310},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t)
			e, clock := failingNode(t, v, Options{}, WorkerFunc(func(context.Context, *Job) error { return errors.New("boom") }))
			tail := `,"bid":"b-1","tags":["x"],"odd":{"n":1e5, "s" : "keep me"}`
			raw := `{"class":"W","args":[],"queue":"default","jid":"h1","retry":` + tc.retry + `,"retry_count":` + tc.count + tail + `}`
			v.push("default", raw)
			testutil.WaitFor(t, "the job failed into retry or dead", func() bool {
				return v.zcard(v.keys.Retry())+v.zcard(v.keys.Dead()) == 1 && len(v.list(v.keys.Backup(e.NodeID(), "default"))) == 0
			})
			key := v.keys.Retry()
			if tc.wantSet == "dead" {
				key = v.keys.Dead()
			}
			zs := v.zset(key)
			require.Len(t, zs, 1, "the job is in %s", tc.wantSet)
			doc := zs[0].Member.(string)
			assert.Contains(t, doc, tail, "unknown fields kept byte for byte")
			assert.Equal(t, 1, strings.Count(doc, `"retry_count":`), "one retry_count, rewritten in place")
			m := decode(t, doc)
			assert.Equal(t, tc.wantCount, m["retry_count"].(fmt.Stringer).String())
			delay := zs[0].Score - float64(clock.now().Unix())
			if tc.wantSet == "dead" {
				assert.Zero(t, delay, "scored with the time of death")
				return
			}
			assert.GreaterOrEqual(t, delay, tc.minDelay, "due in the future, never in the past")
			assert.LessOrEqual(t, delay, tc.maxDelay)
		})
	}
}

func TestExqBackoffIsCappedAndNeverNegative(t *testing.T) {
	t.Parallel()
	const capLo = time.Duration(309*309*309*309+15) * time.Second
	const capHi = capLo + 30*310*time.Second
	for _, tc := range []struct {
		name   string
		n      int
		lo, hi time.Duration
	}{
		{"zero", 0, 15 * time.Second, 45 * time.Second},
		{"negative", -3, 15 * time.Second, 45 * time.Second},
		{"most negative", math.MinInt, 15 * time.Second, 45 * time.Second},
		{"largest that fits", 309, capLo, capHi},
		{"first that would overflow", 310, capLo, capHi},
		{"huge", 1 << 40, capLo, capHi},
		{"largest int", math.MaxInt, capLo, capHi},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 200; i++ {
				d := ExqBackoff(tc.n, nil)
				require.GreaterOrEqual(t, d, tc.lo)
				require.LessOrEqual(t, d, tc.hi)
			}
		})
	}
}

func TestBackoffOptionReturningNegativeHugeOrPanickingGivesAFutureDueTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		backoff func(int, *Job) time.Duration
		n       int
		lo, hi  time.Duration
	}{
		{"negative", func(int, *Job) time.Duration { return -time.Hour }, 1, 0, 0},
		{"most negative", func(int, *Job) time.Duration { return math.MinInt64 }, 1, 0, 0},
		{"huge", func(int, *Job) time.Duration { return math.MaxInt64 }, 1, math.MaxInt64, math.MaxInt64},
		{"panics, with a hostile count", func(int, *Job) time.Duration { panic("no") }, math.MaxInt,
			time.Duration(309*309*309*309+15) * time.Second, time.Duration(309*309*309*309+15+30*310) * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rn := newRunner(runnerParts{defaultBackoff: tc.backoff, log: testLogger()})
			d := rn.backoff(tc.n, &Job{}, errors.New("boom"))
			assert.GreaterOrEqual(t, d, tc.lo)
			assert.LessOrEqual(t, d, tc.hi)
			now := time.Unix(1796010415, 0)
			assert.False(t, now.Add(d).Before(now), "the due time is never in the past")
		})
	}
}

// A count beyond the int range must not wrap around to a negative number on conversion, and
// adding the next failure to it must not overflow.
func TestJobRetryCountFromHostileDocuments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		count string
		want  int
	}{
		{`3`, 3}, {`3.0`, 3}, {`3.5`, 0}, {`-1`, 0}, {`-1e300`, 0}, {`"3"`, 0}, {`null`, 0}, {`true`, 0},
		{`1e300`, math.MaxInt - 1}, {`1e400`, math.MaxInt - 1}, {`9223372036854775807`, math.MaxInt - 1},
		{`99999999999999999999999`, math.MaxInt - 1},
	} {
		t.Run(tc.count, func(t *testing.T) {
			raw := `{"class":"W","args":[],"queue":"q","jid":"j","retry_count":` + tc.count + `}`
			r := record(raw, 0, "")
			j, err := r.Job()
			require.NoError(t, err)
			assert.Equal(t, tc.want, j.RetryCount)
			assert.Equal(t, raw, r.Raw, "reading a count never changes the document")
		})
	}
}
