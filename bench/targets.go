package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
)

// A target is one library (or the raw go-redis baseline) at one configuration: its defaults or
// a tuned variant. Every job it enqueues carries one integer, i; its workers report i when a job
// starts, and do nothing else (no-op jobs).
type target struct {
	Name string // as printed: "asynq", "asynq (tuned)"
	Lib  string // exq, asynq, gocraft, goworkers2, raw
	// Knob says what the tuned variant changes from the defaults; "" for the defaults.
	Knob string
	// Peer targets are the other job libraries (not exq, not the raw baseline).
	Peer bool
	// DB is the Redis database this library uses, flushed before every run.
	DB int

	// newProducer returns an enqueuer that callers goroutines will share.
	newProducer func(ctx context.Context, callers int) (producer, error)
	// newConsumer starts workers with concurrency c on the queue "default"; onJob is called
	// with the job's i when a job starts.
	newConsumer func(ctx context.Context, c int, onJob func(i int64)) (consumer, error)
}

// producer enqueues one no-op job carrying i.
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
	jobClass  = "Noop"
	queueName = "default"
)

// The order of libraries; a library's DB is the base DB plus its index.
var libOrder = []string{"exq", "asynq", "gocraft", "goworkers2", "raw"}

func libIndex(lib string) int {
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
		if !libs[lib] {
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

// parseArgs reads i from a JSON array holding one integer, "[123]", without a JSON decoder:
// the workers are no-ops, so they should cost as little as the library lets them.
func parseArgs(b []byte) int64 {
	b = bytes.TrimSpace(b)
	b = bytes.TrimPrefix(b, []byte("["))
	b = bytes.TrimSuffix(b, []byte("]"))
	i, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return -1
	}
	return i
}

func errorf(lib, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", lib, what, err)
}
