package exq

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/loop"
	"github.com/exqgo/exq/internal/testutil"
)

// fakeExqNode beats into the heartbeats set every interval as Exq 0.23 does (ZADD of its own
// clock's epoch seconds, no deadline published) until the test ends.
func fakeExqNode(t *testing.T, v *env, node string, interval time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			now := float64(time.Now().UnixMilli()) / 1000
			_ = v.rdb.ZAdd(ctx, v.keys.Heartbeats(), redis.Z{Score: now, Member: node}).Err()
			if !loop.Sleep(ctx, interval) {
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// Start warns when an Exq node of the fleet beats more often than this node (its window may be
// shorter than this node's beat period: it would take this node for dead and re-run its jobs),
// and when one beats less often than ForeignHeartbeatWindow (this node would rescue a live
// node's jobs); a declared ForeignHeartbeatWindow longer than the beat period silences the
// first.
func TestStartWarnsWhenExqBeatsDoNotFitTheWindows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		exqEvery time.Duration
		opts     Options
		want     string // "" for no warning
	}{
		{"Exq beats faster than this node", 100 * time.Millisecond, Options{HeartbeatInterval: time.Second}, "beats more often than this node"},
		{"Exq window declared longer than the beat", 100 * time.Millisecond, Options{HeartbeatInterval: time.Second, ForeignHeartbeatWindow: 2 * time.Second}, ""},
		{"Exq beats slower than this node", 2 * time.Second, Options{HeartbeatInterval: 400 * time.Millisecond}, ""},
		{"Exq beats slower than ForeignHeartbeatWindow", 600 * time.Millisecond, Options{HeartbeatInterval: 400 * time.Millisecond, ForeignHeartbeatWindow: 500 * time.Millisecond}, "less often than ForeignHeartbeatWindow"},
		{"declared window shorter than the beat", time.Hour, Options{HeartbeatInterval: time.Second, ForeignHeartbeatWindow: 500 * time.Millisecond}, "not shorter than ForeignHeartbeatWindow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			fakeExqNode(t, v, "exq-elixir-node", tc.exqEvery)
			var logs bytes.Buffer
			var mu sync.Mutex
			o := tc.opts
			o.Queues = []Queue{{Name: "q"}}
			o.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
			e := v.start(o)
			logged := func() string {
				mu.Lock()
				defer mu.Unlock()
				return logs.String()
			}
			if tc.want != "" {
				testutil.WaitFor(t, "the warning", func() bool { return strings.Contains(logged(), tc.want) })
				assert.Contains(t, logged(), "level=WARN")
				return
			}
			// The watch looks for 2.5 beat periods.
			time.Sleep(3 * e.opts.HeartbeatInterval)
			assert.NotContains(t, logged(), "HeartbeatWindow", logged())
			assert.NotContains(t, logged(), "Exq node", logged())
		})
	}
}

// ForeignHeartbeatWindow is the window by which Exq nodes are judged: an Exq node silent for
// 1.5 s is rescued by a node with a window of 1 s, and not by one with the default 6 min.
func TestForeignHeartbeatWindowJudgesExqNodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		window  time.Duration
		rescued bool
	}{
		{"default window", 0, false},
		{"window of 1 s", time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			ctx := context.Background()
			old := float64(time.Now().Add(-1500*time.Millisecond).UnixMilli()) / 1000
			require.NoError(t, v.rdb.ZAdd(ctx, v.keys.Heartbeats(), redis.Z{Score: old, Member: "dead-exq"}).Err())
			require.NoError(t, v.rdb.SAdd(ctx, v.keys.Queues(), "q").Err())
			raw := `{"class":"W","args":[],"queue":"q","jid":"in-flight"}`
			require.NoError(t, v.rdb.LPush(ctx, v.keys.Backup("dead-exq", "q"), raw).Err())
			v.start(Options{Queues: []Queue{{Name: "other"}}, HeartbeatInterval: 200 * time.Millisecond, ForeignHeartbeatWindow: tc.window})
			if tc.rescued {
				testutil.WaitFor(t, "the job rescued", func() bool { return len(v.list(v.keys.Backup("dead-exq", "q"))) == 0 })
				assert.Contains(t, v.list(v.keys.Queue("q")), raw)
				return
			}
			time.Sleep(time.Second) // ten beats and twenty looks for dead nodes
			assert.Equal(t, []string{raw}, v.list(v.keys.Backup("dead-exq", "q")), "a node silent for 1.5 s is alive within 6 min")
		})
	}
}

// A negative ForeignHeartbeatWindow is refused, naming the field.
func TestForeignHeartbeatWindowMustNotBeNegative(t *testing.T) {
	t.Parallel()
	_, err := Options{ForeignHeartbeatWindow: -time.Second}.withDefaults(testHooks{})
	require.ErrorIs(t, err, ErrInvalidOptions)
	assert.Contains(t, err.Error(), "ForeignHeartbeatWindow")
}
