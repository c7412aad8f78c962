package exq_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/exqgo/exq"
)

// A node that serves three namespaces (shards), and an enqueue-only client that routes jobs
// the same way. Here the shards share one in-process Redis; on a Redis Cluster, where each
// shard's slot may live on another master, the URL lists the cluster's nodes:
// "redis://10.0.0.1:7000?cluster=true&addr=10.0.0.2:7000&addr=10.0.0.3:7000".
func ExampleStartSharded() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	resized := make(chan string, 3)
	workers := map[string]exq.Worker{"MyApp.Resize": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
		var path string
		if err := job.Bind(&path); err != nil {
			return err
		}
		resized <- path
		return nil
	})}

	shards := exq.ShardOptions{Namespaces: []string{"{exq0}", "{exq2}", "{exq5}"}, By: exq.ByJID}
	node, err := exq.StartSharded(ctx, exq.Options{RedisURL: url, Logger: quiet, Workers: workers}, shards)
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
	for _, path := range []string{"a.png", "b.png", "c.png"} {
		if _, err := client.Enqueue(ctx, "default", "MyApp.Resize", []any{path}, exq.MaxRetries(3)); err != nil {
			fmt.Println(err)
			return
		}
	}
	got := []string{<-resized, <-resized, <-resized} // each shard's jobs run in its own order
	slices.Sort(got)
	fmt.Println(got)
	// Output: [a.png b.png c.png]
}
