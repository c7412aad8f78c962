package exq

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// errRateLimited is a failure whose retry a retryAfter worker chooses itself.
var errRateLimited = errors.New("rate limited")

// retryAfter fails every run with err, and says its retries run after delay for
// errRateLimited, after what Options.Backoff says otherwise (or panics, with panics set).
type retryAfter struct {
	err    error
	delay  time.Duration
	panics bool
}

func (w retryAfter) Perform(context.Context, *Job) error { return w.err }

func (w retryAfter) NextRetry(job *Job, err error) time.Duration {
	if w.panics {
		panic("no policy")
	}
	if errors.Is(err, errRateLimited) {
		return w.delay * time.Duration(job.RetryCount) // job.RetryCount: this retry's number
	}
	return 0
}

func TestWorkersNextRetryChoosesTheDelayOfItsRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		worker retryAfter
		count  int // retry_count before the run
		want   time.Duration
	}{
		{"its own delay", retryAfter{err: errRateLimited, delay: 3 * time.Hour}, 0, 3 * time.Hour},
		{"knowing which retry it is", retryAfter{err: errRateLimited, delay: 3 * time.Hour}, 1, 6 * time.Hour},
		{"zero: Options.Backoff", retryAfter{err: errors.New("boom"), delay: 3 * time.Hour}, 1, 2 * time.Minute},
		{"negative: Options.Backoff", retryAfter{err: errRateLimited, delay: -time.Hour}, 0, time.Minute},
		{"a panic: Options.Backoff", retryAfter{err: errRateLimited, delay: time.Hour, panics: true}, 0, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := newOrderRun(t, nil, func(p *runnerParts) {
				p.registry.Add("R", tc.worker)
			})
			doc := `{"class":"R","queue":"default","jid":"j1","args":[],"retry":3,"retry_count":` + strconv.Itoa(tc.count) + `}`
			o.process(doc)
			retries := o.q.Retries()
			require.Len(t, retries, 1)
			assert.Equal(t, orderNow.Add(tc.want), retries[0].At)
		})
	}
}

// TestNodeSchedulesARetryWhenTheWorkersNextRetrySays checks, on a real node and Redis, that the
// retry set's score follows the worker's NextRetry, and Options.Backoff where it says 0.
func TestNodeSchedulesARetryWhenTheWorkersNextRetrySays(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{Backoff: func(int, *Job) time.Duration { return 7 * time.Hour },
		Workers: map[string]Worker{
			"Limited": retryAfter{err: errRateLimited, delay: 3 * time.Hour},
			"Broken":  retryAfter{err: errors.New("boom"), delay: 3 * time.Hour},
		}})
	before := time.Now()
	_, err := e.Enqueue(context.Background(), "default", "Limited", nil, JID("limited"))
	require.NoError(t, err)
	_, err = e.Enqueue(context.Background(), "default", "Broken", nil, JID("broken"))
	require.NoError(t, err)
	testutil.WaitFor(t, "both jobs are in the retry set", func() bool { return v.zcard(v.keys.Retry()) == 2 })
	after := time.Now()
	due := map[string]time.Duration{}
	for _, z := range v.zset(v.keys.Retry()) {
		jid := decode(t, z.Member.(string))["jid"].(string)
		due[jid] = time.Duration(z.Score * float64(time.Second))
	}
	for jid, want := range map[string]time.Duration{"limited": 3 * time.Hour, "broken": 7 * time.Hour} {
		at := time.Unix(0, int64(due[jid]))
		assert.False(t, at.Before(before.Add(want-time.Minute)) || at.After(after.Add(want+time.Minute)),
			"%s is due at %s, %s after the enqueue", jid, at, want)
	}
}
