package exq

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	ossignal "os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// An iteration over many items runs on a fleet of node processes while one node after another
// is killed (SIGKILL) and then stopped (a rolling Stop). Each item counts itself in Redis, and
// each run logs the cursor it started from, so the test can tell every item processed more than
// once from the run whose death caused it.

// iterNodeEnv makes the test binary run runIterNode with the JSON iterNodeConfig it holds.
const iterNodeEnv = "EXQ_TEST_ITER_NODE"

type iterNodeConfig struct {
	RedisURL  string        `json:"redis_url"`
	Namespace string        `json:"namespace"`
	Heartbeat time.Duration `json:"heartbeat"`
	SaveEvery time.Duration `json:"save_every"`
}

// Keys the fleet's iteration writes, in the test's namespace.
func iterItems(ns string) string         { return ns + ":test:items" } // item → times processed
func iterRuns(ns string) string          { return ns + ":test:runs" }  // "pid cursor retry_count", per run start
func iterLast(ns string, pid int) string { return ns + ":test:last:" + strconv.Itoa(pid) }

// runIterNode runs one node with the Walk iteration until SIGTERM (then stops it cleanly) or
// SIGKILL. It prints its node id on stdout once started.
func runIterNode() {
	var c iterNodeConfig
	if err := json.Unmarshal([]byte(os.Getenv(iterNodeEnv)), &c); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	opts, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	rdb := redis.NewClient(opts)
	pid := os.Getpid()
	begin := func(ctx context.Context, job *Job, _ int, cursor int) {
		rdb.RPush(context.WithoutCancel(ctx), iterRuns(c.Namespace), fmt.Sprintf("%d %d %d", pid, cursor, job.RetryCount))
	}
	walk := Iteration[int, int]{
		SaveEvery: c.SaveEvery,
		OnStart:   begin, OnResume: begin,
		Each: func(ctx context.Context, job *Job, n, cursor int) (int, bool, error) {
			p := rdb.TxPipeline() // both or neither: a SIGKILL cannot split them
			p.HIncrBy(ctx, iterItems(c.Namespace), strconv.Itoa(cursor), 1)
			p.Set(ctx, iterLast(c.Namespace, pid), cursor, 0)
			if _, err := p.Exec(ctx); err != nil {
				return cursor, false, err
			}
			return cursor + 1, cursor+1 >= n, nil
		},
	}
	e, err := Start(context.Background(), Options{RedisURL: c.RedisURL, Namespace: c.Namespace,
		Queues: []Queue{{Name: "it", Concurrency: 1}}, Workers: map[string]Worker{"Walk": walk},
		HeartbeatInterval: c.Heartbeat, PollTimeout: 20 * time.Millisecond, Logger: testLogger()})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("node", e.NodeID())
	term := make(chan os.Signal, 1)
	ossignal.Notify(term, syscall.SIGTERM)
	<-term
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	_ = rdb.Close()
	os.Exit(0)
}

// startIterNode starts one node process running c and waits until it has started.
func (v *env) startIterNode(c iterNodeConfig) *fleetNode {
	v.t.Helper()
	c.RedisURL, c.Namespace = testutil.RedisURL(v.t), v.ns
	return v.startChildren("iteration node", iterNodeEnv, c, 1)[0]
}

type iterRun struct {
	pid, cursor, retryCount int
}

// iterRunsOf reads the runs logged so far, in the order they started.
func (v *env) iterRunsOf() []iterRun {
	v.t.Helper()
	var out []iterRun
	for _, s := range v.list(iterRuns(v.ns)) {
		var r iterRun
		_, err := fmt.Sscanf(s, "%d %d %d", &r.pid, &r.cursor, &r.retryCount)
		require.NoError(v.t, err, s)
		out = append(out, r)
	}
	return out
}

func TestIterationOnAFleetWithKillsAndARollingStopProcessesEveryItem(t *testing.T) {
	if testutil.OnCluster() {
		t.Skip("child nodes take a single-node URL")
	}
	t.Parallel()
	items, kills, stops := 20_000, 4, 3
	cfg := iterNodeConfig{Heartbeat: 200 * time.Millisecond, SaveEvery: 100 * time.Millisecond}
	if testutil.Long() {
		items, kills, stops = 100_000, 10, 5
		cfg.SaveEvery = time.Second
	}
	v := newEnv(t)
	ctx := context.Background()
	nodes := map[int]*fleetNode{}
	add := func() {
		f := v.startIterNode(cfg)
		nodes[f.cmd.Process.Pid] = f
	}
	for range 3 {
		add()
	}
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer c.Close()
	jid, err := c.Enqueue(ctx, "it", "Walk", []any{items})
	require.NoError(t, err)

	done := func() bool { return v.rdb.HGet(ctx, v.keys.Iteration(jid), "exq_done").Val() == "1" }
	// runner is the node running the job now, once it has processed an item in this run.
	runner := func() *fleetNode {
		runs := v.iterRunsOf()
		if len(runs) == 0 {
			return nil
		}
		last := runs[len(runs)-1]
		f := nodes[last.pid]
		if f == nil || f.done {
			return nil
		}
		if err := v.rdb.Get(ctx, iterLast(v.ns, last.pid)).Err(); err != nil {
			return nil // not one item yet
		}
		return f
	}
	killed, stopped := map[int]bool{}, map[int]bool{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for len(killed) < kills || len(stopped) < stops {
		<-tick.C
		if done() {
			break
		}
		testutil.WaitFor(t, "a node running the iteration", func() bool { return runner() != nil || done() })
		f := runner()
		if f == nil {
			break
		}
		pid := f.cmd.Process.Pid
		if len(killed) < kills {
			f.kill()
			killed[pid] = true
		} else {
			f.stop() // exits 0: the run was interrupted and handed back
			stopped[pid] = true
		}
		add()
	}
	testutil.WaitFor(t, "the iteration's end", done)

	counts := v.rdb.HGetAll(ctx, iterItems(v.ns)).Val()
	runs := v.iterRunsOf()
	again := 0
	for i := 0; i < items; i++ {
		n, _ := strconv.Atoi(counts[strconv.Itoa(i)])
		require.GreaterOrEqual(t, n, 1, "item %d was never processed", i)
		again += n - 1
	}
	require.Len(t, counts, items, "no item beyond the end")
	// Each run's items processed again by the next run: those after the last save of a killed
	// run; none after a Stop, which saves the cursor of the next item.
	sinceSave := 0
	for k := 0; k+1 < len(runs); k++ {
		last, err := v.rdb.Get(ctx, iterLast(v.ns, runs[k].pid)).Int()
		if err == redis.Nil {
			continue // killed before its first item
		}
		require.NoError(t, err)
		n := max(0, last-runs[k+1].cursor+1)
		if stopped[runs[k].pid] {
			require.Zero(t, n, "run %d (stopped) left no item to run again", k)
		}
		sinceSave += n
	}
	for k, r := range runs {
		require.Zero(t, r.retryCount, "run %d: an interruption or a rescue counts no retry", k)
	}
	require.Equal(t, sinceSave, again, "items processed twice are exactly those after the last save of each killed run")
	require.Equal(t, 0, v.zcard(v.keys.Retry())+v.zcard(v.keys.Dead()))
	t.Logf("%d items, %d runs (%d killed, %d stopped): %d items processed more than once, all after a killed run's last save (save every %s)",
		items, len(runs), len(killed), len(stopped), again, cfg.SaveEvery)
}
