package reliability_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

func quietLogger() *slog.Logger {
	if os.Getenv("EXQ_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startNode starts an in-process node, stopped when the test ends.
func startNode(t *testing.T, o exq.Options) *exq.Exq {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	e, err := exq.Start(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return e
}

// client returns a go-redis client for addr, closed when the test ends.
func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// counter is a worker that counts runs by jid.
type counter struct {
	mu   sync.Mutex
	runs map[string]int
	fn   func(ctx context.Context, job *exq.Job) error
}

func newCounter(fn func(ctx context.Context, job *exq.Job) error) *counter {
	return &counter{runs: map[string]int{}, fn: fn}
}

func (c *counter) Perform(ctx context.Context, job *exq.Job) error {
	if c.fn != nil {
		if err := c.fn(ctx, job); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.runs[job.JID]++
	c.mu.Unlock()
	return nil
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.runs {
		n += r
	}
	return n
}

func (c *counter) ran(jid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[jid] > 0
}
