package exqprom

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exqgo/exq"
)

// Listener returns the exq.Listener that counts this process' events; put it in
// exq.Options.Listeners (a node) or exq.ClientOptions.Listeners (an enqueue-only client). It
// is quick and allocates nothing once a queue and class have been seen: their label children
// are resolved once and kept in a copy-on-write map that events read without a lock.
func (c *Collector) Listener() exq.Listener { return c.observe }

func (c *Collector) observe(ev exq.Event) {
	switch ev.Kind {
	case exq.JobEnqueued:
		c.series.job(ev.Queue, ev.Class).enqueued.Inc()
	case exq.JobStarted:
		c.series.queue(ev.Queue).inFlight.Inc()
	case exq.JobSucceeded, exq.JobRetried, exq.JobDied, exq.JobSnoozed, exq.JobHandedBack, exq.JobNotStored:
		s := c.series.job(ev.Queue, ev.Class)
		s.processed[ev.Kind-exq.JobSucceeded].Inc()
		if ev.Kind == exq.JobDied && ev.Class == "" {
			return // a document that could not be read: it never started
		}
		s.duration.Observe(ev.Duration.Seconds())
		s.queue.inFlight.Dec()
	case exq.JobsRescued:
		c.series.queue(ev.Queue).rescued.Add(float64(ev.Count))
	case exq.RedisLost:
		c.redisLost.Inc()
	case exq.BatchCallback:
		i := len(callbacks) - 1 // other
		for k, name := range callbacks[:i] {
			if ev.Callback == name {
				i = k
			}
		}
		c.callbackSeries[i].Inc()
	case exq.WorkflowReleased:
		c.released.Add(float64(max(ev.Count, 0)))
		c.canceled.Add(float64(max(ev.Canceled, 0)))
		if ev.Callback == "finished" {
			c.workflowsFinished.Inc()
		}
	}
}

// jobKey names the series of one class in one queue.
type jobKey struct{ queue, class string }

// jobSeries are the label children of one queue and class.
type jobSeries struct {
	enqueued  prometheus.Counter
	processed [len(outcomes)]prometheus.Counter
	duration  prometheus.Observer
	queue     *queueSeries
}

// queueSeries are the label children of one queue.
type queueSeries struct {
	inFlight prometheus.Gauge
	rescued  prometheus.Counter
}

// seriesCache keeps the resolved label children in maps that are never changed once
// published: a new queue or class copies the map under mu and publishes the copy, so the
// events of known ones (nearly all) take one atomic load and one map lookup.
type seriesCache struct {
	c      *Collector
	mu     sync.Mutex
	jobs   atomic.Pointer[map[jobKey]*jobSeries]
	queues atomic.Pointer[map[string]*queueSeries]
}

func (sc *seriesCache) init(c *Collector) {
	sc.c = c
	sc.jobs.Store(&map[jobKey]*jobSeries{})
	sc.queues.Store(&map[string]*queueSeries{})
}

func (sc *seriesCache) job(queue, class string) *jobSeries {
	if s, ok := (*sc.jobs.Load())[jobKey{queue, class}]; ok {
		return s
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	old := *sc.jobs.Load()
	k := jobKey{queue, class}
	if s, ok := old[k]; ok {
		return s
	}
	q, cl := validUTF8(queue), validUTF8(class)
	s := &jobSeries{
		enqueued: sc.c.enqueued.WithLabelValues(q, cl),
		duration: sc.c.duration.WithLabelValues(q, cl),
		queue:    sc.queueLocked(queue),
	}
	for i, o := range outcomes {
		s.processed[i] = sc.c.processed.WithLabelValues(q, cl, o)
	}
	next := make(map[jobKey]*jobSeries, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[k] = s
	sc.jobs.Store(&next)
	return s
}

func (sc *seriesCache) queue(queue string) *queueSeries {
	if s, ok := (*sc.queues.Load())[queue]; ok {
		return s
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.queueLocked(queue)
}

// queueLocked returns the series of queue, adding them; sc.mu is held.
func (sc *seriesCache) queueLocked(queue string) *queueSeries {
	old := *sc.queues.Load()
	if s, ok := old[queue]; ok {
		return s
	}
	q := validUTF8(queue)
	s := &queueSeries{inFlight: sc.c.inFlight.WithLabelValues(q), rescued: sc.c.rescued.WithLabelValues(q)}
	next := make(map[string]*queueSeries, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[queue] = s
	sc.queues.Store(&next)
	return s
}

// validUTF8 makes a label value Prometheus accepts out of a name some other program wrote.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
