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

// p is the key name of the env's namespace for a key written as docs/wire.md writes it
// ("P queue:mail"): the tests name keys literally, so that they check the documented layout
// rather than wire.Keys against itself.
func (v *env) p(key string) string { return v.ns + ":" + key }

// layout is every key of the env's namespace with its type, named without the prefix, as
// docs/wire.md names them ("queue:mail": "list").
func (v *env) layout() map[string]string {
	v.t.Helper()
	c := context.Background()
	out := map[string]string{}
	iter := v.rdb.Scan(c, 0, v.ns+":*", 1000).Iterator()
	for iter.Next(c) {
		typ, err := v.rdb.Type(c, iter.Val()).Result()
		require.NoError(v.t, err)
		out[iter.Val()[len(v.ns)+1:]] = typ
	}
	require.NoError(v.t, iter.Err())
	return out
}

func (v *env) hash(key string) map[string]string {
	v.t.Helper()
	h, err := v.rdb.HGetAll(context.Background(), key).Result()
	require.NoError(v.t, err)
	return h
}

func (v *env) members(key string) []string {
	v.t.Helper()
	s, err := v.rdb.SMembers(context.Background(), key).Result()
	require.NoError(v.t, err)
	return s
}

// serverNow is the Redis server's clock, in seconds.
func (v *env) serverNow() float64 {
	v.t.Helper()
	now, err := v.rdb.Time(context.Background()).Result()
	require.NoError(v.t, err)
	return float64(now.UnixMicro()) / 1e6
}

// garbage writes a string where a key of another type is expected.
func (v *env) garbage(key string) {
	v.t.Helper()
	require.NoError(v.t, v.rdb.Set(context.Background(), key, "garbage", 0).Err())
}
