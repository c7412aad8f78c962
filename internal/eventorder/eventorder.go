// Package eventorder keeps the events of one job in order across a node's goroutines.
package eventorder

import (
	"sync"
	"time"
)

// Order keeps the promise that a node's Listeners hear the events of one job in order.
// A write that makes a job runnable (an enqueue, a periodic tick, a retry or a snooze) reports
// its event (JobEnqueued, JobRetried, JobSnoozed) once Redis has answered, on the goroutine that
// wrote; meanwhile a worker of the same node may already have fetched the job. So the writer
// holds the jid from before the write until after its event, and a worker about to report
// JobStarted for a held jid waits for the release. An event is never reported for a write
// that failed, and a job never waits for more than the writer's Redis round trip and its
// listeners (bounded by maxWait in case a write hangs).
type Order struct {
	mu   sync.Mutex
	held map[string]*heldJID
}

// heldJID counts the writes in flight for one jid; done is closed when the last ends.
type heldJID struct {
	n    int
	done chan struct{}
}

// Hold marks jids as being written; the returned function, called once the write's event (or
// its failure) is reported, releases them. A nil Order holds nothing.
func (o *Order) Hold(jids ...string) (release func()) {
	if o == nil || len(jids) == 0 {
		return func() {}
	}
	o.mu.Lock()
	if o.held == nil {
		o.held = map[string]*heldJID{}
	}
	for _, jid := range jids {
		h := o.held[jid]
		if h == nil {
			h = &heldJID{done: make(chan struct{})}
			o.held[jid] = h
		}
		h.n++
	}
	o.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, jid := range jids {
				if h := o.held[jid]; h != nil {
					if h.n--; h.n == 0 {
						close(h.done)
						delete(o.held, jid)
					}
				}
			}
		})
	}
}

// Wait returns once no write of jid is in flight, or after maxWait.
func (o *Order) Wait(jid string, maxWait time.Duration) {
	if o == nil {
		return
	}
	o.mu.Lock()
	h := o.held[jid]
	o.mu.Unlock()
	if h == nil {
		return
	}
	t := time.NewTimer(maxWait)
	defer t.Stop()
	select {
	case <-h.done:
	case <-t.C:
	}
}
