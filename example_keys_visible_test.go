package exq_test

import (
	"context"
	"fmt"

	"github.com/exqgo/exq"
)

// Seeing a queue's keys and pausing one: the keys with the most jobs waiting come first, and a
// paused key's jobs wait (on every node) until it is resumed.
func ExampleAPI_Keys() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	c, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: url})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	for tenant, n := range map[string]int{"acme": 3, "globex": 1} {
		for range n {
			if _, err := c.Enqueue(ctx, "sync", "Sync", []any{tenant}, exq.Key(tenant)); err != nil {
				fmt.Println(err)
				return
			}
		}
	}
	api, err := exq.NewAPI(ctx, exq.ClientOptions{RedisURL: url})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer api.Close()
	if err := api.PauseKey(ctx, "sync", "acme"); err != nil {
		fmt.Println(err)
		return
	}
	rep, err := api.Keys(ctx, "sync", exq.KeysOptions{Limit: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range rep.Keys {
		fmt.Println(k.Key, k.Waiting, k.State)
	}
	// Output:
	// acme 3 paused
	// globex 1 ready
}
