package exq

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// testStore is the store of keys' namespace on rdb for node ("" for none).
func testStore(rdb redis.UniversalClient, keys wire.Keys, node string) *store.Store {
	return store.New(rdb, store.Config{Namespace: strings.TrimSuffix(keys.Prefix, ":"), Node: node})
}

// timeOf reads rdb's server clock, as a serverClock does.
func timeOf(rdb redis.UniversalClient) func(context.Context) (time.Time, error) {
	return func(ctx context.Context) (time.Time, error) { return rdb.Time(ctx).Result() }
}

// setKeyOf is the key of sorted set s in keys' namespace.
func setKeyOf(keys wire.Keys, s Set) string {
	switch s {
	case RetrySet:
		return keys.Retry()
	case ScheduledSet:
		return keys.Schedule()
	}
	return keys.Dead()
}
