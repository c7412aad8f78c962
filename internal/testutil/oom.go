package testutil

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MemoryLimited starts a redis-server that refuses writes that need memory once it holds
// maxMB megabytes (maxmemory with the noeviction policy, as a queue's Redis must be
// configured: evicting would drop jobs).
func MemoryLimited(t testing.TB, maxMB int) *Server {
	t.Helper()
	return StartServer(t, ServerOptions{Args: []string{"--maxmemory", strconv.Itoa(maxMB) + "mb", "--maxmemory-policy", "noeviction"}})
}

// OutOfMemory fills s with filler values (keys "oom-filler:<n>", outside every test
// namespace) until it refuses a write with its OOM error, then holds it there by lowering
// maxmemory to half of what it holds: otherwise the few bytes an acknowledgement frees would
// end the state now and then. The returned function ends it: maxmemory back to what it was,
// the filler deleted. It is also called when the test ends.
func (s *Server) OutOfMemory(t testing.TB) (end func()) {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	was, err := c.ConfigGet(ctx, "maxmemory").Result()
	if err != nil || was["maxmemory"] == "" || was["maxmemory"] == "0" {
		_ = c.Close()
		t.Fatalf("%s: out of memory needs a maxmemory (see MemoryLimited): %v %v", s, was, err)
	}
	value := strings.Repeat("x", 256<<10)
	n := 0
	deadline := time.Now().Add(WaitTimeout)
	for {
		err := c.Set(ctx, "oom-filler:"+strconv.Itoa(n), value, 0).Err()
		if err != nil && strings.HasPrefix(err.Error(), "OOM ") {
			break
		}
		if err != nil || time.Now().After(deadline) {
			_ = c.Close()
			t.Fatalf("%s: filling up to maxmemory: %d values written, then %v", s, n, err)
		}
		n++
	}
	used, err := usedMemory(ctx, c)
	if err == nil {
		err = c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used/2, 10)).Err()
	}
	if err != nil {
		_ = c.Close()
		t.Fatalf("%s: hold out of memory: %v", s, err)
	}
	ended := false
	end = func() {
		if ended {
			return
		}
		ended = true
		defer c.Close()
		if err := c.ConfigSet(ctx, "maxmemory", was["maxmemory"]).Err(); err != nil {
			t.Errorf("%s: end out of memory: %v", s, err)
		}
		for i := 0; i <= n; i += 100 {
			keys := make([]string, 0, 100)
			for k := i; k < min(i+100, n+1); k++ {
				keys = append(keys, "oom-filler:"+strconv.Itoa(k))
			}
			if err := c.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("%s: delete the filler: %v", s, err)
				return
			}
		}
	}
	t.Cleanup(end)
	return end
}

// usedMemory reads used_memory from INFO memory.
func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no used_memory in INFO memory")
}
