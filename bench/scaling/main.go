// Command scaling measures how exq scales out: jobs/s and Redis CPU per job for 1, 2 and 4
// worker processes (separate OS processes: this binary re-executed with -worker) on one Redis,
// and the same on a 3-master Redis Cluster with 3 shards (exq.StartSharded, ByJID). It starts
// its own redis-server processes on free loopback ports and kills them at the end. See
// "Scaling exq" in ../../README.md.
//
//	cd bench && go run ./scaling [-n 20000] [-reps 3] [-procs 1,2,4] [-c 50] [-setups single,cluster]
//
// Each run: flush, enqueue n no-op jobs (8 callers of Enqueue, Redis CPU measured), start the worker processes and wait until each is
// connected, read INFO cpu of every master, tell the workers to go, wait until they have run n
// jobs between them, read INFO cpu again. Needs redis-server and redis-cli on PATH.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exqgo/exq"
	"github.com/redis/go-redis/v9"
)

func main() {
	var (
		n      = flag.Int("n", 20000, "jobs per run, pre-enqueued")
		reps   = flag.Int("reps", 3, "runs per setup (the table shows medians)")
		procs  = flag.String("procs", "1,2,4", "worker process counts")
		conc   = flag.Int("c", 50, "Concurrency of each worker process (per shard)")
		setups = flag.String("setups", "single,cluster", "single (one Redis) and/or cluster (3 masters, 3 shards)")
		wrk    = flag.Bool("worker", false, "internal: run as a worker process")
		url    = flag.String("url", "", "internal: RedisURL for -worker")
		nss    = flag.String("ns", "", "internal: comma-separated namespaces for -worker")
	)
	flag.Parse()
	if *wrk {
		if err := worker(*url, strings.Split(*nss, ","), *conc); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		return
	}
	var ps []int
	for _, s := range strings.Split(*procs, ",") {
		p, err := strconv.Atoi(s)
		if err != nil || p < 1 {
			fmt.Fprintf(os.Stderr, "scaling: bad -procs %q\n", *procs)
			os.Exit(2)
		}
		ps = append(ps, p)
	}
	code := 0
	for _, s := range strings.Split(*setups, ",") {
		if err := measure(s, *n, *reps, ps, *conc); err != nil {
			fmt.Fprintf(os.Stderr, "scaling: %s: %v\n", s, err)
			code = 1
		}
	}
	os.Exit(code)
}

// worker serves the namespaces until its stdin closes. It subscribes to "default" only when
// it reads "go", and prints its count of finished jobs every 5 ms while it changes.
func worker(url string, namespaces []string, c int) error {
	ctx := context.Background()
	var done atomic.Int64
	node, err := exq.StartSharded(ctx, exq.Options{RedisURL: url, Concurrency: c, Queues: []exq.Queue{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Workers: map[string]exq.Worker{"Noop": exq.WorkerFunc(func(context.Context, *exq.Job) error {
			done.Add(1)
			return nil
		})}}, exq.ShardOptions{Namespaces: namespaces, By: exq.ByJID})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return node.Stop(ctx)
	}
	if err := node.Subscribe("default", c); err != nil {
		return err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var last int64 = -1
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if d := done.Load(); d != last {
					fmt.Println(d)
					last = d
				}
			}
		}
	}()
	for in.Scan() {
	}
	close(stop)
	wg.Wait()
	return node.Stop(ctx)
}

type result struct {
	jobsPerSec float64
	redisUS    float64   // Redis CPU per job, all masters, µs
	perMaster  []float64 // each master's share of that, µs
	workerUS   float64   // worker processes' CPU per job, µs (start-up included)
	enqueueUS  float64   // Redis CPU per Enqueue call, all masters, µs
}

func measure(setup string, n, reps int, procs []int, conc int) error {
	dir, err := os.MkdirTemp("", "exq-scaling-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var (
		url        string
		masters    []string
		namespaces []string
		servers    []*exec.Cmd
	)
	defer func() {
		for _, s := range servers {
			_ = s.Process.Kill()
			_ = s.Wait()
		}
	}()
	ctx := context.Background()
	switch setup {
	case "single":
		s, addr, err := startRedis(filepath.Join(dir, "single"), false)
		if err != nil {
			return err
		}
		servers, masters, url, namespaces = append(servers, s), []string{addr}, "redis://"+addr+"/0", []string{"exq"}
	case "cluster":
		for i := range 3 {
			s, addr, err := startRedis(filepath.Join(dir, strconv.Itoa(i)), true)
			if err != nil {
				return err
			}
			servers, masters = append(servers, s), append(masters, addr)
		}
		args := append([]string{"--cluster", "create"}, masters...)
		out, err := exec.Command("redis-cli", append(args, "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
		}
		url = "redis://" + masters[0] + "?cluster=true&addr=" + masters[1] + "&addr=" + masters[2]
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: masters})
		defer cc.Close()
		if err := waitClusterOK(ctx, masters); err != nil {
			return err
		}
		if namespaces, err = exq.ShardNamespaces(ctx, cc, "exq", 3); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown setup %q", setup)
	}
	fmt.Printf("\n%s: %d master(s) %v, namespaces %v, %d no-op jobs per run, Concurrency %d per worker process and shard\n",
		setup, len(masters), masters, namespaces, n, conc)
	fmt.Println("| worker processes | jobs/s (median) | Redis CPU µs/job to run (median, all masters) | per master | Redis CPU µs per Enqueue | worker CPU µs/job | runs (jobs/s) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, p := range procs {
		var rs []result
		for range reps {
			r, err := run(ctx, url, masters, namespaces, n, p, conc)
			if err != nil {
				return fmt.Errorf("%d processes: %w", p, err)
			}
			rs = append(rs, r)
		}
		med := func(f func(result) float64) float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r)
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		var per, runs []string
		for i := range masters {
			per = append(per, fmt.Sprintf("%.1f", med(func(r result) float64 { return r.perMaster[i] })))
		}
		for _, r := range rs {
			runs = append(runs, fmt.Sprintf("%.0f", r.jobsPerSec))
		}
		fmt.Printf("| %d | %.0f | %.1f | %s | %.1f | %.1f | %s |\n", p, med(func(r result) float64 { return r.jobsPerSec }),
			med(func(r result) float64 { return r.redisUS }), strings.Join(per, " / "),
			med(func(r result) float64 { return r.enqueueUS }),
			med(func(r result) float64 { return r.workerUS }), strings.Join(runs, ", "))
	}
	return nil
}

