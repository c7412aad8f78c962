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

// ClusterRedis, for EXQ_TEST_CLUSTER=1, gives a test the private test cluster (see
// ClusterAddrs): a cluster client for the code under test, a namespace with a hash tag
// ("{…}", so every key of it lands in one slot) and a plain client of the master that holds
// that slot, for the test's own reads and writes of the namespace's keys. Every key of the
// namespace is deleted when the test ends.
func ClusterRedis(t testing.TB) (master *redis.Client, cluster *redis.ClusterClient, ns string) {
	t.Helper()
	cluster = redis.NewClusterClient(&redis.ClusterOptions{Addrs: ClusterAddrs(t), MaxRetries: -1,
		ClusterStateReloadInterval: time.Second})
	ns = "{" + Namespace(t) + "}"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := cluster.MasterForKey(ctx, ns+":")
	if err != nil {
		_ = cluster.Close()
		t.Fatalf("find the master of %s: %v", ns, err)
	}
	master = redis.NewClient(&redis.Options{Addr: m.Options().Addr})
	t.Cleanup(func() {
		DeleteNamespace(master, ns)
		_ = master.Close()
		_ = cluster.Close()
	})
	return master, cluster, ns
}

// Namespace returns a namespace unique to this test run.
func Namespace(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_", ":", "_").Replace(t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	return "exqtest-" + name + "-" + uuid.NewString()[:8]
}

// DeleteNamespace removes every key of namespace ns (through a cluster client, ns must have a
// hash tag).
func DeleteNamespace(c redis.UniversalClient, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var node redis.Cmdable = c
	if cc, ok := c.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, ns+":")
		if err != nil {
			return
		}
		node = m
	}
	iter := node.Scan(ctx, 0, ns+":*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 500 {
			node.Del(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		node.Del(ctx, keys...)
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
