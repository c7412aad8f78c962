package store

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Per-method tests of a node's registration as the UIs read it: its hash, busy lists and
// signals, the readers of live nodes, pruning, and the wake-up channel.

func TestWriteNodeWritesTheHashAndBothBusyListsInTheDocumentedLayout(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	w := NodeWrite{Info: `{"identity":"n1"}`, Concurrency: 10, Busy: 1, Beat: "1796010415.5", Quiet: true,
		Rtt: 1500 * time.Microsecond, RSSKB: 2048, BusyList: map[string]string{"run1": `{"queue":"q"}`}}
	require.NoError(t, jq.WriteNode(ctx(t), w))
	assert.Equal(t, map[string]string{"processes": "set", "n1": "hash", "n1:workers": "hash", "n1:work": "hash"}, v.layout())
	assert.Equal(t, []string{"n1"}, v.members(v.p("processes")))
	assert.Equal(t, map[string]string{"info": `{"identity":"n1"}`, "concurrency": "10", "busy": "1", "beat": "1796010415.5",
		"quiet": "true", "rtt_us": "1500", "rss": "2048"}, v.hash(v.p("n1")))
	for _, key := range []string{"n1", "n1:workers", "n1:work"} {
		if key != "n1" {
			assert.Equal(t, map[string]string{"run1": `{"queue":"q"}`}, v.hash(v.p(key)), key)
		}
		ttl := v.rdb.TTL(ctx(t), v.p(key)).Val()
		assert.Greater(t, ttl, time.Duration(0), key)
		assert.LessOrEqual(t, ttl, NodeTTL, key)
	}

	w.BusyList = nil
	w.Busy = 0
	require.NoError(t, jq.WriteNode(ctx(t), w))
	assert.Equal(t, `{"queue":"q"}`, v.hash(v.p("n1:work"))["run1"], "a nil busy list leaves it as it is")
	w.BusyList = map[string]string{}
	require.NoError(t, jq.WriteNode(ctx(t), w))
	assert.Equal(t, map[string]string{"processes": "set", "n1": "hash"}, v.layout(), "an empty one deletes both")
}

func TestWriteNodeRemovesTheSignalsItHandledOnlyIfStillAtTheEnd(t *testing.T) {
	v := newEnv(t)
	api, jq := v.store(""), v.store("n1")
	require.NoError(t, api.SendSignal(ctx(t), "n1", "TSTP"))
	require.NoError(t, api.SendSignal(ctx(t), "n1", "TERM"))
	handled, err := jq.Signals(ctx(t), 10)
	require.NoError(t, err)
	assert.Equal(t, []string{"TERM", "TSTP"}, handled, "oldest last")
	require.NoError(t, api.SendSignal(ctx(t), "n1", "CANCEL:x"), "a new signal meanwhile")

	require.NoError(t, jq.WriteNode(ctx(t), NodeWrite{Info: "{}", Handled: handled}))
	assert.Equal(t, []string{"CANCEL:x"}, v.list(v.p("n1-signals")), "the handled ones went, the new one stays")

	require.NoError(t, jq.WriteNode(ctx(t), NodeWrite{Info: "{}", Handled: handled}))
	assert.Equal(t, []string{"CANCEL:x"}, v.list(v.p("n1-signals")), "a repeat removes nothing")
}

func TestLiveNodesSkipsNodesWhoseHashExpiredAndReadsTheirHashes(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	ids, err := jq.LiveNodes(ctx(t))
	require.NoError(t, err)
	assert.Empty(t, ids)
	ids, infos, err := jq.NodeInfos(ctx(t))
	require.NoError(t, err)
	assert.Empty(t, ids)
	assert.Empty(t, infos)

	for _, n := range []string{"b", "a"} {
		require.NoError(t, v.store(n).WriteNode(ctx(t), NodeWrite{Info: `{"identity":"` + n + `"}`, Busy: 1,
			BusyList: map[string]string{"run-" + n: "{}"}}))
	}
	require.NoError(t, v.rdb.SAdd(ctx(t), v.p("processes"), "gone").Err())
	require.NoError(t, v.rdb.HSet(ctx(t), v.p("c:work"), "sidekiq7-only", "{}").Err())
	require.NoError(t, v.store("c").WriteNode(ctx(t), NodeWrite{Info: "{}"}))
	require.NoError(t, v.rdb.HSet(ctx(t), v.p("c:work"), "sidekiq7-only", "{}").Err())

	ids, err = jq.LiveNodes(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, ids, "sorted, without the stale member")
	assert.Contains(t, v.members(v.p("processes")), "gone", "a read never deletes")

	ids, infos, err = jq.NodeInfos(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, ids)
	assert.Equal(t, `{"identity":"a"}`, infos[0]["info"])
	ids, busy, err := jq.NodeBusy(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, ids)
	assert.Equal(t, []map[string]string{{"run-a": "{}"}, {"run-b": "{}"}, {"sidekiq7-only": "{}"}}, busy,
		"the busy list under either name")
}

