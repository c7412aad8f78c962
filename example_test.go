package exq_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/exqgo/exq"
)

// quiet keeps the examples' output to what they print.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// The examples run against an in-process Redis; a real program passes its RedisURL.
func exampleRedis() (url string, stop func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	return "redis://" + m.Addr() + "/0", m.Close
}

func ExampleStart() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	done := make(chan string)
	e, err := exq.Start(ctx, exq.Options{
		RedisURL: url,
		Queues:   []exq.Queue{{Name: "default", Concurrency: 10}, {Name: "mail", Concurrency: 2}},
		Logger:   quiet,
		Workers: map[string]exq.Worker{
			"MyApp.SendEmail": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				var userID int
				var template string
				if err := job.Bind(&userID, &template); err != nil {
					return err // args that never decode: dead at once (exq.ArgsDecodeError)
				}
				done <- fmt.Sprintf("sent %q to user %d", template, userID)
				return nil
			}),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	if _, err := e.Enqueue(ctx, "mail", "MyApp.SendEmail", []any{42, "welcome"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-done)
	// Output: sent "welcome" to user 42
}

func ExampleExq_Enqueue() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, Queues: []exq.Queue{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	// Now, with three retries instead of the default 25 and an id of our own.
	jid, err := e.Enqueue(ctx, "default", "MyApp.Resize", []any{"img.png", 640}, exq.MaxRetries(3), exq.JID("resize-img.png"))
	fmt.Println(jid, err)
	// In ten minutes, or at a given time.
	_, err = e.EnqueueIn(ctx, "default", "MyApp.Reminder", 10*time.Minute, []any{42})
	fmt.Println(err)
	_, err = e.EnqueueAt(ctx, "default", "MyApp.Report", time.Date(2030, 1, 1, 8, 0, 0, 0, time.UTC), nil)
	fmt.Println(err)
	// Bad input is refused before anything is written.
	_, err = e.Enqueue(ctx, "default", "", nil)
	fmt.Println(err)
	_, err = e.Enqueue(ctx, "default", "MyApp.Resize", map[string]int{"width": 640})
	fmt.Println(err)
	// Output:
	// resize-img.png <nil>
	// <nil>
	// <nil>
	// exq: enqueue: class is empty
	// exq: enqueue: args must be a list (a slice or array), got map[string]int
}

func ExampleExq_EnqueueAll() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, Queues: []exq.Queue{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	// One atomic write: all three jobs or none.
	results, err := e.EnqueueAll(ctx, []exq.JobSpec{
		{Queue: "default", Class: "MyApp.Welcome", Args: []any{42}, Options: []exq.EnqueueOption{exq.JID("welcome-42")}},
		{Queue: "default", Class: "MyApp.Tips", Args: []any{42}, In: 24 * time.Hour, Options: []exq.EnqueueOption{exq.JID("tips-42")}},
		{Queue: "mail", Class: "MyApp.Survey", Args: []any{42}, At: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Options: []exq.EnqueueOption{exq.JID("survey-42")}},
	})
	fmt.Println(err)
	for _, r := range results {
		fmt.Println(r.JID)
	}
	// Output:
	// <nil>
	// welcome-42
	// tips-42
	// survey-42
}

func ExampleExq_Register() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)

	done := make(chan struct{})
	// Workers can be added while the node runs; text after "/" in a class is ignored, so a
	// job of class "MyApp.Resize/perform" (Exq style) runs this worker too.
	err = e.Register("MyApp.Resize", exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
		var path string
		var width int
		if err := job.Bind(&path, &width); err != nil {
			return err
		}
		fmt.Printf("%s: resize %s to %d px\n", job.Class, path, width)
		close(done)
		return nil
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := e.Enqueue(ctx, "default", "MyApp.Resize/perform", []any{"img.png", 640}); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	// Output: MyApp.Resize/perform: resize img.png to 640 px
}

