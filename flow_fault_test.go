package exq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	ossignal "os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// The fault test of batches and workflows runs its nodes as processes of their own (the test
// binary started again with flowNodeEnv), which reach Redis through a loopback proxy in the
// test's process that cuts the replies of the settle scripts, and SIGKILLs them while they
// work. The jobs record every run in Redis as "<jid>|<node>" (straight to Redis, past the
// proxy), and check, as they start, that their condition holds: a callback that its batch's
// condition holds, a workflow job that its parents succeeded.

// flowNodeEnv makes the test binary run runFlowNode with the JSON flowNodeConfig it holds.
const flowNodeEnv = "EXQ_TEST_FLOW_NODE"

type flowNodeConfig struct {
	RedisURL  string `json:"redis_url"`  // the node's Redis: the proxy
	RecordURL string `json:"record_url"` // where the jobs record their runs: Redis itself
	Namespace string `json:"namespace"`
}

// Keys the fault test's jobs write, in the test's namespace.
func flowRuns(ns string) string  { return ns + ":test:runs" }  // "<jid>|<node>" per run
func flowEarly(ns string) string { return ns + ":test:early" } // runs whose condition did not hold

// runFlowNode runs one node of the fault test until SIGTERM or SIGKILL.
func runFlowNode() {
	var c flowNodeConfig
	if err := json.Unmarshal([]byte(os.Getenv(flowNodeEnv)), &c); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	ro, err := redis.ParseURL(c.RecordURL)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	rdb := redis.NewClient(ro)
	k := wire.NewKeys(c.Namespace)
	var node string
	var e *Exq
	started := make(chan struct{}) // e and node are set
	cb := func(event string) *JobSpec { return &JobSpec{Queue: "cb", Class: "FlowCallback", Args: []any{event}} }
	record := func(ctx context.Context, job *Job, early bool) error {
		<-started // node is set
		p := rdb.TxPipeline()
		p.RPush(ctx, flowRuns(c.Namespace), job.JID+"|"+node)
		if early {
			p.RPush(ctx, flowEarly(c.Namespace), job.JID)
		}
		_, err := p.Exec(ctx)
		return err
	}
	work := WorkerFunc(func(ctx context.Context, job *Job) error {
		var mode string
		if err := job.Bind(&mode); err != nil {
			return err
		}
		early := false
		if id, _ := job.WorkflowID(); id != "" && mode != "anyway" {
			obj, err := wire.ParseObject(job.Raw())
			if err != nil {
				return err
			}
			var parents map[string]string
			if raw, ok := obj.Get("wf_parents"); ok {
				if err := json.Unmarshal(raw, &parents); err != nil {
					return err
				}
			}
			for p := range parents {
				if rdb.HGet(ctx, k.WorkflowGraph(id), "s:"+p).Val() != "succeeded" {
					early = true
				}
			}
		}
		if err := record(ctx, job, early); err != nil {
			return err
		}
		time.Sleep(time.Duration(50+rand.IntN(100)) * time.Millisecond)
		switch mode {
		case "spawn": // a child batch of this job's batch (record waited for e)
			_, _, err := e.NewBatch(ctx, BatchOptions{Parent: job.BatchID(), OnSuccess: cb("success"), OnComplete: cb("complete")},
				flowJobs(30, false))
			return err
		case "die":
			return errors.New("dies")
		case "fail-once":
			if job.RetryCount == 0 {
				return errors.New("fails once")
			}
		}
		return nil
	})
	callback := WorkerFunc(func(ctx context.Context, job *Job) error {
		var event string
		if err := job.Bind(&event); err != nil {
			return err
		}
		bid := job.CallbackOf()
		early := false
		switch event {
		case "success":
			early = rdb.SCard(ctx, k.BatchPending(bid)).Val() != 0
		case "complete":
			early = rdb.HGet(ctx, k.Batch(bid), "fresh").Val() != "0"
		case "death":
			early = rdb.SCard(ctx, k.BatchDead(bid)).Val() == 0
		}
		return record(ctx, job, early)
	})
	e, err = Start(context.Background(), Options{RedisURL: c.RedisURL, Namespace: c.Namespace,
		Queues:  []Queue{{Name: "q", Concurrency: 10}, {Name: "cb", Concurrency: 5}},
		Workers: map[string]Worker{"FlowWork": work, "FlowCallback": callback}, HeartbeatInterval: 500 * time.Millisecond,
		PollTimeout: 20 * time.Millisecond, SchedulerPollTimeout: 20 * time.Millisecond,
		Backoff: func(int, *Job) time.Duration { return 0 }, Logger: testLogger()})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	node = e.NodeID()
	close(started)
	fmt.Println("node", node)
	term := make(chan os.Signal, 1)
	ossignal.Notify(term, syscall.SIGTERM)
	<-term
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// startFlowNode starts one node process on Redis at redisURL (the proxy's address) and
// returns it once it has started.
func (v *env) startFlowNode(redisURL string) *fleetNode {
	v.t.Helper()
	return v.startChildren("flow node", flowNodeEnv, flowNodeConfig{RedisURL: redisURL, RecordURL: testutil.RedisURL(v.t), Namespace: v.ns}, 1)[0]
}

// cutsEvery is how many settle replies the fault test's proxy cuts each time it is armed.
const cutsEvery = 3

func flowJobs(n int, dying bool) []JobSpec {
	specs := make([]JobSpec, n)
	for i := range specs {
		mode := ""
		switch {
		case dying && i%100 == 7:
			mode = "die"
		case i%10 == 3:
			mode = "fail-once"
		}
		specs[i] = JobSpec{Queue: "q", Class: "FlowWork", Args: []any{mode}}
		if mode == "die" {
			specs[i].Options = []EnqueueOption{MaxRetries(0)}
		}
	}
	return specs
}

func flowStep(name string, deps ...string) WorkflowJob {
	return WorkflowJob{Name: name, Queue: "q", Class: "FlowWork", Args: []any{""}, DependsOn: deps}
}

// Batches whose jobs fail once (10 %) or die (1 %), and workflows (a diamond, a fan-out and
// fan-in, a chain, a dead parent), on three node processes of which one is SIGKILLed and
// replaced every half second (every two with -long), while a loopback proxy between the nodes
// and Redis cuts the replies of the settle scripts (Redis ran the script, the node sees its
// connection break and sends it again): every callback runs, none before its condition holds,
// and none twice on nodes that were not killed; every workflow job runs after its parents, and
// twice only on a killed node.
func TestBatchesAndWorkflowsAreExactlyOnceWhileNodesAreKilled(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	if testutil.OnCluster() {
		t.Skip("child nodes take a single-node URL")
	}
	batches, perBatch, wide, chain, kills, every := 2, 200, 20, 10, 6, 500*time.Millisecond
	if testutil.Long() {
		batches, perBatch, wide, chain, kills, every = 4, 1000, 100, 50, 15, 2*time.Second
	}
	ctx := context.Background()
	c, err := NewClient(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer c.Close()

	// The nodes reach Redis through the proxy, with the test Redis' database and password. The
	// settle scripts are loaded first, so that the nodes send EVALSHA with their SHA, which the
	// proxy recognises; it cuts from the start, so the first settles are cut (see cutsEvery).
	ro, err := redis.ParseURL(testutil.RedisURL(t))
	require.NoError(t, err)
	u, err := url.Parse(testutil.RedisURL(t))
	require.NoError(t, err)
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		t.Skipf("the proxy forwards TCP; %s is a %s URL", testutil.RedisURLEnv, u.Scheme)
	}
	proxy := testutil.NewProxy(t, ro.Addr)
	u.Host = proxy.Addr()
	settles := []string{}
	// AckSettle: a success's transition is in its acknowledgement's call (ack_flow.go).
	for _, s := range []*redis.Script{scripts.BatchSettle, scripts.WorkflowSettle, scripts.SettleGroup, scripts.AckSettle} {
		require.NoError(t, s.Load(ctx, v.rdb).Err())
		settles = append(settles, s.Hash())
	}
	proxy.CutReplyTo(cutsEvery, settles...)
	nodes := []*fleetNode{v.startFlowNode(u.String()), v.startFlowNode(u.String()), v.startFlowNode(u.String())}

	// What must happen: the callbacks that must run, by jid, with what they are for.
	callbacks := map[string]string{}
	var bids []string
	for b := 0; b < batches; b++ {
		dying := b%2 == 0
		o := BatchOptions{
			OnSuccess:  &JobSpec{Queue: "cb", Class: "FlowCallback", Args: []any{"success"}},
			OnComplete: &JobSpec{Queue: "cb", Class: "FlowCallback", Args: []any{"complete"}},
			OnDeath:    &JobSpec{Queue: "cb", Class: "FlowCallback", Args: []any{"death"}},
		}
		bid, _, err := c.NewBatch(ctx, o, flowJobs(perBatch, dying))
		require.NoError(t, err)
		bids = append(bids, bid)
		st, err := c.enq.jq.BatchRead(ctx, bid)
		require.NoError(t, err)
		fired := []string{"complete", "death"}
		if !dying {
			fired = []string{"complete", "success"}
		}
		for _, ev := range fired {
			callbacks[st.Fields["cbjid:"+ev]] = bid + " " + ev
		}
	}
	// A batch whose first job creates a child batch (again, if a kill makes it run twice).
	nestedJobs := append([]JobSpec{{Queue: "q", Class: "FlowWork", Args: []any{"spawn"}}}, flowJobs(50, false)...)
	nested, _, err := c.NewBatch(ctx, BatchOptions{
		OnSuccess:  &JobSpec{Queue: "cb", Class: "FlowCallback", Args: []any{"success"}},
		OnComplete: &JobSpec{Queue: "cb", Class: "FlowCallback", Args: []any{"complete"}},
	}, nestedJobs)
	require.NoError(t, err)
	bids = append(bids, nested)
	st, err := c.enq.jq.BatchRead(ctx, nested)
	require.NoError(t, err)
	for _, ev := range []string{"complete", "success"} {
		callbacks[st.Fields["cbjid:"+ev]] = nested + " " + ev
	}

	fan := []WorkflowJob{flowStep("root")}
	var mids []string
	for i := 0; i < wide; i++ {
		mids = append(mids, fmt.Sprintf("mid%03d", i))
		fan = append(fan, flowStep(mids[i], "root"))
	}
	fan = append(fan, flowStep("sink", mids...))
	steps := make([]WorkflowJob, chain)
	for i := range steps {
		steps[i] = flowStep(fmt.Sprintf("s%02d", i))
	}
	dead := flowStep("a")
	dead.Args, dead.Options = []any{"die"}, []EnqueueOption{MaxRetries(0)}
	anyway := flowStep("anyway", "a")
	anyway.Args, anyway.OnParentDeath = []any{"anyway"}, RunOnParentDeath
	var workflows []Workflow
	wantStates := map[string]map[string]string{}
	for _, jobs := range [][]WorkflowJob{
		{flowStep("a"), flowStep("b", "a"), flowStep("c", "a"), flowStep("d", "b", "c")},
		fan,
		Chain(steps...),
		{dead, flowStep("canceled", "a"), flowStep("grandchild", "canceled"), anyway},
	} {
		w, err := c.EnqueueWorkflow(ctx, WorkflowOptions{}, jobs)
		require.NoError(t, err)
		workflows = append(workflows, w)
		want := map[string]string{}
		for _, j := range jobs {
			want[j.Name] = "succeeded"
		}
		if _, ok := want["canceled"]; ok {
			want["a"], want["canceled"], want["grandchild"] = "dead", "canceled", "canceled"
		}
		wantStates[w.ID] = want
	}

	// The faults: kill a node, start another, and cut replies all along (CutReplyTo arms
	// cutsEvery cuts; it is armed again three times per kill).
	killedAt := map[string]bool{}
	cutKills := 0 // kills with a cut since the one before (once the jobs are done, none are)
	for k := 0; k < kills; k++ {
		before := proxy.Cuts()
		for range 3 {
			time.Sleep(every / 3)
			proxy.CutReplyTo(cutsEvery, settles...)
		}
		if proxy.Cuts() > before {
			cutKills++
		}
		i := rand.IntN(len(nodes))
		nodes[i].kill()
		killedAt[nodes[i].id] = true
		nodes[i] = v.startFlowNode(u.String())
	}
	// The proxy has cut from before the first job ran, so it has cut once at least by the time
	// any job settles; a machine so slow that no job has settled yet gets its first cut later.
	testutil.WaitFor(t, "the proxy cut a settle script's reply", func() bool { return proxy.Cuts() > 0 })
	proxy.CutReplyTo(0)
	cuts := proxy.Cuts()

	// Then let the survivors finish: every expected callback ran, every workflow finished.
	runsOf := func() map[string][]string {
		out := map[string][]string{}
		for _, r := range v.list(flowRuns(v.ns)) {
			jid, node, _ := strings.Cut(r, "|")
			out[jid] = append(out[jid], node)
		}
		return out
	}
	// The child batches, known once the spawner ran: each must complete and succeed too.
	children := func() []string {
		var out []string
		for _, m := range v.rdb.SMembers(ctx, v.keys.BatchJobs(nested)).Val() {
			if child, ok := strings.CutPrefix(m, "batch:"); ok {
				out = append(out, child)
			}
		}
		return out
	}
	ok := testutil.Within(func() bool {
		kids := children()
		if len(kids) == 0 {
			return false
		}
		for _, child := range kids {
			st, err := c.enq.jq.BatchRead(ctx, child)
			if err != nil {
				return false
			}
			for _, ev := range []string{"complete", "success"} {
				callbacks[st.Fields["cbjid:"+ev]] = child + " " + ev
			}
		}
		runs := runsOf()
		for jid := range callbacks {
			if len(runs[jid]) == 0 {
				return false
			}
		}
		for _, w := range workflows {
			meta, _, err := c.enq.jq.WorkflowRead(ctx, w.ID)
			if err != nil || meta["finished_at"] == "" {
				return false
			}
		}
		return true
	})
	require.True(t, ok, "every callback ran and every workflow finished")
	// Nothing more may run: wait until the queues, backup lists and retries are empty.
	testutil.WaitFor(t, "nothing left to run", func() bool {
		n := v.rdb.LLen(ctx, v.keys.Queue("q")).Val() + v.rdb.LLen(ctx, v.keys.Queue("cb")).Val() + v.rdb.ZCard(ctx, v.keys.Retry()).Val()
		for _, f := range nodes {
			n += v.rdb.LLen(ctx, v.keys.Backup(f.id, "q")).Val() + v.rdb.LLen(ctx, v.keys.Backup(f.id, "cb")).Val()
		}
		return n == 0
	})
	for _, f := range nodes {
		f.stop()
	}
	runs := runsOf()
	// survivors counts a jid's runs on nodes that were never killed: a second run is explained
	// only by a kill of the node of an earlier one.
	survivors := func(jid string) int {
		n := 0
		for _, node := range runs[jid] {
			if !killedAt[node] {
				n++
			}
		}
		return n
	}
	fired, extra := 0, 0
	for jid, what := range callbacks {
		if assert.NotEmpty(t, runs[jid], "callback %s ran", what) {
			fired++
		}
		assert.LessOrEqual(t, survivors(jid), 1, "callback %s ran once outside kills", what)
		extra += len(runs[jid]) - 1
	}
	// No callback that must not fire did: every callback job that ran is expected.
	for _, bid := range append(bids, children()...) {
		st, err := c.enq.jq.BatchRead(ctx, bid)
		require.NoError(t, err)
		for _, ev := range flows.Events {
			jid := st.Fields["cbjid:"+ev]
			if _, want := callbacks[jid]; !want {
				assert.Empty(t, runs[jid], "callback %s %s must not run", bid, ev)
			}
		}
	}
	api, err := NewAPI(ctx, ClientOptions{Redis: v.client, Namespace: v.ns, Logger: testLogger()})
	require.NoError(t, err)
	defer api.Close()
	released := 0
	for _, w := range workflows {
		st, err := api.Workflow(ctx, w.ID)
		require.NoError(t, err)
		for _, j := range st.Jobs {
			assert.Equal(t, wantStates[w.ID][j.Name], j.State, "workflow job %s", j.Name)
			if j.State == "canceled" {
				assert.Empty(t, runs[j.JID], "canceled job %s never runs", j.Name)
				continue
			}
			assert.NotEmpty(t, runs[j.JID], "workflow job %s ran", j.Name)
			assert.LessOrEqual(t, survivors(j.JID), 1, "workflow job %s ran once outside kills", j.Name)
			if len(j.DependsOn) > 0 {
				released++
			}
		}
	}
	assert.Empty(t, v.list(flowEarly(v.ns)), "no job or callback ran before its condition held")
	reruns := 0
	for _, nodes := range runs {
		if len(nodes) > 1 {
			reruns++
		}
	}
	t.Logf("batches %d (and %d child batches); jobs run %d; callbacks fired %d of %d expected (%d extra runs on killed nodes); "+
		"workflow dependents released %d; nodes killed %d; settle replies cut %d (before %d of the kills); jobs run more than once (a retry or a kill) %d",
		len(bids), len(children()), len(runs), fired, len(callbacks), extra, released, kills, cuts, cutKills, reruns)
}
