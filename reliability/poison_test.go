package reliability_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// TestPoisonInputEndsInDeadAndTheNodeGoesOn seeds a queue with every kind of bad document:
// each one ends in the dead set with a message saying what is wrong, nothing is run or re-run,
// and the node keeps working (and a big but valid job simply runs).
func TestPoisonInputEndsInDeadAndTheNodeGoesOn(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ctx := context.Background()
	rdb := client(t, srv.Addr())
	big := `{"class":"W","args":["` + strings.Repeat("x", 5<<20) + `"],"queue":"default","jid":"big-ok"}`
	poison := map[string]string{
		"invalid JSON":         `{"class":"W","args":[1,}`,
		"not an object":        `["W",[1]]`,
		"a JSON string":        `"W"`,
		"no class":             `{"args":[1],"queue":"default","jid":"x"}`,
		"args not a list":      `{"class":"W","args":{"a":1},"queue":"default","jid":"y"}`,
		"5 MB of invalid JSON": `{"class":"W","args":["` + strings.Repeat("x", 5<<20),
		"binary garbage":       "\x00\xff\xfe\x1b[31m\x80\x81 garbage",
		"empty":                "",
	}
	for _, raw := range poison {
		require.NoError(t, rdb.LPush(ctx, "poison:queue:default", raw).Err())
	}
	require.NoError(t, rdb.LPush(ctx, "poison:queue:default", big).Err())
	require.NoError(t, rdb.SAdd(ctx, "poison:queues", "default").Err())

	work := newCounter(nil)
	e := startNode(t, exq.Options{RedisURL: srv.URL(), Namespace: "poison", Workers: map[string]exq.Worker{"W": work}})
	testutil.WaitFor(t, "every poison message is dead", func() bool { return rdb.ZCard(ctx, "poison:dead").Val() == int64(len(poison)) })
	testutil.WaitFor(t, "the big valid job ran", func() bool { return work.ran("big-ok") })

	dead, err := rdb.ZRange(ctx, "poison:dead", 0, -1).Result()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, d := range dead {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(d), &m), "the dead entry is readable JSON")
		assert.Equal(t, "<unknown>", m["class"])
		assert.Equal(t, "exq.DecodeError", m["error_class"])
		msg, _ := m["error_message"].(string)
		assert.Contains(t, msg, "undecodable job")
		raw, _ := m["raw"].(string)
		if b64, ok := m["raw_base64"].(string); ok { // invalid UTF-8 is kept exactly there
			exact, err := base64.StdEncoding.DecodeString(b64)
			require.NoError(t, err)
			raw = string(exact)
		}
		for name, p := range poison {
			if raw == p {
				seen[name] = true
			}
		}
	}
	assert.Len(t, seen, len(poison), "each poison message is kept in the dead set: %v", seen)
	assert.Equal(t, 1, work.total(), "nothing but the valid job ran")
	assert.Zero(t, rdb.LLen(ctx, "poison:queue:default").Val())
	assert.Zero(t, rdb.LLen(ctx, "poison:queue:backup::"+e.NodeID()+"::default").Val(), "nothing is left to re-run")

	// The node goes on.
	jid, err := e.Enqueue(ctx, "default", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "a good job runs after the poison", func() bool { return work.ran(jid) })
}

// TestStartStopCyclesLeaveNoGoroutines starts and stops nodes repeatedly, including a Stop
// while Redis is unreachable; goleak (TestMain) then checks nothing was left running.
func TestStartStopCyclesLeaveNoGoroutines(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		work := newCounter(nil)
		e, err := exq.Start(ctx, exq.Options{RedisURL: srv.URL(), Namespace: "cycles", Logger: quietLogger(), Workers: map[string]exq.Worker{"W": work}})
		require.NoError(t, err)
		jid, err := e.Enqueue(ctx, "default", "W", nil)
		require.NoError(t, err)
		testutil.WaitFor(t, "the job ran", func() bool { return work.ran(jid) })
		require.NoError(t, e.Stop(ctx))
	}

	proxy := testutil.NewProxy(t, srv.Addr())
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	e, err := exq.Start(ctx, exq.Options{RedisURL: "redis://" + proxy.Addr() + "/0", Namespace: "cycles", Logger: quietLogger(),
		RedisTimeout: 500 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond,
		Workers: map[string]exq.Worker{"Hold": exq.WorkerFunc(func(ctx context.Context, _ *exq.Job) error {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})}})
	require.NoError(t, err)
	_, err = e.Enqueue(ctx, "default", "Hold", nil)
	require.NoError(t, err)
	<-started
	proxy.Down()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	err = e.Stop(sctx)
	assert.NoError(t, err, "Stop ends even when Redis is gone")
	t.Logf("Stop during an outage took %s", time.Since(start).Round(time.Millisecond))
	close(release)
	proxy.Up()
	// The job could not be handed back while Redis was down: it waits in the node's backup
	// list for a rescue, never lost.
	rdb := client(t, srv.Addr())
	assert.EqualValues(t, 1, rdb.LLen(ctx, "cycles:queue:backup::"+e.NodeID()+"::default").Val())
	_, err = rdb.ZScore(ctx, "cycles:heartbeats", e.NodeID()).Result()
	assert.NoError(t, err, "its heartbeat stays, so a live node rescues the job")
}
