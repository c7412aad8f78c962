package exq_test

import (
	"context"
	"fmt"

	"github.com/exqgo/exq"
)

// A node that serves three namespaces (shards) of a Redis Cluster, and an enqueue-only client
// that routes jobs the same way. (Not run here: it needs a cluster.)
func ExampleStartSharded() {
	ctx := context.Background()
	url := "redis://10.0.0.1:7000?cluster=true&addr=10.0.0.2:7000&addr=10.0.0.3:7000"
	workers := map[string]exq.Worker{"MyApp.Resize": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil })}

	shards := exq.ShardOptions{Namespaces: []string{"{exq0}", "{exq2}", "{exq5}"}, By: exq.ByJID}
	node, err := exq.StartSharded(ctx, exq.Options{RedisURL: url, Workers: workers}, shards)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Stop(ctx)
	client, err := exq.NewShardedClient(ctx, exq.ClientOptions{RedisURL: url}, shards) // enqueue only
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	_, err = client.Enqueue(ctx, "default", "MyApp.Resize", []any{"img.png"}, exq.MaxRetries(3))
	fmt.Println(err)
}
