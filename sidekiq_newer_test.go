package exq

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// Fixtures in this file are written byte for byte as Sidekiq 7.3.10 and 8.1.7 write them; each
// names the Sidekiq source lines it copies (github.com/sidekiq/sidekiq at the tag).

// sidekiq7Job is a job as Sidekiq 7.3's client pushes it (job_util.rb normalize_item and
// client.rb atomic_push): float seconds.
const sidekiq7Job = `{"retry":true,"queue":"default","args":[1,"a"],"class":"HardJob","jid":"f5a3bd49e7d4c3a1b2c3d4e5","created_at":1796010415.667948,"enqueued_at":1796010415.668102}`

// sidekiq8Job is the same job as Sidekiq 8.1 pushes it: created_at from job_util.rb:61
// (now_in_millis, job_util.rb:65-66) and enqueued_at from client.rb:293-298, integer ms.
const sidekiq8Job = `{"retry":true,"queue":"default","args":[1,"a"],"class":"HardJob","jid":"a1b2c3d4e5f60718293a4b5c","created_at":1796010415667,"enqueued_at":1796010415668}`

// workValue is one value of a Sidekiq 7 or 8 "<identity>:work" hash: processor.rb (7.3.10:278,
// 8.1.7:286) sets {queue:, payload: jobstr, run_at: Time.now.to_i} and launcher.rb (7.3.10:148,
// 8.1.7:155) dumps it with Sidekiq.dump_json: the payload is the job string, run_at integer.
func workValue(t *testing.T, queue, job string, runAt int64) string {
	b, err := json.Marshal(struct {
		Queue   string `json:"queue"`
		Payload string `json:"payload"`
		RunAt   int64  `json:"run_at"`
	}{queue, job, runAt})
	require.NoError(t, err)
	return string(b)
}

// sidekiqProcess registers a Sidekiq process as the heartbeat of the given version writes it.
func (v *env) sidekiqProcess(id string, fields ...any) {
	v.t.Helper()
	ctx := context.Background()
	require.NoError(v.t, v.rdb.HSet(ctx, v.keys.Node(id), fields...).Err())
	require.NoError(v.t, v.rdb.Expire(ctx, v.keys.Node(id), time.Minute).Err())
	require.NoError(v.t, v.rdb.SAdd(ctx, v.keys.Processes(), id).Err())
}

// The jobs a Sidekiq 7 or 8 process is running (in "<identity>:work") are what BusyJobs lists,
// together with those of a Sidekiq 6 or Exq process (in "<identity>:workers").
func TestBusyJobsListsTheWorkOfSidekiq7And8(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	// launcher.rb 7.3.10:171-176 (the hash) and 247-260 (to_data, the info).
	v.sidekiqProcess("sk7:1:abc",
		"info", `{"hostname":"sk7","started_at":1796010400.123,"pid":101,"tag":"app","concurrency":5,"queues":["default"],"weights":[{"default":0}],"labels":[],"identity":"sk7:1:abc","version":"7.3.10","embedded":false}`,
		"busy", 1, "beat", "1796010418.5", "rtt_us", 120, "quiet", "false", "rss", 51200)
	// launcher.rb 8.1.7:178-184 (concurrency a field of its own, 179) and 255-274 (to_data).
	v.sidekiqProcess("sk8:2:def",
		"info", `{"hostname":"sk8","started_at":1796010401.5,"pid":202,"tag":"app","capsules":{"default":{"concurrency":7,"mode":"strict","weights":{"default":0}}},"queues":["default"],"weights":[{"default":0}],"labels":[],"identity":"sk8:2:def","version":"8.1.7","embedded":false}`,
		"concurrency", 7, "busy", 1, "beat", "1796010418.6", "rtt_us", 130, "quiet", "false", "rss", 61440)
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Work("sk7:1:abc"), "t1a2", workValue(t, "default", sidekiq7Job, 1796010417)).Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Work("sk8:2:def"), "t3b4", workValue(t, "default", sidekiq8Job, 1796010418)).Err())

	a, _ := v.api()
	busy, err := a.BusyJobs(ctx)
	require.NoError(t, err)
	require.Len(t, busy, 2)
	for i, want := range []struct{ node, run, jid, raw string }{
		{"sk7:1:abc", "t1a2", "f5a3bd49e7d4c3a1b2c3d4e5", sidekiq7Job},
		{"sk8:2:def", "t3b4", "a1b2c3d4e5f60718293a4b5c", sidekiq8Job},
	} {
		assert.Equal(t, want.node, busy[i].Node)
		assert.Equal(t, want.run, busy[i].RunID)
		assert.Equal(t, want.raw, busy[i].Raw)
		assert.Equal(t, "default", busy[i].Queue)
		assert.Equal(t, want.jid, jobOf(t, busy[i].JobRecord).JID)
	}
	assert.Equal(t, time.Unix(1796010417, 0), busy[0].RunAt)

	procs, err := a.Processes(ctx)
	require.NoError(t, err)
	got := map[string]Process{}
	for _, p := range procs {
		got[p.Identity] = p
	}
	assert.Equal(t, 5, got["sk7:1:abc"].Concurrency, "Sidekiq 7: info.concurrency")
	assert.Equal(t, 7, got["sk8:2:def"].Concurrency, "Sidekiq 8.1.2+: the hash's own concurrency")
	assert.Equal(t, "7.3.10", got["sk7:1:abc"].Version)
	assert.Equal(t, "8.1.7", got["sk8:2:def"].Version)
	assert.Equal(t, "Sidekiq", got["sk8:2:def"].Runtime)
}

