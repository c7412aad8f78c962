package exq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

func ExampleUnique() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, Queues: []exq.Queue{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	// One pending sync per account: the lock is released when the job succeeds (or dies), and
	// expires after an hour at the latest.
	unique := exq.Unique(exq.UniqueOpts{Until: exq.UntilSuccess, For: time.Hour})
	first, err := e.Enqueue(ctx, "default", "MyApp.SyncAccount", []any{42}, unique, exq.JID("sync-1"))
	fmt.Println(first, err)
	holder, err := e.Enqueue(ctx, "default", "MyApp.SyncAccount", []any{42}, unique)
	fmt.Println(holder, errors.Is(err, exq.ErrUniqueConflict))
	// Output:
	// sync-1 <nil>
	// sync-1 true
}
