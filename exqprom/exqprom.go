// Package exqprom exports exq's metrics to Prometheus.
//
// A Collector has two sources. Its Listener, put in exq.Options.Listeners (or
// exq.ClientOptions.Listeners), counts what this process does: jobs enqueued, started and
// finished by outcome, run durations, jobs in flight, rescues, Redis outages, batch callbacks
// fired and workflow jobs released or canceled. On each scrape
// it also reads what the whole fleet shares from Redis through an exq.API: queue sizes and
// latencies, the retry, scheduled and dead sets, the live nodes and Sidekiq's all-time counters.
// Those reads are bounded by Options.ScrapeTimeout and cached for Options.CacheFor, so that
// many scrapers do not hammer Redis; when they fail, the last values are served and
// exq_scrape_errors_total counts the failure.
//
//	api, _ := exq.NewAPI(ctx, opts.ClientOptions())
//	c := exqprom.New(api, exqprom.Options{})
//	opts.Listeners = append(opts.Listeners, c.Listener())
//	prometheus.MustRegister(c)
//	e, _ := exq.Start(ctx, opts)
//	http.Handle("/metrics", promhttp.Handler())
//
// See the README for every metric and ready-made PromQL queries.
package exqprom

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exqgo/exq"
)

// Defaults of Options.
const (
	DefaultScrapeTimeout = 2 * time.Second
	DefaultCacheFor      = 5 * time.Second
	// NoCache, as Options.CacheFor, makes every scrape read Redis.
	NoCache time.Duration = -1
)

// DefaultBuckets are the bounds (in seconds) of exq_job_duration_seconds: 5 ms to 5 minutes.
var DefaultBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Options configures a Collector. The zero value of every field means its default.
type Options struct {
	// ScrapeTimeout bounds the Redis reads of a scrape: past it, the scrape serves the last
	// values read and the read counts as an error. Default DefaultScrapeTimeout (2 s).
	ScrapeTimeout time.Duration
	// CacheFor is how long values read from Redis are served before a scrape reads them again
	// (a failed read also waits this long before the next try). Default DefaultCacheFor (5 s);
	// NoCache (any negative value) reads Redis on every scrape.
	CacheFor time.Duration
	// Buckets are the histogram bounds of exq_job_duration_seconds, in seconds. Default
	// DefaultBuckets.
	Buckets []float64
	// ConstLabels are added to every metric, e.g. {"exq_namespace": "billing"} when one
	// process exports several namespaces (each with its own Collector and a registry each, or
	// different labels).
	ConstLabels prometheus.Labels
	// Logger receives a warning for every failed read of Redis. Default: none (the failure is
	// still counted in exq_scrape_errors_total).
	Logger *slog.Logger
	// KeyQueues are the queues whose keyed jobs (docs/keys.md) are exported: for each, the
	// number of keys in each state (exq_keys) and the TopKeys keys with the most jobs waiting
	// (exq_key_waiting, exq_key_running), read with exq.API.Keys. Cardinality stays bounded:
	// at most TopKeys series per queue and metric, never one per key of the queue. Default:
	// none.
	KeyQueues []string
	// TopKeys is how many keys of each of KeyQueues are exported. Default DefaultTopKeys (10),
	// at most MaxTopKeys (100).
	TopKeys int
}

// DefaultTopKeys and MaxTopKeys bound Options.TopKeys.
const (
	DefaultTopKeys = 10
	MaxTopKeys     = 100
)

// outcomes are the outcome label values, indexed by event kind minus exq.JobSucceeded.
var outcomes = [...]string{"succeeded", "retried", "died", "snoozed", "handed_back", "not_stored"}

// callbacks are the callback label values of exq_batch_callbacks_total: a batch's three
// callbacks, and "other" for a name a later exq may add (the label set stays bounded).
var callbacks = [...]string{"success", "complete", "death", "other"}

// Collector is a prometheus.Collector of exq's metrics. Register it once
// (prometheus.MustRegister(c)) and add its Listener to the node's or client's options. It is
// safe for concurrent use.
type Collector struct {
	api  *exq.API
	opts Options

	// From events.
	enqueued  *prometheus.CounterVec
	processed *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	inFlight  *prometheus.GaugeVec
	rescued   *prometheus.CounterVec
	redisLost prometheus.Counter
	series    seriesCache
	// Of batches and workflows: the callback children are resolved at New, so that their
	// events allocate nothing.
	batchCallbacks     *prometheus.CounterVec
	callbackSeries     [len(callbacks)]prometheus.Counter
	released, canceled prometheus.Counter
	workflowsFinished  prometheus.Counter

	// From Redis.
	scrapeErrors prometheus.Counter
	descs        descs
	mu           sync.Mutex // guards what follows
	snap         snapshot   // the last values read, replaced part by part, never mutated
	readAt       time.Time  // when the last read began
	flight       *flight    // the read in progress, or nil
}

