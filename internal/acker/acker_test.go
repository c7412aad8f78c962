package acker

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// The acker against a real Redis: a store of node n1 in a namespace of the test's own.

type env struct {
	rdb  *redis.Client
	keys wire.Keys
	a    *Acker
	logs *testutil.LogBuffer
}

func newEnv(t *testing.T) *env {
	t.Parallel()
	rdb, ns := testutil.Redis(t)
	logs := &testutil.LogBuffer{}
	jq := store.New(rdb, store.Config{Namespace: ns, Node: "n1"})
	return &env{rdb: rdb, keys: wire.NewKeys(ns), a: New(jq, 5*time.Second, slog.New(slog.NewTextHandler(logs, nil))), logs: logs}
}

// run runs the acker until the test ends.
func (e *env) run(t *testing.T) (stop func()) {
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.a.Run(c)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

func (e *env) backup(t *testing.T, q string, raws ...string) {
	t.Helper()
	for _, r := range raws {
		require.NoError(t, e.rdb.LPush(context.Background(), e.keys.Backup("n1", q), r).Err())
	}
}

func (e *env) backupLen(t *testing.T, q string) int64 {
	t.Helper()
	n, err := e.rdb.LLen(context.Background(), e.keys.Backup("n1", q)).Result()
	require.NoError(t, err)
	return n
}

func drain(t *testing.T, a *Acker) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer cancel()
	require.True(t, a.Drain(c), "the acker never drained")
}

func TestSubmittedJobsAndReleasedLeasesLeaveRedis(t *testing.T) {
	e := newEnv(t)
	e.backup(t, "a", "j1", "j2")
	e.backup(t, "b", "j3")
	require.NoError(t, e.rdb.ZAdd(context.Background(), e.keys.Leases("a"), redis.Z{Score: 1e10, Member: "n1:1"}).Err())

	// Handed over before the loop runs: held, and counted by queue.
	e.a.Submit("a", "j1", "")
	e.a.Submit("a", "j2", "")
	e.a.Submit("b", "j3", "")
	e.a.Release("a", "n1:1")
	assert.Equal(t, 4, e.a.Count())
	assert.Equal(t, 2, e.a.HeldIn("a"), "a lease is no job")
	assert.Equal(t, map[string]int{"j1": 1, "j2": 1, "j3": 1}, e.a.Held())

	e.run(t)
	drain(t, e.a)
	assert.Zero(t, e.backupLen(t, "a"))
	assert.Zero(t, e.backupLen(t, "b"))
	assert.Zero(t, e.rdb.Exists(context.Background(), e.keys.Leases("a")).Val())
	assert.Zero(t, e.a.HeldIn("a"))
	assert.Empty(t, e.a.Held())
}

func TestAFailingAcknowledgementIsKeptAndRetriedUntilRedisTakesIt(t *testing.T) {
	e := newEnv(t)
	bad := e.keys.Backup("n1", "q")
	require.NoError(t, e.rdb.Set(context.Background(), bad, "not a list", 0).Err())
	e.run(t)
	e.a.Submit("q", "j1", "")
	testutil.WaitFor(t, "the failure is logged", func() bool { return e.logs.Contains("acknowledging finished jobs failed") })
	assert.Equal(t, map[string]int{"j1": 1}, e.a.Held(), "kept until Redis answers")
	assert.Equal(t, 1, e.a.HeldIn("q"))

	// The bad key becomes the backup list holding j1 in one MULTI: a retry between a DEL and
	// an LPUSH would acknowledge j1 on an empty list, and the LPUSH would then leave it there
	// (seen once under load).
	_, err := e.rdb.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		p.Del(context.Background(), bad)
		p.LPush(context.Background(), bad, "j1")
		return nil
	})
	require.NoError(t, err)
	drain(t, e.a)
	assert.Zero(t, e.backupLen(t, "q"))
	testutil.WaitFor(t, "the recovery is logged", func() bool { return e.logs.Contains("acknowledging jobs works again") })
}

func TestStopMakesOneLastAttemptAndThenSubmitsWriteDirectly(t *testing.T) {
	e := newEnv(t)
	bad := e.keys.Backup("n1", "q")
	require.NoError(t, e.rdb.Set(context.Background(), bad, "not a list", 0).Err())
	stop := e.run(t)
	e.a.Submit("q", "j1", "")
	testutil.WaitFor(t, "the failure is logged", func() bool { return e.logs.Contains("acknowledging finished jobs failed") })
	stop()
	assert.True(t, e.logs.Contains("could not be acknowledged"), "the last attempt failed too: the job stays for a rescue")
	assert.Zero(t, e.a.Count())
	assert.Empty(t, e.a.Held())

	e.a.Submit("q", "j2", "")
	assert.True(t, e.logs.Contains("could not acknowledge a finished job"), "after Stop, a submit writes at once")
	assert.Zero(t, e.a.Count())

	require.NoError(t, e.rdb.Del(context.Background(), bad).Err())
	e.backup(t, "other", "j3")
	e.a.Submit("other", "j3", "")
	assert.Zero(t, e.backupLen(t, "other"))
	require.NoError(t, e.rdb.ZAdd(context.Background(), e.keys.Leases("q"), redis.Z{Score: 1e10, Member: "n1:9"}).Err())
	e.a.Release("q", "n1:9")
	assert.Zero(t, e.rdb.Exists(context.Background(), e.keys.Leases("q")).Val())

	require.NoError(t, e.rdb.Set(context.Background(), e.keys.Leases("bad"), "x", 0).Err())
	e.a.Release("bad", "n1:1")
	assert.True(t, e.logs.Contains("could not release the lease"))
}

func TestStopWritesWhatIsStillQueued(t *testing.T) {
	e := newEnv(t)
	e.backup(t, "q", "j1", "j2")
	e.a.Submit("q", "j1", "")
	e.a.Submit("q", "j2", "")
	c, cancel := context.WithCancel(context.Background())
	cancel()
	e.a.Run(c) // the context has ended: only the last attempt runs
	assert.Zero(t, e.backupLen(t, "q"))
	assert.Zero(t, e.a.Count())
}

func TestDrainGivesUpWhenItsContextEnds(t *testing.T) {
	e := newEnv(t)
	e.a.Submit("q", "j1", "") // nothing runs the acker
	c, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, e.a.Drain(c))
	assert.True(t, New(nil, time.Second, nil).Drain(c), "nothing handed over: drained")
}