// A Sidekiq 8.0 or 8.1.0/8.1.1 process has its concurrency only in its info's capsules.
func TestProcessesReadsTheConcurrencyOfSidekiq8Capsules(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	// to_data in 8.1.1 kept "concurrency" in info; 8.0.0 likewise. A writer with capsules
	// and neither field is summed over its capsules.
	v.sidekiqProcess("sk8:3:ghi",
		"info", `{"hostname":"sk8","started_at":1796010401.5,"pid":303,"tag":"","capsules":{"default":{"concurrency":3,"mode":"strict","weights":{"default":0}},"low":{"concurrency":2,"mode":"strict","weights":{"low":0}}},"queues":["default","low"],"labels":[],"identity":"sk8:3:ghi","version":"8.1.0","embedded":true}`,
		"busy", 0, "beat", "1796010418.6", "quiet", "false")
	a, _ := v.api()
	procs, err := a.Processes(context.Background())
	require.NoError(t, err)
	require.Len(t, procs, 1)
	assert.Equal(t, 5, procs[0].Concurrency)
}

// An exq node lists its running jobs under both names, with the same values, in the form
// Sidekiq 7's WorkSet reads (api.rb 7.3.10:1125-1146: load_json of each value, the payload
// parsed by JobRecord, run_at an epoch); both lists empty when the job ends and go on Stop.
func TestBusyListIsWrittenUnderTheNamesOfEverySidekiq(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	release := make(chan struct{})
	rec := &recorder{fn: func(context.Context, *Job) error { <-release; return nil }}
	e, err := start(ctx, Options{Redis: v.client, Namespace: v.ns, Logger: testLogger(), PollTimeout: 20 * time.Millisecond,
		Workers: map[string]Worker{"HardJob": rec}}, testHooks{pingInterval: 20 * time.Millisecond, statsInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	v.push("default", sidekiq7Job)
	node := e.NodeID()
	testutil.WaitFor(t, "the running job is listed under both names", func() bool {
		return len(v.hash(v.keys.Workers(node))) == 1 && len(v.hash(v.keys.Work(node))) == 1
	})
	assert.Equal(t, v.hash(v.keys.Workers(node)), v.hash(v.keys.Work(node)))
	for _, val := range v.hash(v.keys.Work(node)) {
		var w struct {
			Queue   string  `json:"queue"`
			Payload string  `json:"payload"`
			RunAt   float64 `json:"run_at"`
		}
		require.NoError(t, json.Unmarshal([]byte(val), &w), val)
		assert.Equal(t, sidekiq7Job, w.Payload)
		assert.Equal(t, "default", w.Queue)
		assert.InDelta(t, time.Now().Unix(), w.RunAt, 60)
	}
	assert.Greater(t, v.rdb.TTL(ctx, v.keys.Work(node)).Val(), time.Duration(0), "a crashed node's list expires")
	a, _ := v.api()
	busy, err := a.BusyJobs(ctx)
	require.NoError(t, err)
	assert.Len(t, busy, 1, "one job, though listed twice")
	close(release)
	testutil.WaitFor(t, "both lists are empty", func() bool {
		return len(v.hash(v.keys.Workers(node))) == 0 && len(v.hash(v.keys.Work(node))) == 0
	})
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, e.Stop(stopCtx))
	assert.Zero(t, v.rdb.Exists(ctx, v.keys.Workers(node), v.keys.Work(node)).Val())
}

// An exq node's hash carries what Sidekiq 7 and 8's Busy page read: version, weights and
// embedded in its info (launcher.rb 7.3.10:247-260), and concurrency as a field of its own
// (8.1.7:179; ProcessSet#each, api.rb 8.1.7:1048-1061, reads only that).
func TestNodeHashCarriesWhatSidekiq7And8Read(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{Queues: []Queue{{Name: "critical", Concurrency: 3}, {Name: "default", Concurrency: 4}}}, testHooks{pingInterval: 20 * time.Millisecond})
	var h map[string]string
	testutil.WaitFor(t, "the node hash", func() bool { h = v.hash(v.keys.Node(e.NodeID())); return h["info"] != "" })
	assert.Equal(t, "7", h["concurrency"])
	var info map[string]any
	require.NoError(t, json.Unmarshal([]byte(h["info"]), &info))
	assert.True(t, strings.HasPrefix(info["version"].(string), "exq-go "), info["version"])
	assert.Equal(t, false, info["embedded"], "not embedded: Sidekiq Web shows its Quiet and Stop buttons")
	assert.Equal(t, []any{map[string]any{"critical": 0.0, "default": 0.0}}, info["weights"])
	assert.Contains(t, h["info"], `"weights":[{"critical":0,"default":0}]`, "in subscription order")
	assert.Equal(t, 7.0, info["concurrency"], "Sidekiq 6 and 7 read it in info")
}
