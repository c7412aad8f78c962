// Package testutil gives exq's tests a ready Redis: a real redis-server (EXQ_TEST_REDIS_URL) in a
// namespace of the test's own, or an in-process miniredis for fast unit cases.
package testutil

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// RedisURLEnv names the variable that points the tests at a real redis-server.
const RedisURLEnv = "EXQ_TEST_REDIS_URL"

// RedisURL returns the real Redis URL for tests. Without it the test is skipped, except under
// CI=true, where a missing Redis fails the run instead of passing it silently.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(RedisURLEnv)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is unset under CI=true: .ci/run must start a redis-server and export it", RedisURLEnv)
		}
		t.Skipf("needs a real Redis: start a private redis-server and set %s (e.g. redis://127.0.0.1:6399/0)", RedisURLEnv)
	}
	return u
}

// Redis returns a client for the real test Redis and a namespace no other test uses. Every key
// under the namespace is deleted when the test ends.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(RedisURL(t))
	if err != nil {
		t.Fatalf("parse %s: %v", RedisURLEnv, err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		t.Fatalf("ping the test Redis: %v", err)
	}
	ns := Namespace(t)
	t.Cleanup(func() {
		DeleteNamespace(c, ns)
		_ = c.Close()
	})
	return c, ns
}

// Namespace returns a namespace unique to this test run.
func Namespace(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_", ":", "_").Replace(t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	return "exqtest-" + name + "-" + uuid.NewString()[:8]
}

// DeleteNamespace removes every key of namespace ns.
func DeleteNamespace(c redis.UniversalClient, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, ns+":*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 500 {
			c.Del(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		c.Del(ctx, keys...)
	}
}

// Miniredis returns a client for a fresh in-process miniredis, closed when the test ends.
func Miniredis(t testing.TB) (*redis.Client, *miniredis.Miniredis) {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c, m
}
