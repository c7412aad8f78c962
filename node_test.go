package exq

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

func (v *env) hash(key string) map[string]string {
	v.t.Helper()
	h, err := v.rdb.HGetAll(context.Background(), key).Result()
	require.NoError(v.t, err)
	return h
}

func TestNodeRegistersItsHashWithInfoAndTTL(t *testing.T) {
	v := newEnv(t)
	ctx := context.Background()
	e := v.start(Options{pingInterval: 20 * time.Millisecond,
		Queues: []Queue{{Name: "default", Concurrency: 7}, {Name: "mail", Concurrency: 3}}})
	node := e.NodeID()
	testutil.WaitFor(t, "the node hash", func() bool { return v.rdb.Exists(ctx, v.keys.Node(node)).Val() == 1 })
	assert.True(t, v.rdb.SIsMember(ctx, v.keys.Processes(), node).Val())
	h := v.hash(v.keys.Node(node))
	assert.Equal(t, "0", h["busy"])
	assert.Equal(t, "false", h["quiet"])
	beat, err := strconv.ParseFloat(h["beat"], 64)
	require.NoError(t, err)
	assert.InDelta(t, float64(time.Now().Unix()), beat, 60)
	_, err = strconv.Atoi(h["rtt_us"])
	assert.NoError(t, err)
	rss, err := strconv.Atoi(h["rss"])
	require.NoError(t, err)
	assert.Greater(t, rss, 0)

	var info map[string]any
	require.NoError(t, json.Unmarshal([]byte(h["info"]), &info))
	host, _ := os.Hostname()
	assert.Equal(t, host, info["hostname"])
	assert.Equal(t, node, info["identity"])
	assert.EqualValues(t, os.Getpid(), info["pid"])
	assert.Equal(t, "", info["tag"])
	assert.Equal(t, []any{}, info["labels"])
	assert.Equal(t, []any{"default", "mail"}, info["queues"])
	assert.EqualValues(t, 10, info["concurrency"], "the real concurrency, not Exq's 0")
	assert.EqualValues(t, 0, info["busy"])
	assert.Equal(t, false, info["quiet"])
	assert.InDelta(t, float64(time.Now().Unix()), info["started_at"], 60)

	ttl := v.rdb.TTL(ctx, v.keys.Node(node)).Val()
	assert.Greater(t, ttl, 50*time.Second)
	assert.LessOrEqual(t, ttl, 60*time.Second)
}

func TestBusyJobsAreVisibleWhileTheyRunAndGoneAfter(t *testing.T) {
	v := newEnv(t)
	release := make(chan struct{})
	rec := &recorder{fn: func(context.Context, *Job) error { <-release; return nil }}
	e := v.start(Options{pingInterval: 20 * time.Millisecond, statsInterval: 20 * time.Millisecond, Workers: map[string]Worker{"Slow": rec}})
	raw := `{"class":"Slow","args":["slow"],"queue":"default","jid":"busy-1","bid":"x"}`
	v.push("default", raw)
	workers := v.keys.Workers(e.NodeID())
	testutil.WaitFor(t, "the running job is listed", func() bool { return len(v.hash(workers)) == 1 })
	testutil.WaitFor(t, "the node hash says busy 1", func() bool { return v.hash(v.keys.Node(e.NodeID()))["busy"] == "1" })
	for id, val := range v.hash(workers) {
		var w struct {
			Queue   string `json:"queue"`
			Payload string `json:"payload"`
			RunAt   int64  `json:"run_at"`
			Host    string `json:"host"`
			PID     string `json:"pid"`
		}
		require.NoError(t, json.Unmarshal([]byte(val), &w), val)
		assert.Equal(t, "default", w.Queue)
		assert.Equal(t, raw, w.Payload, "the payload is the raw job, as a string")
		assert.InDelta(t, time.Now().Unix(), w.RunAt, 60)
		assert.Equal(t, e.NodeID(), w.Host)
		assert.Equal(t, id, w.PID)
	}
	ttl := v.rdb.TTL(context.Background(), workers).Val()
	assert.Greater(t, ttl, time.Duration(0), "a crashed node's busy list expires")
	close(release)
	testutil.WaitFor(t, "the busy list is empty", func() bool { return len(v.hash(workers)) == 0 })
	testutil.WaitFor(t, "the node hash says busy 0", func() bool { return v.hash(v.keys.Node(e.NodeID()))["busy"] == "0" })
}

func TestStopRemovesTheNodeFromProcessesAndHeartbeats(t *testing.T) {
	v := newEnv(t)
	ctx := context.Background()
	e, err := Start(ctx, Options{Redis: v.rdb, Namespace: v.ns, Logger: testLogger(), pingInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	testutil.WaitFor(t, "registered", func() bool { return v.rdb.SIsMember(ctx, v.keys.Processes(), e.NodeID()).Val() })
	_, err = v.rdb.ZScore(ctx, v.keys.Heartbeats(), e.NodeID()).Result()
	require.NoError(t, err, "the node beat before it fetched anything")
	require.NoError(t, e.Stop(ctx))
	assert.False(t, v.rdb.SIsMember(ctx, v.keys.Processes(), e.NodeID()).Val())
	assert.Zero(t, v.rdb.Exists(ctx, v.keys.Workers(e.NodeID())).Val())
	assert.Equal(t, redis.Nil, v.rdb.ZScore(ctx, v.keys.Heartbeats(), e.NodeID()).Err(), "a cleanly stopped node leaves nothing to rescue")
}

func TestPruneRemovesExpiredNodesAndOnlyTheirBusyLists(t *testing.T) {
	v := newEnv(t)
	ctx := context.Background()
	e := v.start(Options{})
	// "ghost" crashed: its hash expired, its busy list is stale. "alive" pings.
	// (The hash comes before the set member, as a pinger writes them: the node's own pinger
	// may prune at any moment.)
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Node("alive"), "info", "{}", "busy", "1").Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Workers("alive"), "b", "{}").Err())
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Workers("ghost"), "a", "{}").Err())
	require.NoError(t, v.rdb.SAdd(ctx, v.keys.Processes(), "ghost", "alive").Err())
	require.NoError(t, e.prune(ctx))
	members := v.rdb.SMembers(ctx, v.keys.Processes()).Val()
	assert.NotContains(t, members, "ghost")
	assert.Contains(t, members, "alive")
	assert.Zero(t, v.rdb.Exists(ctx, v.keys.Workers("ghost")).Val())
	assert.Equal(t, map[string]string{"b": "{}"}, v.hash(v.keys.Workers("alive")), "a live node's busy list is left alone")
}
