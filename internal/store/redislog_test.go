package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// go-redis' own lines ("failed to dial") go to Options.Logger, not to stderr or slog.Default:
// a Logger that discards silences them.
func TestGoRedisLinesGoToTheOptionsLogger(t *testing.T) {
	// Serial: sets the process's default slog logger.
	var def testutil.LogBuffer
	was := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	defer slog.SetDefault(was)

	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t)) // nothing listens there
	url := "redis://" + addr + "/0?dial_timeout=200ms&max_retries=-1"
	// Another client open meanwhile, with a logger of its own: lines about this test's
	// clients must not reach it (go-redis dials in the background, and its lines name the
	// address, not the client).
	other := &testutil.LogBuffer{}
	otherClient := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))})
	redisLogs.add(otherClient, slog.New(slog.NewTextHandler(other, nil)))
	defer func() { redisLogs.drop(otherClient); _ = otherClient.Close() }()
	for _, tc := range []struct {
		name string
		w    io.Writer
	}{{"a logger of the user's", &testutil.LogBuffer{}}, {"a logger that discards", io.Discard}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(context.Background(), ConnOptions{URL: url, Timeout: time.Second, Logger: slog.New(slog.NewTextHandler(tc.w, nil))})
			require.ErrorIs(t, err, ErrRedisUnavailable)
			if b, ok := tc.w.(*testutil.LogBuffer); ok {
				assert.Contains(t, b.String(), "exq: go-redis: connection pool: failed to dial")
			}
		})
	}
	assert.NotContains(t, def.String(), addr, "no line about these clients went to slog.Default")
	assert.NotContains(t, other.String(), addr, "nor to the logger of another client")
	redisLogs.mu.Lock()
	defer redisLogs.mu.Unlock()
	for rdb := range redisLogs.users {
		assert.NotContains(t, fmt.Sprint(rdb), addr, "the failed client's use was dropped")
	}
}

// go-redis' line about a command that ended on a client closed meanwhile (exq closes its
// blocking idle wait's client at Stop) is Debug; every other line stays Warn.
func TestGoRedisLinesAreWarningsButTheClosedPoolsNoise(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]slog.Level{
		"exq: go-redis: Unexpected conn[7] state changed by hook to CLOSED, closing it":       slog.LevelDebug,
		"exq: go-redis: Unexpected conn[7] state changed by hook to IDLE, pooling as-is":      slog.LevelWarn,
		"exq: go-redis: connection pool: failed to dial after 5 attempts: connection refused": slog.LevelWarn,
	} {
		assert.Equal(t, want, levelOf(msg), msg)
	}
}
