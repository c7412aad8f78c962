package exq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

var (
	floatSeconds = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
	integerMs    = regexp.MustCompile(`^[0-9]{13}$`)
)

// A job's timestamps, read by exq whatever the Sidekiq that wrote them, and rewritten by an exq
// retry in the job's own unit: a Sidekiq 8 job gets failed_at and retried_at in integer ms, as
// Sidekiq 8's job_retry.rb (8.1.7:163-166, now_ms) writes them, a Sidekiq 7 job float seconds,
// whatever the node's MillisecondTimestamps.
func TestRetryKeepsTheUnitOfTheJobsTimestamps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		job      string
		nodeMs   bool
		want     *regexp.Regexp
		enqueued time.Time
	}{
		{"Sidekiq 8 job on a seconds node", sidekiq8Job, false, integerMs, time.UnixMilli(1796010415668)},
		{"Sidekiq 7 job on a milliseconds node", sidekiq7Job, true, floatSeconds, time.UnixMicro(1796010415668102)},
		{"Sidekiq 8 job on a milliseconds node", sidekiq8Job, true, integerMs, time.UnixMilli(1796010415668)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			seen := make(chan *Job, 1)
			rec := &recorder{fn: func(_ context.Context, j *Job) error { seen <- j; return errors.New("boom") }}
			v.start(Options{MillisecondTimestamps: tc.nodeMs, Workers: map[string]Worker{"HardJob": rec}})
			v.push("default", tc.job)
			j := <-seen
			assert.True(t, tc.enqueued.Equal(j.EnqueuedAt), "EnqueuedAt %s, want %s", j.EnqueuedAt, tc.enqueued)
			assert.Equal(t, 2026, j.CreatedAt.UTC().Year())
			testutil.WaitFor(t, "the job waits in the retry set", func() bool { return v.zcard(v.keys.Retry()) == 1 })
			doc := decodeRaw(t, v.zset(v.keys.Retry())[0].Member.(string))
			for _, f := range []string{"created_at", "enqueued_at", "failed_at", "retried_at"} {
				assert.Regexp(t, tc.want, string(doc[f]), f)
			}
			failed, _, ok := wire.ParseStamp(string(doc["failed_at"]))
			require.True(t, ok)
			assert.WithinDuration(t, time.Now(), failed, time.Minute)
		})
	}
}

// A job enqueued by a node (or client) with MillisecondTimestamps has Sidekiq 8's integer ms,
// by default exq's float seconds; its failure times follow.
func TestMillisecondTimestampsWritesSidekiq8Times(t *testing.T) {
	t.Parallel()
	for _, ms := range []bool{false, true} {
		t.Run(fmt.Sprint("ms=", ms), func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			ctx := context.Background()
			c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, MillisecondTimestamps: ms})
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Enqueue(ctx, "default", "Boom", []any{1})
			require.NoError(t, err)
			want := floatSeconds
			if ms {
				want = integerMs
			}
			doc := decodeRaw(t, v.list(v.keys.Queue("default"))[0])
			assert.Regexp(t, want, string(doc["enqueued_at"]))
			assert.Regexp(t, want, string(doc["created_at"]))
			got, _, ok := wire.ParseStamp(string(doc["enqueued_at"]))
			require.True(t, ok)
			assert.WithinDuration(t, time.Now(), got, time.Minute)

			rec := &recorder{fn: func(context.Context, *Job) error { return errors.New("boom") }}
			v.start(Options{MillisecondTimestamps: ms, Workers: map[string]Worker{"Boom": rec}})
			testutil.WaitFor(t, "the job waits in the retry set", func() bool { return v.zcard(v.keys.Retry()) == 1 })
			doc = decodeRaw(t, v.zset(v.keys.Retry())[0].Member.(string))
			assert.Regexp(t, want, string(doc["failed_at"]))
			assert.Regexp(t, want, string(doc["retried_at"]))
		})
	}
}

// Queue latency is right for both units (Sidekiq 8's calculate_latency, api.rb 8.1.7:25-36),
// and falls back to created_at, as there.
func TestQueueLatencyReadsSecondsAndMilliseconds(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	old := time.Now().Add(-90 * time.Second)
	v.push("sk7", fmt.Sprintf(`{"class":"W","args":[],"queue":"sk7","jid":"a","enqueued_at":%s}`, wire.FormatStamp(old, wire.Seconds)))
	v.push("sk8", fmt.Sprintf(`{"class":"W","args":[],"queue":"sk8","jid":"b","created_at":%[1]d,"enqueued_at":%[1]d}`, old.UnixMilli()))
	v.push("created", fmt.Sprintf(`{"class":"W","args":[],"queue":"created","jid":"c","created_at":%d}`, old.UnixMilli()))
	a, _ := v.api()
	got, err := a.QueueLatencies(context.Background())
	require.NoError(t, err)
	for _, q := range []string{"sk7", "sk8", "created"} {
		assert.InDelta(t, 90*time.Second, got[q], float64(5*time.Second), q)
	}
}

// decodeRaw splits a job document into its fields' raw JSON.
func decodeRaw(t *testing.T, raw string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(raw), &m), raw)
	return m
}
