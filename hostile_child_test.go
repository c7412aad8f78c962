package exq

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// Tests of nodes that are killed, paused (SIGSTOP) and resumed run each such node in a process
// of its own: the test binary started again with runNodeEnv. Its jobs log every run in Redis,
// by jid, so a test counts what was fed, what ran, what is missing and what ran twice.

// runNodeEnv makes the test binary run runRunNode with the JSON runNodeConfig it holds.
const runNodeEnv = "EXQ_TEST_RUN_NODE"

// runNodeConfig is what a run node works on.
type runNodeConfig struct {
	RedisURL  string        `json:"redis_url"`
	Namespace string        `json:"namespace"`
	Queues    []Queue       `json:"queues"`
	Heartbeat time.Duration `json:"heartbeat"`
	Missed    int           `json:"missed"`
}

// Keys the run nodes' jobs write, outside any namespace's keys: each entry is "<node> <jid>".
func runsStarted(ns string) string { return ns + ":test:started" } // every run that began
func runsDone(ns string) string    { return ns + ":test:done" }    // every run that returned nil

// runJob is class "Run": it runs args[0] milliseconds (0: until its context ends), logging its
// start and, when it completes, its end. It returns its context's error if that ends first.
func runJob(rdb *redis.Client, ns, node string) WorkerFunc {
	return func(ctx context.Context, job *Job) error {
		var ms int
		if err := job.Bind(&ms); err != nil {
			return err
		}
		if err := rdb.RPush(context.WithoutCancel(ctx), runsStarted(ns), node+" "+job.JID).Err(); err != nil {
			return err
		}
		var timer <-chan time.Time
		if ms > 0 {
			timer = time.After(time.Duration(ms) * time.Millisecond)
		}
		select {
		case <-timer:
		case <-ctx.Done():
			return ctx.Err()
		}
		return rdb.RPush(context.WithoutCancel(ctx), runsDone(ns), node+" "+job.JID).Err()
	}
}

// runRunNode runs one node until it is killed. It prints its node id on stdout once started.
func runRunNode() {
	var c runNodeConfig
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if err := json.Unmarshal([]byte(os.Getenv(runNodeEnv)), &c); err != nil {
		fail(err)
	}
	opts, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		fail(err)
	}
	rdb := redis.NewClient(opts)
	node := "run-" + strconv.Itoa(os.Getpid())
	_, err = Start(context.Background(), Options{RedisURL: c.RedisURL, Namespace: c.Namespace, NodeID: node,
		Queues: c.Queues, Workers: map[string]Worker{"Run": runJob(rdb, c.Namespace, node)},
		HeartbeatInterval: c.Heartbeat, MissedHeartbeatsAllowed: c.Missed, PollTimeout: 20 * time.Millisecond,
		DisableScheduler: true, Logger: testLogger()})
	if err != nil {
		fail(err)
	}
	fmt.Println("node", node)
	select {} // until killed
}

// startRunNode starts a node working on c (Redis and namespace filled in from v) and waits
// until it has started. It is killed when the test ends.
func (v *env) startRunNode(c runNodeConfig) *fleetNode {
	v.t.Helper()
	c.RedisURL, c.Namespace = testutil.RedisURL(v.t), v.ns
	return v.startChildren("run node", runNodeEnv, c, 1)[0]
}

// nodeRuns is what the jobs logged, per jid: the nodes of the runs that began and of the runs that
// completed, in order.
type nodeRuns struct {
	started, done map[string][]string
}

// runs reads the run log.
func (v *env) runs() nodeRuns {
	v.t.Helper()
	read := func(key string) map[string][]string {
		out := map[string][]string{}
		for _, e := range v.list(key) {
			node, jid, _ := strings.Cut(e, " ")
			out[jid] = append(out[jid], node)
		}
		return out
	}
	return nodeRuns{started: read(runsStarted(v.ns)), done: read(runsDone(v.ns))}
}

// runsOn counts the runs that began on node.
func (l nodeRuns) runsOn(node string) int {
	n := 0
	for _, nodes := range l.started {
		for _, s := range nodes {
			if s == node {
				n++
			}
		}
	}
	return n
}

// enqueueRuns enqueues n jobs of class Run on q, each running ms milliseconds, and returns their
// jids.
func (v *env) enqueueRuns(q string, n, ms int) []string {
	v.t.Helper()
	en := v.enqueuer(time.Now)
	jids := make([]string, n)
	for i := range jids {
		jid, err := en.enqueue(context.Background(), q, "Run", []any{ms}, nil)
		require.NoError(v.t, err)
		jids[i] = jid
	}
	return jids
}