func run(ctx context.Context, url string, masters, namespaces []string, n, procs, conc int) (result, error) {
	for _, m := range masters {
		c := redis.NewClient(&redis.Options{Addr: m})
		err := c.FlushAll(ctx).Err()
		_ = c.Close()
		if err != nil {
			return result{}, err
		}
	}
	cl, err := exq.NewShardedClient(ctx, exq.ClientOptions{RedisURL: url}, exq.ShardOptions{Namespaces: namespaces, By: exq.ByJID})
	if err != nil {
		return result{}, err
	}
	// Eight callers of Enqueue (one job per call, as application code enqueues), timed on the
	// masters' CPU: the enqueue side of a job's Redis cost.
	enqBefore, err := cpu(ctx, masters)
	if err != nil {
		_ = cl.Close()
		return result{}, err
	}
	var next atomic.Int64
	var enqErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if _, err := cl.Enqueue(ctx, "default", "Noop", []any{i}); err != nil {
					errOnce.Do(func() { enqErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if enqErr != nil {
		_ = cl.Close()
		return result{}, enqErr
	}
	enqAfter, err := cpu(ctx, masters)
	if err != nil {
		_ = cl.Close()
		return result{}, err
	}
	_ = cl.Close()

	self, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Scanner
	}
	var ps []proc
	defer func() {
		for _, p := range ps {
			_ = p.stdin.Close()
			_ = p.cmd.Wait()
		}
	}()
	for range procs {
		cmd := exec.Command(self, "-worker", "-url", url, "-ns", strings.Join(namespaces, ","), "-c", strconv.Itoa(conc))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return result{}, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return result{}, err
		}
		if err := cmd.Start(); err != nil {
			return result{}, err
		}
		p := proc{cmd, stdin, bufio.NewScanner(stdout)}
		ps = append(ps, p)
		if !p.out.Scan() || p.out.Text() != "ready" {
			return result{}, errors.New("a worker process did not start")
		}
	}
	before, err := cpu(ctx, masters)
	if err != nil {
		return result{}, err
	}
	counts := make([]atomic.Int64, procs)
	finished := make(chan struct{})
	var once sync.Once
	start := time.Now()
	for i, p := range ps {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			return result{}, err
		}
		go func() {
			for p.out.Scan() {
				v, _ := strconv.ParseInt(p.out.Text(), 10, 64)
				counts[i].Store(v)
				var sum int64
				for j := range counts {
					sum += counts[j].Load()
				}
				if sum >= int64(n) {
					once.Do(func() { close(finished) })
				}
			}
		}()
	}
	select {
	case <-finished:
	case <-time.After(5 * time.Minute):
		return result{}, errors.New("the jobs did not finish within 5 minutes")
	}
	elapsed := time.Since(start)
	after, err := cpu(ctx, masters)
	if err != nil {
		return result{}, err
	}
	r := result{jobsPerSec: float64(n) / elapsed.Seconds()}
	for i := range masters {
		r.enqueueUS += (enqAfter[i] - enqBefore[i]) * 1e6 / float64(n)
	}
	for i := range masters {
		us := (after[i] - before[i]) * 1e6 / float64(n)
		r.perMaster = append(r.perMaster, us)
		r.redisUS += us
	}
	var workerCPU time.Duration
	for _, p := range ps {
		_ = p.stdin.Close()
		_ = p.cmd.Wait()
		workerCPU += p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
	}
	ps = nil
	r.workerUS = float64(workerCPU.Microseconds()) / float64(n)
	return r, nil
}

// cpu reads used_cpu_sys + used_cpu_user (seconds) of each server.
func cpu(ctx context.Context, addrs []string) ([]float64, error) {
	var out []float64
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		info, err := c.Info(ctx, "cpu").Result()
		_ = c.Close()
		if err != nil {
			return nil, err
		}
		var sum float64
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, err
				}
				sum += f
			}
		}
		out = append(out, sum)
	}
	return out, nil
}

func startRedis(dir string, cluster bool) (*exec.Cmd, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}
	if cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
	}
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c.Ping(context.Background()).Err() == nil {
			return cmd, addr, nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, "", fmt.Errorf("redis-server on %s did not answer", addr)
		}
	}
}

func waitClusterOK(ctx context.Context, addrs []string) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Close()
				return fmt.Errorf("cluster node %s not ok: %v", a, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
	}
	return nil
}