func TestPruneRemovesOnlyNodesWhoseHashExpired(t *testing.T) {
	v := newEnv(t)
	jq := v.store("me")
	left, err := jq.Prune(ctx(t), nil)
	require.NoError(t, err)
	assert.Empty(t, left, "no processes")
	require.NoError(t, jq.WriteNode(ctx(t), NodeWrite{Info: "{}", BusyList: map[string]string{"r": "{}"}}))
	left, err = jq.Prune(ctx(t), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"me"}, left, "none gone")
	require.NoError(t, v.rdb.SAdd(ctx(t), v.p("processes"), "gone").Err())
	for _, key := range []string{"gone:workers", "gone:work"} {
		require.NoError(t, v.rdb.HSet(ctx(t), v.p(key), "r", "{}").Err())
	}
	var logs bytes.Buffer
	left, err = jq.Prune(ctx(t), slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	assert.Equal(t, []string{"me"}, left, "the nodes left in the set")
	assert.Equal(t, []string{"me"}, v.members(v.p("processes")))
	assert.Equal(t, map[string]string{"processes": "set", "me": "hash", "me:workers": "hash", "me:work": "hash"}, v.layout())
	assert.Contains(t, logs.String(), "gone")
}

// A node the prune's read found without a hash may ping before the removal (a process back
// from a pause): the removal checks again and leaves it, its membership and its busy list.
func TestPruneLeavesANodeThatPingedAfterItsRead(t *testing.T) {
	v := newEnv(t)
	jq := v.store("me")
	back := v.store("back")
	require.NoError(t, v.rdb.SAdd(ctx(t), v.p("processes"), "back", "gone").Err())
	// The read happened here (both without info); then "back" pings, with a run on its busy list.
	require.NoError(t, back.WriteNode(ctx(t), NodeWrite{Info: "{}", BusyList: map[string]string{"r": "{}"}}))
	gone, err := jq.removeGone(ctx(t), []string{"back", "gone"})
	require.NoError(t, err)
	assert.Equal(t, []string{"gone"}, gone)
	assert.Equal(t, []string{"back"}, v.members(v.p("processes")))
	assert.Equal(t, map[string]string{"processes": "set", "back": "hash", "back:workers": "hash", "back:work": "hash"}, v.layout())
	gone, err = jq.removeGone(ctx(t), nil)
	require.NoError(t, err)
	assert.Empty(t, gone)
}

func TestUnregisterLeavesTheHashToExpire(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	require.NoError(t, jq.WriteNode(ctx(t), NodeWrite{Info: "{}", BusyList: map[string]string{"r": "{}"}}))
	require.NoError(t, jq.Unregister(ctx(t)))
	assert.Equal(t, map[string]string{"n1": "hash"}, v.layout())
}

func TestWakeupsCarryTheQueueOfEveryEnqueue(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	w := jq.SubscribeWake(ctx(t))
	got := make(chan string, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Each(func(p string) { got <- p })
	}()
	// The subscription is confirmed when a publish reaches it: keep publishing until one does.
	deadline := time.Now().Add(10 * time.Second)
	for len(got) == 0 && time.Now().Before(deadline) {
		require.NoError(t, jq.PublishWake(ctx(t)))
		time.Sleep(5 * time.Millisecond)
	}
	require.NotEmpty(t, got, "the subscription never received")
	for len(got) > 0 {
		assert.Equal(t, "", <-got, "PublishWake sends an empty wake-up")
	}
	_, err := jq.Enqueue(ctx(t), "mail", job("mail", "1"), nil)
	require.NoError(t, err)
	assert.Equal(t, "mail", <-got)
	require.NoError(t, w.Close())
	<-done
}
