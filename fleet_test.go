package exq

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	ossignal "os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// Tests of limits that hold across nodes run each node in a process of its own (the test
// binary, started again with fleetNodeEnv), so the nodes share nothing but Redis and one can be
// killed with SIGKILL. The jobs measure themselves, in Redis: fleetJob counts the jobs running
// at once and logs every start with the time it began.

// fleetNodeEnv makes the test binary run runFleetNode with the JSON fleetConfig it holds.
const fleetNodeEnv = "EXQ_TEST_FLEET_NODE"

// fleetConfig is what a fleet node runs.
type fleetConfig struct {
	RedisURL    string        `json:"redis_url"`
	Namespace   string        `json:"namespace"`
	Queue       Queue         `json:"queue"`
	Heartbeat   time.Duration `json:"heartbeat"`
	JobDuration time.Duration `json:"job_duration"` // < 0: until the job's context ends
	Periodic    []PeriodicJob `json:"periodic"`
	// FailEvery, for the keyed sequence test's "Seq" jobs, fails the first run of every job
	// whose number is a multiple of it (0: none fails).
	FailEvery int `json:"fail_every"`
}

// Keys the fleet jobs write, in the test's namespace.
func fleetRunning(ns string) string { return ns + ":test:running" } // jobs running now
func fleetMax(ns string) string     { return ns + ":test:max" }     // most ever running at once
func fleetStarts(ns string) string  { return ns + ":test:starts" }  // start times, µs since 1970
func fleetEnded(ns string) string   { return ns + ":test:ended" }   // jobs that returned
var fleetBegin = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
redis.call('RPUSH', KEYS[3], ARGV[1])
return n`)

// runFleetNode runs one node until SIGTERM (then stops it cleanly) or SIGKILL. It prints its
// node id on stdout once started.
func runFleetNode() {
	var c fleetConfig
	if err := json.Unmarshal([]byte(os.Getenv(fleetNodeEnv)), &c); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	opts, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	rdb := redis.NewClient(opts)
	keys := []string{fleetRunning(c.Namespace), fleetMax(c.Namespace), fleetStarts(c.Namespace)}
	job := WorkerFunc(func(ctx context.Context, job *Job) error {
		began := time.Now()
		if err := fleetBegin.Run(ctx, rdb, keys, began.UnixMicro()).Err(); err != nil {
			return err
		}
		if c.JobDuration < 0 {
			<-ctx.Done()
		} else {
			time.Sleep(c.JobDuration - time.Since(began))
		}
		// The job has ended here, as far as any limit is concerned: its slot frees after this.
		rdb.Decr(context.WithoutCancel(ctx), fleetRunning(c.Namespace))
		rdb.Incr(context.WithoutCancel(ctx), fleetEnded(c.Namespace))
		return ctx.Err()
	})
	e, err := Start(context.Background(), Options{RedisURL: c.RedisURL, Namespace: c.Namespace, Queues: []Queue{c.Queue},
		Workers: map[string]Worker{"Timed": job, "Seq": seqJob(rdb, c)}, HeartbeatInterval: c.Heartbeat, PollTimeout: 20 * time.Millisecond,
		Periodic: c.Periodic, Logger: testLogger(), Backoff: func(int, *Job) time.Duration { return 20 * time.Millisecond }})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	id := e.NodeID()
	fleetNodeID.Store(&id)
	fmt.Println("node", id)
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

// fleetNode is a node in a process of its own.
type fleetNode struct {
	t    *testing.T
	cmd  *exec.Cmd
	id   string
	done bool
}

// startFleet starts n nodes running c (Redis and namespace filled in from v) and waits until
// each has started. They are killed when the test ends if the test did not stop them.
func (v *env) startFleet(n int, c fleetConfig) []*fleetNode {
	v.t.Helper()
	c.RedisURL, c.Namespace = testutil.RedisURL(v.t), v.ns
	return v.startChildren("fleet node", fleetNodeEnv, c, n)
}

// startChildren starts n nodes in processes of their own: the test binary again, with the
// environment variable env holding cfg's JSON, which makes it run that kind of node (what, in
// failures). All of them start at once (a -race binary takes a while to start); then it waits
// until each printed "node <id>". Each is killed when the test ends if the test did not stop
// it.
func (v *env) startChildren(what, env string, cfg any, n int) []*fleetNode {
	v.t.Helper()
	js, err := json.Marshal(cfg)
	require.NoError(v.t, err)
	nodes := make([]*fleetNode, n)
	outs := make([]io.Reader, n)
	for i := range nodes {
		cmd := testutil.ChildNode()
		cmd.Env = append(os.Environ(), env+"="+string(js))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(v.t, err)
		require.NoError(v.t, cmd.Start())
		nodes[i], outs[i] = &fleetNode{t: v.t, cmd: cmd}, stdout
		v.t.Cleanup(nodes[i].kill)
	}
	for i, f := range nodes {
		line := bufio.NewScanner(outs[i])
		require.True(v.t, line.Scan(), "%s %d said nothing", what, i)
		word := strings.Fields(line.Text())
		require.True(v.t, len(word) == 2 && word[0] == "node", "%s %d: %s", what, i, line.Text())
		f.id = word[1]
	}
	return nodes
}

// kill ends the node with SIGKILL, unless it has ended.
func (f *fleetNode) kill() {
	if f.done {
		return
	}
	_ = f.cmd.Process.Signal(syscall.SIGKILL)
	_ = f.cmd.Wait()
	f.done = true
}

// pause stops the node's process (SIGSTOP) and returns once every thread of it is stopped
// (state T in /proc: the signal is delivered asynchronously); resume lets it go on (SIGCONT).
func (f *fleetNode) pause() {
	f.t.Helper()
	require.NoError(f.t, f.cmd.Process.Signal(syscall.SIGSTOP))
	tasks := fmt.Sprintf("/proc/%d/task", f.cmd.Process.Pid)
	testutil.WaitFor(f.t, "node "+f.id+" stopped", func() bool {
		ids, err := os.ReadDir(tasks)
		if err != nil {
			return false
		}
		for _, id := range ids {
			stat, err := os.ReadFile(tasks + "/" + id.Name() + "/stat")
			if err != nil {
				return false
			}
			// "pid (comm) S ...": the state follows the last ')'.
			i := bytes.LastIndexByte(stat, ')')
			if i < 0 || i+2 >= len(stat) || (stat[i+2] != 'T' && stat[i+2] != 't') {
				return false
			}
		}
		return true
	})
}

func (f *fleetNode) resume() { _ = f.cmd.Process.Signal(syscall.SIGCONT) }

// stop ends the node with SIGTERM (a clean Stop) and requires it to exit 0.
func (f *fleetNode) stop() {
	f.t.Helper()
	require.NoError(f.t, f.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(f.t, f.cmd.Wait(), "node %s stops cleanly", f.id)
	f.done = true
}

// stopFleet stops the nodes as stop does, all at once: each Stop waits for its runs and its
// last writes, and one after another they added up to seconds.
func stopFleet(nodes []*fleetNode) {
	if len(nodes) > 0 {
		nodes[0].t.Helper()
	}
	for _, f := range nodes {
		require.NoError(f.t, f.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, f := range nodes {
		require.NoError(f.t, f.cmd.Wait(), "node %s stops cleanly", f.id)
		f.done = true
	}
}

// enqueueTimed enqueues n jobs of class Timed on queue q, in batches.
func (v *env) enqueueTimed(q string, n int) {
	v.t.Helper()
	c, err := NewClient(context.Background(), ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(v.t, err)
	defer c.Close()
	for n > 0 {
		batch := make([]JobSpec, min(n, 500))
		for i := range batch {
			batch[i] = JobSpec{Queue: q, Class: "Timed"}
		}
		_, err := c.EnqueueAll(context.Background(), batch)
		require.NoError(v.t, err)
		n -= len(batch)
	}
}

// fleetCount reads one of the fleet jobs' counters.
func (v *env) fleetCount(key string) int {
	v.t.Helper()
	n, err := v.rdb.Get(context.Background(), key).Int()
	if err == redis.Nil {
		return 0
	}
	require.NoError(v.t, err)
	return n
}

// fleetStartTimes reads every start the fleet jobs logged, in µs since 1970.
func (v *env) fleetStartTimes() []int64 {
	v.t.Helper()
	var out []int64
	for _, s := range v.list(fleetStarts(v.ns)) {
		n, err := strconv.ParseInt(s, 10, 64)
		require.NoError(v.t, err)
		out = append(out, n)
	}
	return out
}
