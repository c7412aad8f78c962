package web

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// getWithin fetches path, failing (not hanging) when the handler takes longer than limit.
func (f *fixture) getWithin(path string, limit time.Duration) (int, string) {
	f.t.Helper()
	type res struct {
		code int
		body string
	}
	done := make(chan res, 1)
	go func() {
		code, body := f.get(path)
		done <- res{code, body}
	}()
	select {
	case r := <-done:
		return r.code, r.body
	case <-time.After(limit):
		f.t.Fatalf("GET %s did not answer within %s", path, limit)
		return 0, ""
	}
}

// Counters near the int64 limit (written by anything) draw a graph: the graph's top was
// computed by multiplying by ten until it passed the counter, which overflowed to 0 and never
// ended, so the dashboard and stats.json spun for ever.
func TestCountersNearTheInt64LimitStillDrawTheGraphs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	now := time.Now()
	const huge = math.MaxInt64
	require.NoError(t, f.rdb.MSet(context.Background(), f.keys.Stat("processed"), huge,
		f.keys.StatDay("processed", now), huge, f.keys.StatDay("failed", now.AddDate(0, 0, -1)), huge,
		f.keys.StatSecond("processed", now.Add(-3*time.Second)), huge, f.keys.StatSecond("failed", now.Add(-4*time.Second)), huge).Err())
	code, body := f.getWithin("/stats.json", 20*time.Second)
	require.Equal(t, http.StatusOK, code, body)
	var stats struct {
		Live chartJSON `json:"live"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &stats), body)
	for _, s := range stats.Live.Series {
		for _, d := range s.Dots {
			assert.True(t, d.Y >= 0 && d.Y <= chartH, "a dot inside the graph: %v", d)
		}
	}
	for _, tk := range stats.Live.YTicks {
		assert.True(t, tk.Pos >= 0 && tk.Pos <= chartH, "a tick inside the graph: %v", tk)
	}
	code, body = f.getWithin("/", 20*time.Second)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "<svg")
}
