// Package relay is the core side of an outbox relay's push (exq.Client.PushRelayed, used by
// module exqpg): it reads the job documents a relay took from its database, pushes the good
// ones through the store each jid at most once, and says what became of each.
package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Job is one relayed document and its due time (exq.RelayedJob).
type Job struct {
	Doc string
	At  time.Time
}

// Result is what became of one job: refused or not written (Err, from Options.Invalid or
// Options.Conflict), a Duplicate of an earlier push, or written onto Queue, or into the
// schedule set when At is set.
type Result struct {
	JID, Class, Queue string
	At                time.Time
	Duplicate         bool
	Err               error
}

// Options are what a push needs of the engine besides the store.
type Options struct {
	// Now is the Redis server's time: a due time not after it means now, and a unique lock's
	// TTL runs from it to the document's unlocks_at.
	Now time.Time
	// MarkTTL is how long the store remembers a pushed jid.
	MarkTTL time.Duration
	// MaxBytes bounds a document; CheckQueue says what is wrong with its queue's name.
	MaxBytes   int
	CheckQueue func(string) error
	// Hold marks the jids as being written until the function it returns is called;
	// Written is called for each written job before that (the engine's JobEnqueued events).
	Hold    func(jids ...string) func()
	Written func(Result)
	// Invalid is the error of job i whose document is refused for err; Conflict the error of
	// a job whose unique lock (token) holder holds.
	Invalid  func(i int, err error) error
	Conflict func(holder, token string) error
}

// Push reads jobs and writes the good ones in one store call; results are in the order of
// jobs. The error is for the call as a whole: nothing was written, or, wrapping
// store.ErrNotReplicated, it comes with the results (the batch was written on the master).
func Push(ctx context.Context, st *store.Store, jobs []Job, o Options) ([]Result, error) {
	results := make([]Result, len(jobs))
	var items []store.RelayItem
	var idx []int // the job number of each item
	var jids []string
	for i, j := range jobs {
		r := &results[i]
		rd, err := read(j.Doc, o)
		r.JID, r.Class, r.Queue = rd.JID, rd.Class, rd.Queue
		if err == nil && j.At.After(wire.LatestTime) {
			err = fmt.Errorf("its due time %s is after year 9999, the latest exq schedules", j.At.UTC().Format(time.RFC3339))
		}
		if err != nil {
			r.Err = o.Invalid(i, err)
			continue
		}
		it := store.RelayItem{JID: rd.JID, Queue: rd.Queue, Job: j.Doc}
		if j.At.After(o.Now) {
			it.At, r.At = j.At, j.At
		}
		if rd.UniqueToken != "" {
			it.Lock = &store.Lock{Token: rd.UniqueToken, JID: rd.JID, TTL: rd.UnlocksAt.Sub(o.Now)}
		}
		items, idx, jids = append(items, it), append(idx, i), append(jids, rd.JID)
	}
	if len(items) == 0 {
		return results, nil
	}
	defer o.Hold(jids...)()
	statuses, err := st.PushRelayed(ctx, o.MarkTTL, items)
	if err != nil && !errors.Is(err, store.ErrNotReplicated) {
		return nil, fmt.Errorf("exq: push relayed (%d jobs): %w", len(jobs), err)
	} else if err != nil {
		err = fmt.Errorf("exq: push relayed (%d jobs): written on the master: %w", len(jobs), err)
	}
	for k, s := range statuses {
		r := &results[idx[k]]
		switch {
		case s.Holder != "":
			r.Err = o.Conflict(s.Holder, items[k].Lock.Token)
		case s.Duplicate:
			r.Duplicate = true
		default:
			o.Written(*r)
		}
	}
	return results, err
}

// read checks one relayed document as an enqueue would have built it.
func read(doc string, o Options) (wire.Relayed, error) {
	if len(doc) > o.MaxBytes {
		return wire.Relayed{}, fmt.Errorf("the job takes %d bytes as JSON, more than MaxJobBytes (%d)", len(doc), o.MaxBytes)
	}
	r, err := wire.ReadRelayed(doc)
	if err == nil {
		err = o.CheckQueue(r.Queue)
	}
	return r, err
}
