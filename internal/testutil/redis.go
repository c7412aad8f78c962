// Package testutil gives exq's tests a ready Redis: a real redis-server (EXQ_TEST_REDIS_URL, or
// a private one the test binary starts itself) in a namespace of the test's own, or an
// in-process miniredis for fast unit cases. Every test package's TestMain goes through Main or
// MainLeak, which stop the private server and report skipped tests loudly.
package testutil

import (
	"context"
	"errors"
	"fmt"
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

// RedisURL returns the URL of the real Redis for tests: EXQ_TEST_REDIS_URL when it is set,
// otherwise a private redis-server that this test binary starts for itself on the first call
// (stopped by Main). Without either, the test is skipped and counted, so that Main says loudly
// how many were; under CI=true it fails instead.
func RedisURL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(RedisURLEnv); u != "" {
		return u
	}
	u, err := privateURL()
	if errors.Is(err, errNoRedisServer) {
		SkipMissing(t, fmt.Sprintf("needs a real Redis: %s is unset and redis-server is not on PATH", RedisURLEnv))
	}
	if err != nil {
		t.Fatalf("%s is unset and the private redis-server did not start: %v", RedisURLEnv, err)
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
