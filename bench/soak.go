package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// sample is the process's memory and goroutines at one point of the soak.
type sample struct {
	label      string
	done       int64
	at         time.Duration
	rssKB      int64
	heapKB     int64
	goroutines int
}

func takeSample(label string, done int64, at time.Duration) sample {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return sample{label: label, done: done, at: at, rssKB: vmRSS(), heapKB: int64(ms.HeapInuse / 1024), goroutines: runtime.NumGoroutine()}
}

// vmRSS reads VmRSS (kB) from /proc/self/status; -1 where there is none.
func vmRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb
		}
	}
	return -1
}

type soakResult struct {
	n       int
	rate    float64
	samples []sample
}

// soakBacklog bounds how far enqueueing runs ahead of processing.
const soakBacklog = 20000

// runSoak pushes n no-op jobs through exq (concurrency 50): one enqueue-only node writes
// batches of 500 with EnqueueAll while a worker node processes them, the backlog kept under
// soakBacklog. Memory and goroutines are sampled at the start, every 10 % and at the end.
func (b *bench) runSoak(ctx context.Context, t *target, n int) (soakResult, error) {
	res := soakResult{n: n}
	if err := b.reset(ctx, t); err != nil {
		return res, err
	}
	var done atomic.Int64
	all := make(chan struct{})
	onJob := func(int64, int64) {
		if done.Add(1) == int64(n) {
			close(all)
		}
	}
	runtime.GC()
	start := time.Now()
	res.samples = append(res.samples, takeSample("before Start", 0, 0))
	cons, err := t.newConsumer(ctx, 50, onJob)
	if err != nil {
		return res, err
	}
	p, err := t.newProducer(ctx, 1)
	if err != nil {
		_ = b.stopConsumer(cons)
		return res, err
	}
	bp := p.(batcher)
	res.samples = append(res.samples, takeSample("start", 0, time.Since(start)))
	prodErr := make(chan error, 1)
	go func() {
		ids := make([]int64, 0, 500)
		for i := 0; i < n; {
			if int64(i)-done.Load() > soakBacklog {
				time.Sleep(time.Millisecond)
				continue
			}
			ids = ids[:0]
			for ; i < n && len(ids) < 500; i++ {
				ids = append(ids, int64(i))
			}
			if err := bp.enqueueBatch(ctx, ids); err != nil {
				prodErr <- err
				return
			}
		}
		prodErr <- nil
	}()
	next := 1
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(b.cfg.timeout + time.Duration(n/10000)*time.Second)
	var failure error
loop:
	for {
		select {
		case <-all:
			break loop
		case err := <-prodErr:
			if err != nil {
				failure = fmt.Errorf("soak: enqueue: %w", err)
				break loop
			}
		case <-deadline:
			failure = fmt.Errorf("soak: only %d of %d jobs ran in time", done.Load(), n)
			break loop
		case <-tick.C:
			if d := done.Load(); next < 10 && d >= int64(n)*int64(next)/10 {
				res.samples = append(res.samples, takeSample(fmt.Sprintf("%d %%", next*10), d, time.Since(start)))
				next++
			}
		}
	}
	elapsed := time.Since(start)
	if failure == nil {
		res.samples = append(res.samples, takeSample("end", done.Load(), elapsed))
		res.rate = float64(n) / elapsed.Seconds()
	}
	_ = p.close()
	if err := b.stopConsumer(cons); err != nil && failure == nil {
		failure = fmt.Errorf("soak: stop: %w", err)
	}
	runtime.GC()
	res.samples = append(res.samples, takeSample("after Stop + GC", done.Load(), time.Since(start)))
	if failure == nil {
		failure = b.checkDrained(ctx, t, n)
	}
	if err := takeArgErr(); err != nil && failure == nil {
		failure = err
	}
	return res, failure
}