// descs describe the metrics read from Redis.
type descs struct {
	queueSize, queueLatency, retry, scheduled, dead, nodes, processed, failed, lastSuccess *prometheus.Desc
	outboxBacklog, outboxAge                                                               *prometheus.Desc
	keys, keyWaiting, keyRunning                                                           *prometheus.Desc
}

// New returns a Collector that reads the fleet's state through api on each scrape (api may be
// nil: then only the metrics of the Listener's events are exported).
func New(api *exq.API, opts Options) *Collector {
	if opts.ScrapeTimeout <= 0 {
		opts.ScrapeTimeout = DefaultScrapeTimeout
	}
	if opts.CacheFor == 0 {
		opts.CacheFor = DefaultCacheFor
	}
	if len(opts.Buckets) == 0 {
		opts.Buckets = DefaultBuckets
	}
	if opts.TopKeys <= 0 {
		opts.TopKeys = DefaultTopKeys
	}
	opts.TopKeys = min(opts.TopKeys, MaxTopKeys)
	cl := opts.ConstLabels
	c := &Collector{api: api, opts: opts}
	c.enqueued = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "exq", Name: "jobs_enqueued_total", ConstLabels: cl,
		Help: "Jobs this process wrote to Redis (Enqueue, EnqueueIn/At, EnqueueAll, periodic jobs)."}, []string{"queue", "class"})
	c.processed = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "exq", Name: "jobs_processed_total", ConstLabels: cl,
		Help: "Job runs this process finished, by outcome: succeeded, retried, died, snoozed, handed_back, not_stored."},
		[]string{"queue", "class", "outcome"})
	c.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "exq", Name: "job_duration_seconds", ConstLabels: cl,
		Help: "How long the job runs of this process took, whatever their outcome.", Buckets: opts.Buckets},
		[]string{"queue", "class"})
	c.inFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "exq", Name: "jobs_in_flight", ConstLabels: cl,
		Help: "Jobs running in this process now (started and not finished)."}, []string{"queue"})
	c.rescued = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "exq", Name: "jobs_rescued_total", ConstLabels: cl,
		Help: "Jobs of dead nodes that this process moved back to their queue."}, []string{"queue"})
	c.redisLost = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "exq", Name: "redis_lost_total", ConstLabels: cl,
		Help: "Times this process' node lost Redis (fetching failed)."})
	c.batchCallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "exq", Name: "batch_callbacks_total", ConstLabels: cl,
		Help: "Batch callbacks this process' writes fired (each fires once in the fleet), by callback: success, complete, death."},
		[]string{"callback"})
	for i, name := range callbacks {
		c.callbackSeries[i] = c.batchCallbacks.WithLabelValues(name)
	}
	c.released = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "exq", Name: "workflow_jobs_released_total", ConstLabels: cl,
		Help: "Workflow jobs pushed to their queues because this process' write ended their last parent."})
	c.canceled = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "exq", Name: "workflow_jobs_canceled_total", ConstLabels: cl,
		Help: "Workflow jobs canceled because this process' write recorded a parent's death."})
	c.workflowsFinished = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "exq", Name: "workflows_finished_total", ConstLabels: cl,
		Help: "Workflows whose last job ended (succeeded, died or canceled) with a write of this process."})
	c.scrapeErrors = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "exq", Name: "scrape_errors_total", ConstLabels: cl,
		Help: "Reads of Redis for a scrape that failed or took longer than the scrape timeout (the last values are served)."})
	c.series.init(c)

	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("exq_"+name, help, labels, cl)
	}
	c.descs = descs{
		queueSize:    d("queue_size", "Jobs waiting in the queue.", "queue"),
		queueLatency: d("queue_latency_seconds", "How long the oldest job waiting in the queue has waited (0 when empty).", "queue"),
		retry:        d("retry_set_size", "Jobs in the retry set, waiting for their next try."),
		scheduled:    d("scheduled_set_size", "Jobs in the scheduled set, waiting for their time."),
		dead:         d("dead_set_size", "Jobs in the dead set (failed for good)."),
		nodes:        d("nodes", "Live nodes (exq, Exq and Sidekiq processes) registered in the namespace."),
		processed:    d("processed_total", "Successful job runs of the whole fleet, all time (Sidekiq's stat:processed)."),
		failed:       d("failed_total", "Failed job runs of the whole fleet, all time (Sidekiq's stat:failed)."),
		lastSuccess: d("scrape_last_success_timestamp_seconds",
			"When a scrape's read of Redis last succeeded in full (Unix time): the values read from Redis are at least that recent."),
		outboxBacklog: d("outbox_backlog",
			"Committed jobs waiting in the Postgres outbox (module exqpg), as its relays last reported; absent until a relay reports."),
		outboxAge: d("outbox_oldest_age_seconds",
			"How long the oldest job waiting in the Postgres outbox had waited at the relays' last report (0 when none waits)."),
		keys: d("keys", "Keys of a keyed queue (Options.KeyQueues) by state: ready, blocked, held, paused.", "queue", "state"),
		keyWaiting: d("key_waiting",
			"Jobs waiting of the keys with the most of them in a keyed queue (the top Options.TopKeys, read from a bounded sample: docs/keys.md).", "queue", "key"),
		keyRunning: d("key_running", "Running jobs (live leases) of the same top keys.", "queue", "key"),
	}
	return c
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.enqueued.Describe(ch)
	c.processed.Describe(ch)
	c.duration.Describe(ch)
	c.inFlight.Describe(ch)
	c.rescued.Describe(ch)
	c.redisLost.Describe(ch)
	c.batchCallbacks.Describe(ch)
	c.released.Describe(ch)
	c.canceled.Describe(ch)
	c.workflowsFinished.Describe(ch)
	if c.api == nil {
		return
	}
	c.scrapeErrors.Describe(ch)
	for _, d := range []*prometheus.Desc{c.descs.queueSize, c.descs.queueLatency, c.descs.retry, c.descs.scheduled,
		c.descs.dead, c.descs.nodes, c.descs.processed, c.descs.failed, c.descs.lastSuccess,
		c.descs.outboxBacklog, c.descs.outboxAge, c.descs.keys, c.descs.keyWaiting, c.descs.keyRunning} {
		ch <- d
	}
}

