package heartbeat

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

// beatAfterRead is a go-redis hook that plays an Exq node beating every spacing: after each
// read of the heartbeats (the watch's pipeline), it moves the node's score on by spacing. The
// watch judges the spacing of the scores, so the test needs no clock of its own.
type beatAfterRead struct {
	rdb     *redis.Client // another client: the hook must not see its own writes
	key     string
	node    string
	spacing time.Duration
	mu      sync.Mutex
	score   float64
}

func (b *beatAfterRead) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (b *beatAfterRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (b *beatAfterRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		b.mu.Lock()
		b.score += b.spacing.Seconds()
		s := b.score
		b.mu.Unlock()
		if werr := b.rdb.ZAdd(context.Background(), b.key, redis.Z{Score: s, Member: b.node}).Err(); werr != nil {
			return werr
		}
		return err
	}
}

// The watch warns when an Exq node's beats do not fit this node's windows, and only then: a
// node beating more often than this one (its window may be shorter than this node's beat
// period) unless a longer Exq window is declared; a node beating at ForeignHeartbeatWindow or
// less often (it would be rescued while alive); and a declared window not longer than the
// beat period, at once.
func TestWatchWarnsAboutExqBeatsThatDoNotFitTheWindows(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spacing  time.Duration // of the Exq node's beats; 0: it does not beat while watched
		period   time.Duration // this node's HeartbeatInterval
		foreign  time.Duration // ForeignHeartbeatWindow
		declared bool
		want     string // "" for no warning
	}{
		{"Exq beats more often than this node", 100 * time.Millisecond, time.Second, 6 * time.Minute, false, "beats more often than this node"},
		{"Exq beats more often, a longer Exq window declared", 100 * time.Millisecond, time.Second, 2 * time.Second, true, ""},
		{"Exq beats less often than this node, within the window", 2 * time.Second, 400 * time.Millisecond, 6 * time.Minute, false, ""},
		{"Exq beats at the window", 500 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond, true, "less often than ForeignHeartbeatWindow"},
		{"Exq beats less often than the window", 600 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond, true, "less often than ForeignHeartbeatWindow"},
		{"a declared window not longer than the beat period (the Exq node silent)", 0, time.Second, time.Second, true, "not shorter than ForeignHeartbeatWindow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			start := float64(e.serverNow(t).Unix())
			require.NoError(t, e.rdb.ZAdd(ctx, e.keys.Heartbeats(), redis.Z{Score: start, Member: "exq-elixir"}).Err())
			// A node that publishes a deadline (an exq node) beating fast is not judged.
			require.NoError(t, e.heartbeat("exq-go", nil).Join(ctx))

			opts := *e.rdb.Options()
			client := redis.NewClient(&opts)
			t.Cleanup(func() { _ = client.Close() })
			client.AddHook(&beatAfterRead{rdb: e.rdb, key: e.keys.Heartbeats(), node: "exq-elixir", spacing: tc.spacing, score: start})
			log := slog.New(slog.NewTextHandler(e.logs, nil))
			w := NewWatch(store.New(client, store.Config{Namespace: e.ns, Node: "self"}), tc.period, tc.foreign, tc.declared, 5*time.Second, log)
			w.every = time.Millisecond // the spacing is in the scores: no need to wait between looks
			w.Run(ctx)

			logged := e.logs.String()
			if tc.want == "" {
				assert.NotContains(t, logged, "level=WARN", logged)
				return
			}
			assert.Equal(t, 1, strings.Count(logged, "level=WARN"), "one warning per node: %s", logged)
			assert.Contains(t, logged, tc.want)
			assert.NotContains(t, logged, "exq-go", "exq nodes publish their window and are not judged")
		})
	}
}

// The watch looks for about 2.5 beat periods (every fifth of a period, at least 20 ms), long
// enough to see two beats of a node beating once a period, and stops early when its context ends.
func TestWatchLooksForTwoAndAHalfPeriodsOrUntilCancelled(t *testing.T) {
	for _, tc := range []struct {
		period time.Duration
		every  time.Duration
		rounds int
	}{
		{5 * time.Second, time.Second, 13},
		{time.Second, 200 * time.Millisecond, 13},
		{50 * time.Millisecond, 20 * time.Millisecond, 7},
	} {
		w := NewWatch(nil, tc.period, time.Minute, false, time.Second, slog.Default())
		assert.Equal(t, tc.every, w.every, "period %s", tc.period)
		assert.Equal(t, tc.rounds, w.rounds, "period %s", tc.period)
		assert.GreaterOrEqual(t, time.Duration(w.rounds-1)*w.every, 2*tc.period, "period %s: sees two beats of a node beating once a period", tc.period)
	}

	e := newEnv(t)
	w := NewWatch(store.New(e.rdb, store.Config{Namespace: e.ns, Node: "self"}), time.Hour, 6*time.Minute, false, time.Second,
		slog.New(slog.NewTextHandler(e.logs, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	cancel()
	select {
	case <-done:
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the watch of an hour's period did not stop when cancelled")
	}
}
