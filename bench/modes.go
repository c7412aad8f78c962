package main

import (
	"context"
	"fmt"
	"io"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// runEnqueue times n single enqueues shared by callers goroutines; it returns jobs/s.
func (b *bench) runEnqueue(ctx context.Context, t *target, n, callers int) (float64, error) {
	if err := b.reset(ctx, t); err != nil {
		return 0, err
	}
	p, err := t.newProducer(ctx, callers)
	if err != nil {
		return 0, err
	}
	defer func() { _ = p.close() }()
	// Warm up the connections (not timed, not counted).
	if err := parallel(callers, callers, func(i int64) error { return p.enqueue(ctx, -1-i) }); err != nil {
		return 0, fmt.Errorf("%s: warm-up: %w", t.Name, err)
	}
	start := time.Now()
	if err := parallel(n, callers, func(i int64) error { return p.enqueue(ctx, i) }); err != nil {
		return 0, fmt.Errorf("%s: enqueue: %w", t.Name, err)
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// runBatch times n jobs written size at a time by one caller; it returns jobs/s.
func (b *bench) runBatch(ctx context.Context, t *target, n, size int) (float64, error) {
	if err := b.reset(ctx, t); err != nil {
		return 0, err
	}
	p, err := t.newProducer(ctx, 1)
	if err != nil {
		return 0, err
	}
	defer func() { _ = p.close() }()
	bp, ok := p.(batcher)
	if !ok {
		return 0, fmt.Errorf("%s has no batch enqueue", t.Name)
	}
	if err := bp.enqueueBatch(ctx, []int64{-1, -2}); err != nil {
		return 0, fmt.Errorf("%s: warm-up: %w", t.Name, err)
	}
	ids := make([]int64, 0, size)
	start := time.Now()
	for i := 0; i < n; {
		ids = ids[:0]
		for ; i < n && len(ids) < size; i++ {
			ids = append(ids, int64(i))
		}
		if err := bp.enqueueBatch(ctx, ids); err != nil {
			return 0, fmt.Errorf("%s: batch: %w", t.Name, err)
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// processResult is one drain of a pre-filled queue.
type processResult struct {
	rate              float64 // jobs/s
	clientUS, redisUS float64 // CPU µs per job of this process and of redis-server
}

// prefill puts n jobs into t's queue with t's own enqueue (batches where it has them).
func (b *bench) prefill(ctx context.Context, t *target, n int) error {
	p, err := t.newProducer(ctx, 50)
	if err != nil {
		return err
	}
	defer func() { _ = p.close() }()
	if bp, ok := p.(batcher); ok {
		ids := make([]int64, 0, 500)
		for i := 0; i < n; {
			ids = ids[:0]
			for ; i < n && len(ids) < 500; i++ {
				ids = append(ids, int64(i))
			}
			if err := bp.enqueueBatch(ctx, ids); err != nil {
				return fmt.Errorf("%s: prefill: %w", t.Name, err)
			}
		}
		return nil
	}
	if err := parallel(n, 50, func(i int64) error { return p.enqueue(ctx, i) }); err != nil {
		return fmt.Errorf("%s: prefill: %w", t.Name, err)
	}
	return nil
}

// runProcess fills t's queue with n jobs, then times workers of concurrency c from their start
// until the n-th job has started (the workers are no-ops). With prof set, the timed part runs
// under the CPU profiler.
func (b *bench) runProcess(ctx context.Context, t *target, n, c int, prof io.Writer) (processResult, error) {
	var res processResult
	if err := b.reset(ctx, t); err != nil {
		return res, err
	}
	if err := b.prefill(ctx, t, n); err != nil {
		return res, err
	}
	var done atomic.Int64
	all := make(chan struct{})
	onJob := func(int64, int64) {
		if done.Add(1) == int64(n) {
			close(all)
		}
	}
	if prof != nil {
		if err := pprof.StartCPUProfile(prof); err != nil {
			return res, err
		}
	}
	cpu0, rcpu0 := selfCPU(), b.redisCPU(ctx)
	start := time.Now()
	cons, err := t.newConsumer(ctx, c, onJob)
	if err != nil {
		if prof != nil {
			pprof.StopCPUProfile()
		}
		return res, err
	}
	var timedOut bool
	select {
	case <-all:
	case <-time.After(b.cfg.timeout):
		timedOut = true
	}
	elapsed := time.Since(start)
	cpu1, rcpu1 := selfCPU(), b.redisCPU(ctx)
	if prof != nil {
		pprof.StopCPUProfile()
	}
	stopErr := b.stopConsumer(cons)
	if d, ok := cons.(interface{ describe() string }); ok {
		logf("%s: %s", t.Name, d.describe())
	}
	if timedOut {
		return res, fmt.Errorf("%s: only %d of %d jobs ran within %s", t.Name, done.Load(), n, b.cfg.timeout)
	}
	if stopErr != nil {
		return res, fmt.Errorf("%s: stop: %w", t.Name, stopErr)
	}
	if err := takeArgErr(); err != nil {
		return res, err
	}
	if err := b.checkDrained(ctx, t, n); err != nil {
		return res, err
	}
	res.rate = float64(n) / elapsed.Seconds()
	res.clientUS = (cpu1 - cpu0).Seconds() * 1e6 / float64(n)
	if rcpu0 >= 0 && rcpu1 >= 0 {
		res.redisUS = (rcpu1 - rcpu0) * 1e6 / float64(n)
	}
	return res, nil
}

func (b *bench) stopConsumer(c consumer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.stop(ctx)
}

// latencyResult holds the enqueue→start latencies of one run, sorted.
type latencyResult struct {
	lat  []time.Duration
	lost int
	// loaded mode only: the rate the producer reached (jobs/s), and this process's CPU per job
	// (enqueue and run) from the first enqueue until the last job started.
	achieved, clientUS float64
}

func (l latencyResult) pct(p float64) time.Duration {
	if len(l.lat) == 0 {
		return 0
	}
	k := int(p*float64(len(l.lat)) + 0.5)
	k = min(max(k-1, 0), len(l.lat)-1)
	return l.lat[k]
}

// runLatency starts idle workers (concurrency 50), waits cfg.idle, then enqueues m jobs one
// every cfg.every and records, per job, the time from just before its enqueue call to the start
// of its worker.
func (b *bench) runLatency(ctx context.Context, t *target, m int) (latencyResult, error) {
	var res latencyResult
	if err := b.reset(ctx, t); err != nil {
		return res, err
	}
	base := time.Now()
	sent := make([]atomic.Int64, m)
	got := make([]atomic.Int64, m)
	for k := range got {
		got[k].Store(-1)
	}
	var received atomic.Int64
	all := make(chan struct{})
	onJob := func(i, _ int64) {
		if i < 0 || i >= int64(m) {
			return
		}
		d := int64(time.Since(base)) - sent[i].Load()
		if got[i].CompareAndSwap(-1, d) && received.Add(1) == int64(m) {
			close(all)
		}
	}
	cons, err := t.newConsumer(ctx, 50, onJob)
	if err != nil {
		return res, err
	}
	p, err := t.newProducer(ctx, 1)
	if err != nil {
		_ = b.stopConsumer(cons)
		return res, err
	}
	// Warm the producer's connection; the job is ignored by onJob.
	err = p.enqueue(ctx, -1)
	if err == nil && !sleepCtx(ctx, b.cfg.idle) {
		err = ctx.Err()
	}
	start := time.Now()
	for k := 0; err == nil && k < m; k++ {
		if d := time.Until(start.Add(time.Duration(k) * b.cfg.every)); d > 0 {
			time.Sleep(d)
		}
		sent[k].Store(int64(time.Since(base)))
		err = p.enqueue(ctx, int64(k))
	}
	if err := b.awaitAndStop(ctx, t, all, p, cons, err, nil); err != nil {
		return res, err
	}
	res.lat, res.lost = startLatencies(got)
	if res.lost > 0 {
		return res, fmt.Errorf("%s: %d of %d jobs did not start within %s of the last enqueue", t.Name, res.lost, m, b.cfg.latencyWait)
	}
	return res, nil
}

// runLoaded starts t's workers (concurrency c) and, after a warm-up job and a short settle,
// enqueues jobs steadily at rate jobs/s for dur: one producer, open loop (job k is due at
// k/rate after the start), each call writing every job that has fallen due since the previous
// one (EnqueueAll for exq, a pipeline of LPUSHes for raw-batched; at tens of thousands of jobs
// a second one Enqueue per job would need more CPU than the 2 cores have). Every job carries its
// enqueue time (nowNS, stamped as the call is built) as its second arg; the worker records
// enqueue→start from it.
func (b *bench) runLoaded(ctx context.Context, t *target, rate float64, dur time.Duration, c int) (latencyResult, error) {
	var res latencyResult
	if err := b.reset(ctx, t); err != nil {
		return res, err
	}
	total := max(int(rate*dur.Seconds()), 1)
	got := make([]atomic.Int64, total)
	for k := range got {
		got[k].Store(-1)
	}
	var received atomic.Int64
	all := make(chan struct{})
	onJob := func(i, at int64) {
		if i < 0 || i >= int64(total) {
			return
		}
		d := nowNS() - at
		if got[i].CompareAndSwap(-1, d) && received.Add(1) == int64(total) {
			close(all)
		}
	}
	cons, err := t.newConsumer(ctx, c, onJob)
	if err != nil {
		return res, err
	}
	p, err := t.newProducer(ctx, 1)
	if err != nil {
		_ = b.stopConsumer(cons)
		return res, err
	}
	bp, ok := p.(batcher)
	if !ok {
		_ = p.close()
		_ = b.stopConsumer(cons)
		return res, fmt.Errorf("%s has no batch enqueue", t.Name)
	}
	// A warm-up job (ignored by onJob, counted by checkDrained), then a short settle.
	err = bp.enqueueBatch(ctx, []int64{-1})
	if err == nil && !sleepCtx(ctx, 300*time.Millisecond) {
		err = ctx.Err()
	}
	cpu0 := selfCPU()
	start := time.Now()
	ids := make([]int64, 0, 1000)
	sent := 0
	for err == nil && sent < total {
		due := min(total, int(time.Since(start).Seconds()*rate)+1, sent+cap(ids))
		if due <= sent {
			time.Sleep(time.Until(start.Add(time.Duration(float64(sent) / rate * 1e9))))
			continue
		}
		ids = ids[:0]
		for k := sent; k < due; k++ {
			ids = append(ids, int64(k))
		}
		err = bp.enqueueBatch(ctx, ids)
		sent = due
		if err == nil {
			err = ctx.Err()
		}
	}
	sendTime := time.Since(start)
	var cpu1 time.Duration
	if err := b.awaitAndStop(ctx, t, all, p, cons, err, func() { cpu1 = selfCPU() }); err != nil {
		return res, err
	}
	res.achieved = float64(sent) / sendTime.Seconds()
	res.clientUS = (cpu1 - cpu0).Seconds() * 1e6 / float64(total)
	res.lat, res.lost = startLatencies(got)
	if res.lost > 0 {
		return res, fmt.Errorf("%s: %d of %d jobs did not start within %s of the last enqueue", t.Name, res.lost, total, b.cfg.latencyWait)
	}
	if err := b.checkDrained(ctx, t, total+1); err != nil {
		return res, err
	}
	return res, nil
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(n, workers int, f func(i int64) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range min(workers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					next.Store(int64(n)) // stop the others
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// awaitAndStop ends a latency run: it waits (unless err is set) until every job has started or
// latencyWait passed, calls measured (if any) at that moment, closes the producer and stops the
// consumer, and returns the first error of the run, the stop or the workers' arg decoding.
func (b *bench) awaitAndStop(ctx context.Context, t *target, all <-chan struct{}, p interface{ close() error }, cons consumer, err error, measured func()) error {
	if err == nil {
		select {
		case <-all:
		case <-time.After(b.cfg.latencyWait):
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if measured != nil {
		measured()
	}
	_ = p.close()
	stopErr := b.stopConsumer(cons)
	if err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	if stopErr != nil {
		return fmt.Errorf("%s: stop: %w", t.Name, stopErr)
	}
	return takeArgErr()
}

// startLatencies returns the enqueue→start latencies recorded in got, sorted, and how many
// jobs never started (a negative entry).
func startLatencies(got []atomic.Int64) (lat []time.Duration, lost int) {
	for k := range got {
		if d := got[k].Load(); d >= 0 {
			lat = append(lat, time.Duration(d))
		} else {
			lost++
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, lost
}