// Signup is the args of MyApp.Signup jobs: the type names its class, so the worker and the
// enqueue side agree on both.
type Signup struct {
	UserID   int    `json:"user_id"`
	Template string `json:"template"`
}

func (Signup) Class() string { return "MyApp.Signup" }

// A program's main: the node stops gracefully when the process is told to (Ctrl-C, SIGTERM
// from systemd or Kubernetes), a TERM comes from Sidekiq's or Exq's UI, or Stop is called.
func ExampleStart_signals() {
	url, stopRedis := exampleRedis()
	defer stopRedis()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	running := make(chan struct{})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, ShutdownTimeout: 10 * time.Second,
		Workers: map[string]exq.Worker{"MyApp.Report": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
			close(running)
			time.Sleep(50 * time.Millisecond) // a job that is running when the signal comes
			fmt.Println("report done")
			return nil
		})}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := e.Enqueue(ctx, "default", "MyApp.Report", nil); err != nil {
		fmt.Println(err)
		return
	}
	<-running
	stop() // stands in for Ctrl-C: ctx ends, and the node starts stopping

	<-e.Done()
	err = e.Stop(context.Background()) // waits for the running job (up to ShutdownTimeout)
	fmt.Println("stopped:", err)
	// Output:
	// report done
	// stopped: <nil>
}

// Workers given to Start are there before the node fetches its first job, so the jobs that
// waited in Redis during a deploy run at once, none failing for want of a worker.
func ExampleWorkerFor() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	// A job waiting before the node starts (pushed by an earlier deploy, or by Sidekiq).
	c, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: url, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := exq.EnqueueArgs(ctx, c, Signup{UserID: 7, Template: "welcome"}); err != nil {
		fmt.Println(err)
		return
	}
	_ = c.Close()

	done := make(chan struct{})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Register: []exq.Registration{
			exq.WorkerFor(func(ctx context.Context, job *exq.Job, a Signup) error {
				fmt.Printf("%s: welcome user %d with %q\n", job.Class, a.UserID, a.Template)
				close(done)
				return nil
			}),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	<-done
	// Output: MyApp.Signup: welcome user 7 with "welcome"
}

func ExampleAddWorker() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	done := make(chan struct{})
	err = exq.AddWorker(e, func(ctx context.Context, job *exq.Job, a Signup) error {
		fmt.Printf("%s: welcome user %d with %q\n", job.Class, a.UserID, a.Template)
		close(done)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// On the wire: "class":"MyApp.Signup","args":[{"user_id":42,"template":"welcome"}].
	if _, err := exq.EnqueueArgs(ctx, e, Signup{UserID: 42, Template: "welcome"}); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	// Output: MyApp.Signup: welcome user 42 with "welcome"
}

func ExampleEnqueueArgs() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	// An enqueue-only client; *exq.Exq and the exqtest doubles work the same way.
	c, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: url})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	a := Signup{UserID: 42, Template: "tips"}
	enqueued := 0
	check := func(_ string, err error) {
		if err != nil {
			fmt.Println(err)
			return
		}
		enqueued++
	}
	check(exq.EnqueueArgs(ctx, c, a))                                         // on "default", or the queue of a Queue() method
	check(exq.EnqueueArgs(ctx, c, a, exq.OnQueue("mail"), exq.MaxRetries(3))) // on "mail"
	check(exq.EnqueueArgsIn(ctx, c, 24*time.Hour, a))                         // tomorrow
	fmt.Println(enqueued, "jobs enqueued")
	// Output: 3 jobs enqueued
}

func ExampleTyped() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	// A class string another runtime chose, for a type that does not name it.
	type Invoice struct {
		ID int `json:"id"`
	}
	done := make(chan struct{})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, Workers: map[string]exq.Worker{
		"Billing::InvoiceWorker": exq.Typed(func(ctx context.Context, job *exq.Job, a Invoice) error {
			fmt.Printf("invoice %d (retry %d)\n", a.ID, job.RetryCount)
			close(done)
			return nil
		}),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	// What Sidekiq's Billing::InvoiceWorker.perform_async({"id" => 7}) pushes.
	if _, err := e.Enqueue(ctx, "default", "Billing::InvoiceWorker", []any{map[string]any{"id": 7}}); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	// Output: invoice 7 (retry 0)
}

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

