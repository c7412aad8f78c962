package exq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq"
)

func ExampleDebounce() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	ran := make(chan string)
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, SchedulerPollTimeout: 10 * time.Millisecond,
		Workers: map[string]exq.Worker{
			"MyApp.Reindex": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				ran <- fmt.Sprintf("%s ran once for key %q with args %s", job.JID, job.DebounceKey(), job.Args)
				return nil
			}),
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	// Three edits in a row: one reindex, a second after the last edit (and at most a minute after
	// the first), with the last edit's args. Every call returns the burst's jid.
	debounce := exq.Debounce("reindex:doc-7", time.Second, time.Minute)
	for rev := 1; rev <= 3; rev++ {
		jid, err := e.Enqueue(ctx, "default", "MyApp.Reindex", []any{"doc-7", rev}, debounce, exq.JID(fmt.Sprint("reindex-", rev)))
		fmt.Println(jid, err)
	}
	fmt.Println(<-ran)
	// Output:
	// reindex-1 <nil>
	// reindex-1 <nil>
	// reindex-1 <nil>
	// reindex-1 ran once for key "reindex:doc-7" with args ["doc-7",3]
}
