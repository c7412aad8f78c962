package exq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

//go:noinline
func panickingHelper() { panic("helper blew up") }

// failedEntry runs raw on a node whose worker "W" is w and returns the rewritten document
// from retry or dead, with its fields raw.
func failedEntry(t *testing.T, o Options, w Worker, raw string) (string, map[string]json.RawMessage) {
	t.Helper()
	v := newEnv(t)
	failingNode(t, v, o, w)
	v.push("default", raw)
	testutil.WaitFor(t, "the job failed", func() bool { return v.zcard(v.keys.Retry())+v.zcard(v.keys.Dead()) == 1 })
	set := v.keys.Retry()
	if v.zcard(set) == 0 {
		set = v.keys.Dead()
	}
	doc := v.zset(set)[0].Member.(string)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(doc), &m), doc)
	return doc, m
}

func backtraceOf(t *testing.T, m map[string]json.RawMessage) []string {
	t.Helper()
	raw, ok := m["error_backtrace"]
	require.True(t, ok, "error_backtrace is written")
	var s string
	require.NoError(t, json.Unmarshal(raw, &s), "a string, as Sidekiq writes it")
	lines, err := wire.DecompressBacktrace(raw)
	require.NoError(t, err)
	return lines
}

var panics = WorkerFunc(func(context.Context, *Job) error { panickingHelper(); return nil })

// A job with "backtrace": true that panics keeps the panic's stack in error_backtrace, as
// Sidekiq stores it (base64 of zlib-deflated JSON lines), innermost frame first, and every
// other field byte for byte.
func TestPanicStoresErrorBacktraceForBacktraceTrue(t *testing.T) {
	t.Parallel()
	raw := `{"class":"W","args":[1],"queue":"default","jid":"bt1","retry":3,"backtrace":true,"bid":"b-1","tags":["x", 2],"wrapped":{"a":1.50}}`
	_, m := failedEntry(t, Options{}, panics, raw)
	lines := backtraceOf(t, m)
	require.NotEmpty(t, lines)
	assert.Contains(t, lines[0], "failure_test.go:", "the innermost frame is where the panic happened")
	assert.Contains(t, lines[0], "panickingHelper'")
	assert.Regexp(t, `^/.+\.go:\d+:in `+"`"+`.+'$`, lines[0], "Ruby's frame format, which the Web UI shows")
	for _, l := range lines {
		assert.NotContains(t, l, "runtime.gopanic", "frames of the recovery are left out")
		assert.NotContains(t, l, "(*Exq).perform.func", "frames of the recovery are left out")
	}
	assert.Greater(t, len(lines), 1, "the callers too")
	for k, want := range map[string]string{"backtrace": `true`, "bid": `"b-1"`, "tags": `["x", 2]`, "wrapped": `{"a":1.50}`, "args": `[1]`} {
		assert.Equal(t, want, string(m[k]), "field %s kept byte for byte", k)
	}
	assert.JSONEq(t, `"panic"`, string(m["error_class"]))
}

// "backtrace": N keeps the first N lines.
func TestPanicStoresTheFirstNLinesForBacktraceN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		want  int
	}{{`2`, 2}, {`"1"`, 1}} {
		_, m := failedEntry(t, Options{}, panics, `{"class":"W","args":[],"queue":"default","jid":"bt2","retry":3,"backtrace":`+tc.field+`}`)
		lines := backtraceOf(t, m)
		assert.Len(t, lines, tc.want, "backtrace %s", tc.field)
		assert.Contains(t, lines[0], "panickingHelper")
	}
}

// exq's choice: a panic keeps its stack even when the job did not ask (a Go error has no
// stack, and exq's enqueue calls cannot set the field), capped; "backtrace": false opts out.
func TestPanicWithoutBacktraceFieldStoresACappedBacktrace(t *testing.T) {
	t.Parallel()
	_, m := failedEntry(t, Options{}, panics, `{"class":"W","args":[],"queue":"default","jid":"bt3","retry":3}`)
	lines := backtraceOf(t, m)
	assert.Contains(t, lines[0], "panickingHelper")
	assert.LessOrEqual(t, len(lines), wire.PanicBacktraceLines)
	_, hasField := m["backtrace"]
	assert.False(t, hasField, "the job's own fields are not added to")

	_, m = failedEntry(t, Options{}, panics, `{"class":"W","args":[],"queue":"default","jid":"bt4","retry":3,"backtrace":false}`)
	assert.NotContains(t, m, "error_backtrace", `"backtrace": false stores none`)
}

