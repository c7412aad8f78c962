package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// shardedEnv is three namespaces on the test Redis, passed to the CLI as one list.
type shardedEnv struct {
	t   *testing.T
	url string
	nss []string
}

func newShardedEnv(t *testing.T) *shardedEnv {
	s := &shardedEnv{t: t, url: testutil.RedisURL(t)}
	for range 3 {
		_, ns := testutil.Redis(t) // deleted when the test ends
		s.nss = append(s.nss, ns)
	}
	return s
}

func (s *shardedEnv) run(args ...string) (code int, stdout, stderr string) {
	s.t.Helper()
	r := runBin(s.t, exqBin, "", append(args, "--redis-url", s.url, "--namespace", strings.Join(s.nss, ","))...)
	return r.code, r.out, r.errOut
}

func (s *shardedEnv) json(v any, args ...string) {
	s.t.Helper()
	code, out, errOut := s.run(append([]string{"--json"}, args...)...)
	require.Equal(s.t, 0, code, "exq %v: %s", args, errOut)
	require.NoError(s.t, json.Unmarshal([]byte(out), v), out)
}

func (s *shardedEnv) client(i int) *exq.Client {
	cl, err := exq.NewClient(context.Background(), exq.ClientOptions{RedisURL: s.url, Namespace: s.nss[i]})
	require.NoError(s.t, err)
	s.t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func (s *shardedEnv) keys() int {
	rdb, _ := testutil.Redis(s.t)
	n := 0
	for _, ns := range s.nss {
		k, err := rdb.Keys(context.Background(), ns+":*").Result()
		require.NoError(s.t, err)
		n += len(k)
	}
	return n
}

func TestShardedStatsQueuesAndRetrySumEveryShard(t *testing.T) {
	s := newShardedEnv(t)
	ctx := context.Background()
	enq := func(i int, queue string, n int) {
		for range n {
			_, err := s.client(i).Enqueue(ctx, queue, "Shard.Job", []any{i})
			require.NoError(t, err)
		}
	}
	enq(0, "default", 2)
	enq(0, "mail", 1)
	enq(1, "default", 1)
	enq(2, "other", 3)
	later, err := s.client(1).EnqueueIn(ctx, "mail", "Shard.Later", time.Hour, []any{})
	require.NoError(t, err)

	var st map[string]float64
	s.json(&st, "stats")
	assert.Equal(t, 7.0, st["enqueued"])
	assert.Equal(t, 1.0, st["scheduled"])
	assert.Equal(t, 0.0, st["processed"])
	code, out, _ := s.run("stats")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "PROCESSED  FAILED  BUSY  PROCESSES  ENQUEUED")
	assert.Regexp(t, `(?m)^0 +0 +0 +0 +7 +0 +1 +0\s*$`, out)

	var queues []map[string]any
	s.json(&queues, "queues")
	assert.Equal(t, []map[string]any{wantQueue("default", 3, false), wantQueue("mail", 1, false), wantQueue("other", 3, false)}, queues)
	code, out, _ = s.run("queues")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^default +3 *$`, out)

	var ps []exq.Process
	s.json(&ps, "processes")
	assert.Empty(t, ps)
	code, _, errOut := s.run("busy")
	assert.Equal(t, 0, code, errOut)

	// retry JID finds the scheduled job in the second shard and moves it to its queue there.
	var moved map[string]any
	s.json(&moved, "retry", later)
	assert.Equal(t, map[string]any{"jid": later, "from": "schedule", "queue": "mail", "namespace": s.nss[1]}, moved)
	s.json(&queues, "queues")
	assert.Equal(t, wantQueue("mail", 2, false), queues[1])
	s.json(&st, "stats")
	assert.Equal(t, 8.0, st["enqueued"])
	assert.Equal(t, 0.0, st["scheduled"])
	code, _, errOut = s.run("retry", later)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no job "+later)

	// delete JID finds a job in any shard too.
	dead, err := s.client(2).EnqueueIn(ctx, "other", "Shard.Later", time.Hour, []any{})
	require.NoError(t, err)
	code, out, errOut = s.run("delete", dead)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "deleted "+dead+" from schedule (namespace "+s.nss[2]+")\n", out)
	code, _, _ = s.run("cancel", "no-such-jid")
	assert.Equal(t, 1, code)
}

func TestShardedRefusesOneNamespaceCommands(t *testing.T) {
	s := newShardedEnv(t)
	before := s.keys()
	for _, args := range [][]string{
		{"jobs", "default"},
		{"retries"},
		{"scheduled"},
		{"dead"},
		{"enqueue", "default", "X", "[]"},
		{"retry", "--all"},
		{"delete", "--all", "--set", "dead", "--force"},
		{"delete", "--queue", "default", "--force"},
	} {
		code, out, errOut := s.run(args...)
		assert.Equal(t, 2, code, "exq %v", args)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "exq "+args[0]+": ", "exq %v", args)
		assert.Contains(t, errOut, "works on one namespace; pass a single --namespace", "exq %v", args)
	}
	assert.Equal(t, before, s.keys(), "a refused command writes nothing")

	for _, ns := range []string{"a,,b", "a,b,a", "a,"} {
		r := runBin(t, exqBin, "", "--redis-url", s.url, "--namespace", ns, "stats")
		assert.Equal(t, 2, r.code, ns)
		assert.Contains(t, r.errOut, "--namespace", ns)
	}
}

func TestShardedProcessesAndQuiet(t *testing.T) {
	s := newShardedEnv(t)
	node, err := exq.StartSharded(context.Background(), exq.Options{RedisURL: s.url, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Workers: map[string]exq.Worker{"Idle": exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil })}},
		exq.ShardOptions{Namespaces: s.nss})
	require.NoError(t, err)
	defer node.Stop(context.Background())
	var ps []exq.Process
	testutil.WaitFor(t, "every shard shows its node", func() bool {
		s.json(&ps, "processes")
		return len(ps) == len(s.nss)
	})
	var st map[string]float64
	s.json(&st, "stats")
	assert.Equal(t, 3.0, st["processes"])
	for _, p := range ps {
		assert.Equal(t, "exq", p.Runtime)
	}
	code, out, errOut := s.run("quiet", ps[0].Identity)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "sent TSTP to "+ps[0].Identity)
	code, _, _ = s.run("quiet", "no-such-node")
	assert.Equal(t, 1, code)
}

// With several namespaces, queues sums the slots in use and the starts over the shards and
// shows the limit and rate one shard runs the queue with (they apply in each shard).
func TestShardedQueuesSumSlotsInUseAndStarts(t *testing.T) {
	s := newShardedEnv(t)
	// Per hour: starts count within the rate's window, and a loaded run can take more than a
	// second between writing them and the second command.
	limits := `{"global_limit":5,"rate":200,"rate_per_ms":3600000}`
	limitQueue(t, s.nss[1], "mail", limits, 2, 1, 3)
	limitQueue(t, s.nss[2], "mail", limits, 1, 0, 1)
	_, err := s.client(0).Enqueue(context.Background(), "mail", "Shard.Job", []any{})
	require.NoError(t, err)

	code, out, errOut := s.run("queues")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^mail +1 +3/5 +200/1h +4$`, out)
	var queues []map[string]any
	s.json(&queues, "queues")
	assert.Equal(t, []map[string]any{{"queue": "mail", "size": 1.0, "paused": false, "global_limit": 5.0, "in_use": 3.0,
		"rate": 200.0, "rate_per_ms": 3600000.0, "started": 4.0}}, queues)
}
