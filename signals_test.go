package exq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

func (v *env) signal(node, sig string) {
	v.t.Helper()
	require.NoError(v.t, v.rdb.LPush(context.Background(), v.keys.Signals(node), sig).Err())
}

func TestTSTPSignalQuietsTheNode(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	e := v.start(Options{Workers: map[string]Worker{"W": rec}}, testHooks{pingInterval: 10 * time.Millisecond})
	v.signal(e.NodeID(), "TSTP")
	testutil.WaitFor(t, "the node reports quiet", func() bool { return v.hash(v.keys.Node(e.NodeID()))["quiet"] == "true" })
	_, err := e.Enqueue(context.Background(), "default", "W", nil)
	require.NoError(t, err)
	// Two more pings prove the node is alive; it still fetched nothing.
	beat, pings := v.hash(v.keys.Node(e.NodeID()))["beat"], 0
	testutil.WaitFor(t, "two more pings", func() bool {
		if b := v.hash(v.keys.Node(e.NodeID()))["beat"]; b != beat {
			beat, pings = b, pings+1
		}
		return pings >= 2
	})
	assert.Zero(t, rec.count())
	assert.Len(t, v.list(v.keys.Queue("default")), 1)
	assert.Empty(t, v.list(v.keys.Signals(e.NodeID())), "signals are consumed")
	select {
	case <-e.Done():
		t.Fatal("TSTP does not ask the application to stop")
	default:
	}
}

func TestTERMSignalQuietsTheNodeAndClosesDone(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{}, testHooks{pingInterval: 10 * time.Millisecond})
	v.signal(e.NodeID(), "TERM")
	testutil.WaitFor(t, "Done is closed", func() bool {
		select {
		case <-e.Done():
			return true
		default:
			return false
		}
	})
	assert.True(t, e.mgr.quiet.Load())
}

func TestCancelSignalSendsTheRunningJobToDead(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	started := make(chan struct{})
	w := WorkerFunc(func(ctx context.Context, job *Job) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	e := v.start(Options{Workers: map[string]Worker{"Long": w}}, testHooks{pingInterval: 10 * time.Millisecond, statsInterval: 10 * time.Millisecond})
	v.push("default", `{"class":"Long","args":[],"queue":"default","jid":"c1","retry":25,"bid":"keep"}`)
	<-started
	v.signal(e.NodeID(), `CANCEL:{"jid":"c1","pid":"whatever"}`)
	testutil.WaitFor(t, "the job is dead", func() bool { return v.zcard(v.keys.Dead()) == 1 })
	m := decode(t, v.zset(v.keys.Dead())[0].Member.(string))
	assert.Equal(t, "Canceled", m["error_message"])
	assert.Equal(t, "exq.Canceled", m["error_class"])
	assert.Equal(t, "c1", m["jid"])
	assert.Equal(t, "keep", m["bid"])
	assert.Zero(t, v.zcard(v.keys.Retry()), "a cancelled job is not retried")
	assert.Empty(t, v.list(v.keys.Backup(e.NodeID(), "default")))
	testutil.WaitFor(t, "counted as failed", func() bool { return v.get(v.keys.Stat("failed")) == "1" })
}

func TestUnknownAndMalformedSignalsAreIgnored(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	rec := &recorder{}
	e := v.start(Options{Workers: map[string]Worker{"W": rec}}, testHooks{pingInterval: 10 * time.Millisecond})
	v.signal(e.NodeID(), "USR2")
	v.signal(e.NodeID(), "CANCEL:not json")
	v.signal(e.NodeID(), `CANCEL:{"jid":"nobody"}`)
	testutil.WaitFor(t, "signals consumed", func() bool { return len(v.list(v.keys.Signals(e.NodeID()))) == 0 })
	_, err := e.Enqueue(context.Background(), "default", "W", nil)
	require.NoError(t, err)
	testutil.WaitFor(t, "the node still works", func() bool { return rec.count() == 1 })
	assert.False(t, e.mgr.quiet.Load())
}
