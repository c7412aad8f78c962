package exq

import (
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// testStore is the store of keys' namespace on rdb for node ("" for none).
func testStore(rdb redis.UniversalClient, keys wire.Keys, node string) *store.Store {
	return store.New(rdb, store.Config{Namespace: strings.TrimSuffix(keys.Prefix, ":"), Node: node})
}