// A Go error has no stack: an error_backtrace from an earlier failure of a job that asks for
// backtraces is removed rather than shown under the new error. Jobs that do not ask keep it.
func TestAnErrorRemovesAStaleBacktraceOnlyWhenTheJobAsksForOne(t *testing.T) {
	t.Parallel()
	fails := WorkerFunc(func(context.Context, *Job) error { return errors.New("plain error") })
	_, m := failedEntry(t, Options{}, fails, `{"class":"W","args":[],"queue":"default","jid":"bt5","retry":3,"backtrace":true,"error_backtrace":"c3RhbGU=","retry_count":1}`)
	assert.NotContains(t, m, "error_backtrace")
	_, m = failedEntry(t, Options{}, fails, `{"class":"W","args":[],"queue":"default","jid":"bt6","retry":3,"error_backtrace":"c3RhbGU=","retry_count":1}`)
	assert.Equal(t, `"c3RhbGU="`, string(m["error_backtrace"]), "unknown to this job's rules: kept byte for byte")
}

// The stack survives LogJobs, which recovers the panic before the engine does.
func TestPanicKeepsItsStackThroughLogJobs(t *testing.T) {
	t.Parallel()
	_, m := failedEntry(t, Options{Middleware: []Middleware{LogJobs(testLogger())}}, panics,
		`{"class":"W","args":[],"queue":"default","jid":"bt7","retry":3,"backtrace":true}`)
	lines := backtraceOf(t, m)
	assert.Contains(t, lines[0], "panickingHelper")
}

// Sidekiq's Web UI shows "error_class: error_message": the message of a failure exq made does
// not say again what error_class says, nor carry the "exq: " of its Go error.
func TestStoredErrorMessagesDoNotRepeatErrorClass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, class, message string
		o                    Options
		w                    Worker
		raw                  string
	}{
		{"unknown class", "exq.UnknownClass", `no worker registered for class "Nope"`, Options{RegisterGrace: NoRegisterGrace}, &recorder{},
			`{"class":"Nope","args":[],"queue":"default","jid":"m1","retry":3}`},
		{"timeout", "exq.Timeout", "ran longer than 20ms", Options{JobTimeout: 20 * time.Millisecond},
			WorkerFunc(func(ctx context.Context, _ *Job) error { <-ctx.Done(); return ctx.Err() }),
			`{"class":"W","args":[],"queue":"default","jid":"m2","retry":3}`},
		{"timeout, with what the worker returned", "exq.Timeout", "ran longer than 20ms, then returned: gave up",
			Options{JobTimeout: 20 * time.Millisecond},
			WorkerFunc(func(ctx context.Context, _ *Job) error { <-ctx.Done(); return errors.New("gave up") }),
			`{"class":"W","args":[],"queue":"default","jid":"m3","retry":3}`},
		{"panic", "panic", "helper blew up", Options{}, panics,
			`{"class":"W","args":[],"queue":"default","jid":"m4","retry":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, m := failedEntry(t, tc.o, tc.w, tc.raw)
			var class, msg string
			require.NoError(t, json.Unmarshal(m["error_class"], &class))
			require.NoError(t, json.Unmarshal(m["error_message"], &msg))
			assert.Equal(t, tc.class, class)
			assert.Equal(t, tc.message, msg)
			assert.False(t, strings.HasPrefix(msg, "exq: "))
		})
	}
	// The Go errors callers (and middleware) see keep their "exq: " prefix.
	assert.Equal(t, `exq: no worker registered for class "Nope"`, (&unknownClassError{class: "Nope"}).Error())
	assert.Equal(t, "exq: job timed out after 20ms", (&TimeoutError{After: 20 * time.Millisecond}).Error())
	// An error wrapping one of exq's keeps the wrapper's whole text.
	assert.Equal(t, `mw: exq: no worker registered for class "Nope"`, errorMessage(fmt.Errorf("mw: %w", &unknownClassError{class: "Nope"})))
}
