package testutil

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Snapshot is every key of namespace ns on rdb with its DUMP: two equal snapshots mean
// nothing under ns was written in between (TTLs aside).
func Snapshot(t testing.TB, rdb redis.Cmdable, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, ns+":*").Result()
	if err != nil {
		t.Fatalf("snapshot of %s: %v", ns, err)
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = rdb.Dump(ctx, k).Val()
	}
	return out
}
