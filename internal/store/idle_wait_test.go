package store

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// The idle waiter: armed by fetches that found a queue idle, it wakes the poll loop when a job
// is pushed there without a wake-up, and leaves the job where it was.

func TestIdleWaiterWakesOnAForeignPushAndLeavesTheJobInItsQueue(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	woken := make(chan struct{}, 10)
	w := jq.NewIdleWaiter(100*time.Millisecond, func() { woken <- struct{}{} }, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	require.NotNil(t, w)
	t.Cleanup(w.Stop)

	reqs := []FetchReq{{Queue: "idle", N: 5}, {Queue: "full", N: 1}, {Queue: "held", N: 5}, {Queue: "none", N: 0}}
	res := FetchRes{Jobs: [][]string{nil, {"j"}, nil, nil}, Wait: []time.Duration{-1, -1, 0, -1}}
	w.Arm(reqs, res)
	assert.Equal(t, []string{"idle"}, w.ArmedQueues(), "only a queue that gave fewer jobs than asked, with no limit holding it back")

	v.pushed("idle", "foreign") // an LPUSH without a wake-up, as Sidekiq's client does
	select {
	case <-woken:
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the waiter never woke the poll loop")
	}
	assert.Empty(t, w.ArmedQueues(), "it fires once")
	assert.Equal(t, []string{job("idle", "foreign")}, v.list(v.p("queue:idle")), "the job is where it was")

	w.Arm(reqs, res)
	w.DisarmAll()
	assert.Empty(t, w.ArmedQueues())
}

func TestIdleWaiterIsNilSafeAndNeedsAClientItCanCopy(t *testing.T) {
	var w *IdleWaiter
	w.Arm([]FetchReq{{Queue: "q", N: 1}}, FetchRes{Jobs: [][]string{nil}})
	w.DisarmAll()
	w.Stop()

	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	t.Cleanup(func() { _ = ring.Close() })
	var logs bytes.Buffer
	w = New(ring, Config{Namespace: "x", Node: "n1"}).NewIdleWaiter(time.Second, func() {}, slog.New(slog.NewTextHandler(&logs, nil)))
	assert.Nil(t, w)
	assert.Contains(t, logs.String(), "polling alone")
}

func TestIdleWaiterTurnsItselfOffWhenRedisRefusesBLMOVE(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.Do(ctx(t), "ACL", "SETUSER", "noblock", "on", ">pw", "~*", "&*", "+@all", "-blmove").Err())
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "noblock", Password: "pw"})
	t.Cleanup(func() { _ = rdb.Close() })

	logs := &testutil.LogBuffer{}
	w := New(rdb, Config{Namespace: "x", Node: "n1"}).NewIdleWaiter(100*time.Millisecond, func() {}, slog.New(slog.NewTextHandler(logs, nil)))
	require.NotNil(t, w)
	t.Cleanup(w.Stop)
	reqs, res := []FetchReq{{Queue: "q", N: 1}}, FetchRes{Jobs: [][]string{nil}}
	w.Arm(reqs, res)
	testutil.WaitFor(t, "the refusal is logged", func() bool { return bytes.Contains([]byte(logs.String()), []byte("refused BLMOVE")) })
	w.Arm(reqs, res)
	w.mu.Lock()
	s := w.queues["q"]
	w.mu.Unlock()
	assert.False(t, w.isArmed(s), "disabled: no queue blocks any more")
}

func TestRefusedTellsPermanentRefusalsFromPassingErrors(t *testing.T) {
	for _, tc := range []struct {
		err     string
		refused bool
	}{
		{"NOPERM User x has no permissions to run the 'blmove' command", true},
		{"ERR unknown command 'BLMOVE', with args beginning with: ", true},
		{"LOADING Redis is loading the dataset in memory", false},
		{"dial tcp 127.0.0.1:1: connect: connection refused", false},
	} {
		assert.Equal(t, tc.refused, refused(errors.New(tc.err)), tc.err)
	}
}

// go-redis sends BLMOVE's timeout in whole seconds: a shorter one blocks for a second anyway,
// and go-redis logs a warning for it at every call, which exq routes to every open node's
// logger (once a second per armed queue, with a PollTimeout under 20 ms).
func TestIdleWaiterBlocksAtLeastTheSecondBLMOVETakes(t *testing.T) {
	v := newEnv(t)
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	for _, block := range []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond} {
		w := v.store("n1").NewIdleWaiter(block, func() {}, log)
		require.NotNil(t, w)
		assert.Equal(t, time.Second, w.block, "block %s", block)
		w.Stop()
	}
	w := v.store("n1").NewIdleWaiter(5*time.Second, func() {}, log)
	assert.Equal(t, 5*time.Second, w.block)
	w.Stop()
}
