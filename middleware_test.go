package exq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// logLines collects JSON log records.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logLines) records(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		out = append(out, m)
	}
	return out
}

func (l *logLines) byJID(t *testing.T) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range l.records(t) {
		out[r["jid"].(string)] = r
	}
	return out
}

// storedRetryCount is the retry_count of the job jid in the retry or dead set.
func (v *env) storedRetryCount(jid string) any {
	v.t.Helper()
	for _, set := range []string{v.keys.Retry(), v.keys.Dead()} {
		for _, z := range v.zset(set) {
			if m := decode(v.t, z.Member.(string)); m["jid"] == jid {
				n, err := m["retry_count"].(json.Number).Float64()
				require.NoError(v.t, err)
				return n
			}
		}
	}
	v.t.Fatalf("job %s is in neither retry nor dead", jid)
	return nil
}

func TestLogJobsLogsTheOutcomeAndRetryCountAsStored(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	lines := &logLines{}
	logger := slog.New(slog.NewJSONHandler(lines, nil))
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		switch job.JID {
		case "retry", "dead":
			return errors.New("boom")
		case "panic":
			panic("kaboom")
		case "timeout":
			<-ctx.Done()
			return ctx.Err()
		case "snooze":
			return Snooze(time.Hour)
		}
		return nil
	})
	v.start(Options{Middleware: []Middleware{LogJobs(logger)}, Workers: map[string]Worker{"W": w}, JobTimeout: time.Second})
	for jid, extra := range map[string]string{
		"done":    `"retry":3`,
		"retry":   `"retry":3,"retry_count":1`, // fails a second time: stored retry_count 2
		"dead":    `"retry":2,"retry_count":2`, // no retries left: dead with retry_count 3
		"panic":   `"retry":3`,
		"timeout": `"retry":3`,
		"snooze":  `"retry":3,"retry_count":1`, // unchanged by a snooze
	} {
		v.push("default", `{"class":"W","args":["secret@example.com"],"queue":"default","jid":"`+jid+`",`+extra+`}`)
	}
	testutil.WaitFor(t, "six lines", func() bool { return len(lines.records(t)) == 6 })
	got := lines.byJID(t)
	for jid, r := range got {
		assert.Equal(t, "W", r["class"], jid)
		assert.Equal(t, "default", r["queue"], jid)
		assert.Contains(t, r, "duration", jid)
		assert.NotContains(t, r, "args", "args are never logged unless asked")
		assert.Equal(t, "exq: job "+r["outcome"].(string), r["msg"], jid)
	}
	for _, tc := range []struct {
		jid, outcome, level string
		retryCount          float64
		errorClass          string
		at                  bool
	}{
		{"done", "done", "INFO", 0, "", false},
		{"retry", "retry", "WARN", 2, "*errors.errorString", true},
		{"dead", "dead", "WARN", 3, "*errors.errorString", false},
		{"panic", "retry", "WARN", 1, "panic", true},
		{"timeout", "retry", "WARN", 1, "exq.Timeout", true},
		{"snooze", "snoozed", "INFO", 1, "", true},
	} {
		r := got[tc.jid]
		require.NotNil(t, r, tc.jid)
		assert.Equal(t, tc.outcome, r["outcome"], tc.jid)
		assert.Equal(t, tc.level, r["level"], tc.jid)
		assert.Equal(t, tc.retryCount, r["retry_count"], tc.jid)
		if tc.jid != "done" {
			assert.Equal(t, v.storedRetryCount(tc.jid), r["retry_count"], "%s: the log agrees with Redis", tc.jid)
		}
		if tc.errorClass != "" {
			assert.Equal(t, tc.errorClass, r["error_class"], tc.jid)
			assert.NotEmpty(t, r["error"], tc.jid)
		} else {
			assert.NotContains(t, r, "error", tc.jid)
		}
		if tc.at {
			at, err := time.Parse(time.RFC3339Nano, r["at"].(string))
			require.NoError(t, err, tc.jid)
			assert.True(t, at.After(time.Now()), "%s runs again later", tc.jid)
		} else {
			assert.NotContains(t, r, "at", tc.jid)
		}
	}
	assert.Equal(t, "boom", got["retry"]["error"])
}

