package testutil

import (
	"context"
	"net"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook that counts the commands a client sends, by name ("evalsha",
// "lrem"…), pipelines counted command by command. Add it with client.AddHook.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
	trips  int
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter { return &Counter{counts: map[string]int{}} }

// Count returns how many commands named name were sent.
func (c *Counter) Count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[strings.ToLower(name)]
}

// RoundTrips returns how many single commands and pipelines were sent.
func (c *Counter) RoundTrips() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips
}

func (c *Counter) add(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips++
	for _, cmd := range cmds {
		c.counts[strings.ToLower(cmd.Name())]++
	}
}

// DialHook passes dials through.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// ProcessHook counts one command.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts a pipeline's commands.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds...)
		return next(ctx, cmds)
	}
}
