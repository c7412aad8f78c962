package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// A target is one library (or a raw go-redis baseline) at one configuration: its defaults or
// a tuned variant. Every job it enqueues carries two integers: i, and the time of its enqueue
// (nowNS, stamped by the producer just before the enqueue call). Its workers decode both the
// way the library's documentation teaches, report them when a job starts, and do nothing else
// (no-op jobs).
type target struct {
	Name string // as printed: "asynq", "asynq (tuned)"
	Lib  string // exq, asynq, gocraft, goworkers2, raw, raw-batched
	// Knob says what the tuned variant changes from the defaults; "" for the defaults.
	Knob string
	// Peer targets are the other job libraries (not exq, not the raw baseline).
	Peer bool
	// DB is the Redis database this library uses, flushed before every run.
	DB int
	// NoEnqueue targets sit out the enqueue modes (their producer is another target's).
	NoEnqueue bool
	// drainNS, when set, is the key prefix of an exq-layout queue, backup lists and
	// stat:processed that checkDrained verifies after a run.
	drainNS string
	// reset, when set, empties the target's store before a run instead of flushing its Redis
	// DB (River: TRUNCATE river_job); drained, when set, checks after a drain of n jobs that
	// each was done once.
	reset   func(ctx context.Context) error
	drained func(ctx context.Context, n int) error

	// newProducer returns an enqueuer that callers goroutines will share.
	newProducer func(ctx context.Context, callers int) (producer, error)
	// newConsumer starts workers with concurrency c on the queue "default"; onJob is called
	// with the job's two args when a job starts: i, and at, its enqueue time (nowNS). A worker
	// that cannot decode its args reports it with argError and calls onJob(-1, 0).
	newConsumer func(ctx context.Context, c int, onJob func(i, at int64)) (consumer, error)
}

// producer enqueues one no-op job carrying i and its enqueue time (nowNS).
type producer interface {
	enqueue(ctx context.Context, i int64) error
	close() error
}

// batcher is a producer that can write many jobs in one call (exq's EnqueueAll, a pipeline).
type batcher interface {
	enqueueBatch(ctx context.Context, is []int64) error
}

// consumer is a running set of workers.
type consumer interface {
	stop(ctx context.Context) error
}

// Key namespaces (each library also has a Redis DB of its own).
const (
	exqNS     = "benchexq"
	gocraftNS = "benchgocraft"
	gw2NS     = "benchgw2"
	rawNS     = "benchraw"
	rawbNS    = "benchrawb"
	jobClass  = "Noop"
	queueName = "default"
)

// The order of libraries; a library's DB is the base DB plus its index, except raw-batched,
// which shares raw's (the documented DBs stay -db … -db+4; runs are sequential and each
// flushes its DB first, and the two use different key prefixes anyway).
var libOrder = []string{"exq", "asynq", "gocraft", "goworkers2", "raw", "raw-batched", "river"}

// pgLib is the library that lives in Postgres, not in a Redis DB (its targets are made in run,
// once its database exists).
const pgLib = "river"

func libIndex(lib string) int {
	if lib == "raw-batched" {
		lib = "raw"
	}
	for i, l := range libOrder {
		if l == lib {
			return i
		}
	}
	return -1
}

// allTargets lists the targets of the selected libraries, defaults first.
func allTargets(addr string, dbBase int, libs map[string]bool, tuned bool) []*target {
	var out []*target
	for _, lib := range libOrder {
		if !libs[lib] || lib == pgLib {
			continue
		}
		db := dbBase + libIndex(lib)
		var ts []*target
		switch lib {
		case "exq":
			ts = exqTargets(addr, db)
		case "asynq":
			ts = asynqTargets(addr, db)
		case "gocraft":
			ts = gocraftTargets(addr, db)
		case "goworkers2":
			ts = goworkers2Targets(addr, db)
		case "raw":
			ts = rawTargets(addr, db)
		case "raw-batched":
			ts = rawBatchedTargets(addr, db)
		}
		for _, t := range ts {
			if t.Knob != "" && !tuned {
				continue
			}
			out = append(out, t)
		}
	}
	return out
}

var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// epoch is the origin of nowNS.
var epoch = time.Now()

// nowNS is the time in nanoseconds since the bench started, on the monotonic clock: the
// enqueue time every job carries as its second arg (producer and workers share this process,
// so no wall-clock step can skew a latency).
func nowNS() int64 { return int64(time.Since(epoch)) }

// argErr holds the first arg-decoding error of a worker since the last takeArgErr.
var argErr struct {
	sync.Mutex
	err error
}

// argError records a worker's failure to decode its job's args (the run then fails).
func argError(lib string, err error) {
	argErr.Lock()
	defer argErr.Unlock()
	if argErr.err == nil {
		argErr.err = fmt.Errorf("%s: worker could not decode its args: %w", lib, err)
	}
}

// takeArgErr returns and clears the recorded arg-decoding error.
func takeArgErr() error {
	argErr.Lock()
	defer argErr.Unlock()
	err := argErr.err
	argErr.err = nil
	return err
}

func errorf(lib, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", lib, what, err)
}