func TestLogArgsAddsTheArgsToTheLine(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	lines := &logLines{}
	v.start(Options{Middleware: []Middleware{LogJobs(slog.New(slog.NewJSONHandler(lines, nil)), LogArgs())},
		Workers: map[string]Worker{"W": &recorder{}}})
	v.push("default", `{"class":"W","args":["secret@example.com"],"queue":"default","jid":"ok"}`)
	testutil.WaitFor(t, "one line", func() bool { return len(lines.records(t)) == 1 })
	assert.Equal(t, `["secret@example.com"]`, lines.records(t)[0]["args"])
}

func TestLogJobsSaysHandedBackForAJobAStoppingNodeGaveBack(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	lines := &logLines{}
	var started atomic.Bool
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		started.Store(true)
		<-ctx.Done()
		return ctx.Err()
	})
	e := v.start(Options{Middleware: []Middleware{LogJobs(slog.New(slog.NewJSONHandler(lines, nil)))},
		Workers: map[string]Worker{"W": w}, ShutdownTimeout: 20 * time.Millisecond})
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"slow","retry":3,"retry_count":4}`)
	testutil.WaitFor(t, "the job started", started.Load)
	require.NoError(t, e.Stop(context.Background()))
	r := lines.byJID(t)["slow"]
	require.NotNil(t, r)
	assert.Equal(t, "handed back", r["outcome"])
	assert.Equal(t, "INFO", r["level"])
	assert.Equal(t, float64(4), r["retry_count"])
	assert.Len(t, v.list(v.keys.Queue("default")), 1, "the job is back on its queue")
}

// A middleware's outcome function that panics is logged; the node and the job's outcome are
// not affected.
func TestAPanickingOutcomeFunctionDoesNotHurtTheNode(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	bad := func(next Handler) Handler {
		return func(ctx context.Context, job *Job) error {
			job.onOutcome(func(outcome) { panic("bad hook") })
			return next(ctx, job)
		}
	}
	lines := &logLines{}
	rec := &recorder{fn: func(context.Context, *Job) error { return errors.New("boom") }}
	v.start(Options{Middleware: []Middleware{bad, LogJobs(slog.New(slog.NewJSONHandler(lines, nil)))}, Workers: map[string]Worker{"W": rec}})
	for _, jid := range []string{"a", "b"} {
		v.push("default", `{"class":"W","args":[],"queue":"default","jid":"`+jid+`","retry":3}`)
	}
	testutil.WaitFor(t, "both jobs failed into retry", func() bool { return v.zcard(v.keys.Retry()) == 2 })
	testutil.WaitFor(t, "both logged", func() bool { return len(lines.records(t)) == 2 })
}

// With LogJobs on the node's own logger, a dead job is one line, not two.
func TestADeadJobIsLoggedOnceWithLogJobs(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	lines := &logLines{}
	logger := slog.New(slog.NewJSONHandler(lines, nil))
	e := v.start(Options{Logger: logger, Middleware: []Middleware{LogJobs(logger)},
		Workers: map[string]Worker{"W": WorkerFunc(func(context.Context, *Job) error { return errors.New("boom") })}})
	v.push("default", `{"class":"W","args":[],"queue":"default","jid":"dead-once","retry":0}`)
	testutil.WaitFor(t, "the job is dead", func() bool { return v.zcard(v.keys.Dead()) == 1 })
	testutil.WaitFor(t, "the slot is free", func() bool { return e.mgr.inFlight() == 0 })
	var about []map[string]any
	for _, r := range lines.records(t) {
		if r["jid"] == "dead-once" {
			about = append(about, r)
		}
	}
	require.Len(t, about, 1, "%v", about)
	assert.Equal(t, "exq: job dead", about[0]["msg"])
	assert.Equal(t, "WARN", about[0]["level"])
}