// Collect sends every metric: those of the events at once, those of Redis from the cache or
// from a read bounded by Options.ScrapeTimeout.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.enqueued.Collect(ch)
	c.processed.Collect(ch)
	c.duration.Collect(ch)
	c.inFlight.Collect(ch)
	c.rescued.Collect(ch)
	c.redisLost.Collect(ch)
	c.batchCallbacks.Collect(ch)
	c.released.Collect(ch)
	c.canceled.Collect(ch)
	c.workflowsFinished.Collect(ch)
	if c.api == nil {
		return
	}
	s := c.snapshot()
	c.scrapeErrors.Collect(ch)
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		// A queue name that is not UTF-8 (written by some other program) is left out
		// rather than failing the scrape.
		if m, err := prometheus.NewConstMetric(d, t, v, labels...); err == nil {
			ch <- m
		}
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) { send(d, prometheus.GaugeValue, v, labels...) }
	for q, n := range s.sizes {
		gauge(c.descs.queueSize, float64(n), q)
	}
	for q, l := range s.latencies {
		gauge(c.descs.queueLatency, l.Seconds(), q)
	}
	for i, d := range []*prometheus.Desc{c.descs.retry, c.descs.scheduled, c.descs.dead} {
		if s.setsOK[i] {
			gauge(d, float64(s.sets[i]))
		}
	}
	if s.nodesOK {
		gauge(c.descs.nodes, float64(s.nodes))
	}
	if s.statsOK {
		// A counter is never negative: a stored counter below zero (written by hand, or by
		// something else) reads as 0, which Prometheus takes for a reset.
		send(c.descs.processed, prometheus.CounterValue, float64(max(s.stats.Processed, 0)))
		send(c.descs.failed, prometheus.CounterValue, float64(max(s.stats.Failed, 0)))
	}
	if s.outboxOK && s.outbox.Reported {
		gauge(c.descs.outboxBacklog, float64(s.outbox.Backlog))
		age := 0.0
		if !s.outbox.OldestAt.IsZero() {
			// Both times are on the Redis server's clock: no skew, at most a report old.
			age = max(s.outbox.UpdatedAt.Sub(s.outbox.OldestAt).Seconds(), 0)
		}
		gauge(c.descs.outboxAge, age)
	}
	for q, r := range s.keys {
		for state, n := range map[string]int64{exq.KeyReady: r.ReadyKeys, exq.KeyBlocked: r.BlockedKeys, exq.KeyHeld: r.HeldKeys, exq.KeyPaused: r.PausedKeys} {
			gauge(c.descs.keys, float64(n), q, state)
		}
		for _, k := range r.Keys {
			gauge(c.descs.keyWaiting, float64(k.Waiting), q, k.Key)
			gauge(c.descs.keyRunning, float64(k.Running), q, k.Key)
		}
	}
	if !s.lastSuccess.IsZero() {
		gauge(c.descs.lastSuccess, float64(s.lastSuccess.UnixNano())/1e9)
	}
}