func ExampleSnooze() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()
	done := make(chan struct{})
	runs := 0
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, SchedulerPollTimeout: 10 * time.Millisecond,
		Workers: map[string]exq.Worker{
			"MyApp.WaitForReport": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
				runs++
				if runs == 1 {
					return exq.Snooze(10 * time.Millisecond) // not ready yet: run again later
				}
				fmt.Printf("run %d: retry_count %d, last message %q\n", runs, job.RetryCount, job.ErrorMessage)
				close(done)
				return nil
			}),
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	if _, err := e.Enqueue(ctx, "default", "MyApp.WaitForReport", nil); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	// Output: run 2: retry_count 0, last message "Snoozed for 0.01 seconds"
}

func ExampleNewAPI() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	// Something to look at: a job that died.
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet, MaxRetries: exq.NoRetries,
		Workers: map[string]exq.Worker{"MyApp.Charge": exq.WorkerFunc(func(context.Context, *exq.Job) error {
			return errors.New("card declined")
		})}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := e.Enqueue(ctx, "default", "MyApp.Charge", []any{42}, exq.JID("charge-42")); err != nil {
		fmt.Println(err)
		return
	}

	// The API needs no running node (here the node's would do too: e.API()).
	api, err := exq.NewAPI(ctx, exq.ClientOptions{RedisURL: url})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer api.Close()
	var dead []exq.JobRecord
	for len(dead) == 0 {
		dead, _ = api.Dead(ctx, exq.ListOptions{Size: 10})
		time.Sleep(time.Millisecond)
	}
	job, err := dead[0].Job() // an error for a document some other program wrote
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.JID, job.ErrorMessage)
	e.Stop(ctx) // stop the node so the job is not retried while we look

	// Run it again: it moves, byte for byte, to its queue.
	rec, err := api.RequeueJob(ctx, exq.DeadSet, "charge-42")
	fmt.Println(rec.Raw == dead[0].Raw, err)
	n, _ := api.QueueSize(ctx, "default")
	fmt.Println(n)
	// Output:
	// charge-42 card declined
	// true <nil>
	// 1
}

// A long job reports how far it has got; the busy list (API.BusyJobs, `exq busy`, the
// dashboard's Busy page) shows the latest report within about a second.
func ExampleSetProgress() {
	url, stopRedis := exampleRedis()
	defer stopRedis()
	ctx := context.Background()

	finish := make(chan struct{})
	importer := exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
		rows := 1000
		for i := range rows {
			// ... import row i ...
			if i%100 == 0 {
				msg := fmt.Sprintf("row %d of %d", i, rows)
				if err := exq.SetProgress(ctx, float64(i)/float64(rows), msg); err != nil {
					return err
				}
			}
		}
		<-finish // (for the example: stay busy while it looks)
		return nil
	})
	e, err := exq.Start(ctx, exq.Options{RedisURL: url, Logger: quiet,
		Workers: map[string]exq.Worker{"MyApp.Import": importer}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Stop(ctx)
	defer close(finish)
	if _, err := e.Enqueue(ctx, "default", "MyApp.Import", nil); err != nil {
		fmt.Println(err)
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		busy, err := e.API().BusyJobs(ctx)
		if err != nil || len(busy) == 0 || busy[0].Progress == nil || busy[0].Progress.Fraction < 0.9 {
			continue
		}
		fmt.Printf("%.0f%% %s\n", 100*busy[0].Progress.Fraction, busy[0].Progress.Message)
		break
	}
	// Output: 90% row 900 of 1000
}
