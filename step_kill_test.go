package exq

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// A node killed with SIGKILL in the middle of a job of durable steps, in a process of its own
// (the test binary started again with stepNodeEnv): the node that rescues the job finds the
// steps saved before the kill and runs only the others.

// stepNodeEnv makes the test binary run runStepNode with the JSON stepNodeConfig it holds.
const stepNodeEnv = "EXQ_TEST_STEP_NODE"

// stepNodeConfig is what a step node works on; Block is where its jobs stop until the node is
// killed: "inside:b" (inside step b's function) or "after:a" (after step a was saved).
type stepNodeConfig struct {
	RedisURL  string        `json:"redis_url"`
	Namespace string        `json:"namespace"`
	Heartbeat time.Duration `json:"heartbeat"`
	Block     string        `json:"block"`
}

// stepLog is the list of every call of a step's function, "<step> <node> <jid>"; stepsDone of
// every run that returned, "<node> <jid> <a> <b> <c>" with the steps' results it got.
func stepLog(ns string) string   { return ns + ":test:step_calls" }
func stepsDone(ns string) string { return ns + ":test:steps_done" }

// stepsJob is class "Steps": three steps a, b and c, each logging its function's calls.
func stepsJob(rdb *redis.Client, ns, node, block string) WorkerFunc {
	return func(ctx context.Context, job *Job) error {
		step := func(name string, hold bool) (string, error) {
			return Step(ctx, name, func(ctx context.Context) (string, error) {
				if err := rdb.RPush(context.WithoutCancel(ctx), stepLog(ns), name+" "+node+" "+job.JID).Err(); err != nil {
					return "", err
				}
				if hold {
					<-ctx.Done() // until the node is killed
					return "", ctx.Err()
				}
				return strings.ToUpper(name) + "-" + node, nil
			})
		}
		a, err := step("a", false)
		if err != nil {
			return err
		}
		if block == "after:a" {
			<-ctx.Done()
			return ctx.Err()
		}
		b, err := step("b", block == "inside:b")
		if err != nil {
			return err
		}
		c, err := step("c", false)
		if err != nil {
			return err
		}
		return rdb.RPush(context.WithoutCancel(ctx), stepsDone(ns), strings.Join([]string{node, job.JID, a, b, c}, " ")).Err()
	}
}

// runStepNode runs one node until it is killed. It prints its node id on stdout once started.
func runStepNode() {
	var c stepNodeConfig
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if err := json.Unmarshal([]byte(os.Getenv(stepNodeEnv)), &c); err != nil {
		fail(err)
	}
	opts, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		fail(err)
	}
	rdb := redis.NewClient(opts)
	node := "steps-" + strconv.Itoa(os.Getpid())
	_, err = Start(context.Background(), Options{RedisURL: c.RedisURL, Namespace: c.Namespace, NodeID: node,
		Queues: []Queue{{Name: "q", Concurrency: 10}}, Workers: map[string]Worker{"Steps": stepsJob(rdb, c.Namespace, node, c.Block)},
		HeartbeatInterval: c.Heartbeat, PollTimeout: 20 * time.Millisecond, DisableScheduler: true, Logger: testLogger()})
	if err != nil {
		fail(err)
	}
	fmt.Println("node", node)
	select {} // until killed
}

// startStepNode starts a step node and waits until it has started; it is killed when the test
// ends.
func (v *env) startStepNode(c stepNodeConfig) *fleetNode {
	v.t.Helper()
	c.RedisURL, c.Namespace = testutil.RedisURL(v.t), v.ns
	return v.startChildren("step node", stepNodeEnv, c, 1)[0]
}

// Jobs of three steps each, on a node killed (SIGKILL) inside step b's function or after step
// a was saved: the rescued jobs complete on another node with step a's result from the killed
// node, its function not called again; step b's function runs a second time only when the
// kill came inside it (its result was never saved), and step c's once.
func testKilledNodesStepsAreNotRunAgainAfterTheRescue(t *testing.T) {
	// Timed (timed_test.go): child processes judged by heartbeat windows.
	for _, block := range []string{"inside:b", "after:a"} {
		t.Run(block, func(t *testing.T) {
			v := newEnv(t)
			ctx := context.Background()
			const interval, jobs = 200 * time.Millisecond, 4
			victim := v.startStepNode(stepNodeConfig{Heartbeat: interval, Block: block})
			en := v.enqueuer(time.Now)
			var jids []string
			for i := 0; i < jobs; i++ {
				jid, err := en.enqueue(ctx, "q", "Steps", []any{i}, nil)
				require.NoError(t, err)
				jids = append(jids, jid)
			}
			// Every job holds where the kill comes, with step a saved.
			holdAt := "b " + victim.id
			if block == "after:a" {
				holdAt = "a " + victim.id
			}
			testutil.WaitFor(t, "every job reached its hold", func() bool {
				n := 0
				for _, e := range v.list(stepLog(v.ns)) {
					if strings.HasPrefix(e, holdAt+" ") {
						n++
					}
				}
				saved := 0
				for _, jid := range jids {
					if v.rdb.HExists(ctx, v.keys.Steps(jid), "a").Val() {
						saved++
					}
				}
				return n == jobs && saved == jobs
			})
			victim.kill()
			v.start(Options{HeartbeatInterval: interval, Queues: []Queue{{Name: "q", Concurrency: jobs}},
				Workers: map[string]Worker{"Steps": stepsJob(v.rdb, v.ns, "rescuer", "")}})
			testutil.WaitFor(t, "every job completes after the rescue", func() bool { return len(v.list(stepsDone(v.ns))) == jobs })

			calls := map[string]int{}
			for _, e := range v.list(stepLog(v.ns)) {
				f := strings.Fields(e)
				calls[f[0]+" "+f[2]]++
			}
			wantB := 1
			if block == "inside:b" {
				wantB = 2 // once on the killed node, inside which the kill came; once after the rescue
			}
			for _, jid := range jids {
				assert.Equal(t, 1, calls["a "+jid], "job %s: step a's result was saved before the kill", jid)
				assert.Equal(t, wantB, calls["b "+jid], "job %s: step b", jid)
				assert.Equal(t, 1, calls["c "+jid], "job %s: step c", jid)
			}
			for _, e := range v.list(stepsDone(v.ns)) {
				f := strings.Fields(e)
				require.Len(t, f, 5)
				assert.Equal(t, "rescuer", f[0])
				assert.Equal(t, "A-"+victim.id, f[2], "job %s: step a's result is the killed node's", f[1])
				assert.Equal(t, "B-rescuer", f[3])
			}
			t.Logf("%d jobs killed %s step b on node %s: step a ran once each, step b %d time(s) each, all completed on the rescuer",
				jobs, map[bool]string{true: "inside", false: "before"}[block == "inside:b"], victim.id, wantB)
		})
	}
}
