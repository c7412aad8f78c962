package store

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// TestMain fails the package if a test leaves a goroutine behind (the idle waiter starts some).
func TestMain(m *testing.M) { testutil.MainLeak(m) }

// env is a store on the test Redis in a namespace of the test's own, with the raw client and
// the key names to look at what the store wrote.
type env struct {
	t    *testing.T
	rdb  *redis.Client
	ns   string
	keys wire.Keys
}

func newEnv(t *testing.T) *env {
	t.Helper()
	t.Parallel()
	rdb, ns := testutil.Redis(t)
	return &env{t: t, rdb: rdb, ns: ns, keys: wire.NewKeys(ns)}
}

// store is the store of node ("" for none) in the env's namespace.
func (v *env) store(node string) *Store {
	return New(v.rdb, Config{Namespace: v.ns, Node: node})
}

func (v *env) list(key string) []string {
	v.t.Helper()
	l, err := v.rdb.LRange(context.Background(), key, 0, -1).Result()
	require.NoError(v.t, err)
	return l
}

func (v *env) zset(key string) []redis.Z {
	v.t.Helper()
	z, err := v.rdb.ZRangeWithScores(context.Background(), key, 0, -1).Result()
	require.NoError(v.t, err)
	return z
}

// job is a minimal job document of queue q with jid.
func job(q, jid string) string {
	return `{"class":"W","args":[],"queue":"` + q + `","jid":"` + jid + `"}`
}

// ctx is a context for one test call.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}
