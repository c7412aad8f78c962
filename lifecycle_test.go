package exq

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// The end of Start's ctx (SIGTERM under signal.NotifyContext) stops the workers, not the
// client: a web service's requests still in flight enqueue until the program calls Stop.
func TestEnqueueingWorksAfterStartsContextStoppedTheWorkersUntilStop(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A client exq builds and owns, so that Stop's closing it is what the test sees.
	e, err := Start(ctx, Options{RedisURL: "redis://" + v.rdb.Options().Addr + fmt.Sprintf("/%d", v.rdb.Options().DB),
		Namespace: v.ns, Logger: testLogger(), Queues: []Queue{}})
	require.NoError(t, err)
	cancel()
	testutil.WaitFor(t, "the workers stopped", func() bool { return closed(e.stopDone) })
	assert.False(t, v.rdb.SIsMember(context.Background(), v.keys.Processes(), e.NodeID()).Val(), "the node signed off")
	assert.ErrorIs(t, e.Subscribe("default", 1), ErrStopped, "no more fetching")

	var jids []string
	for range 5 {
		jid, err := e.Enqueue(context.Background(), "default", "W", nil)
		require.NoError(t, err, "enqueue after the workers stopped")
		jids = append(jids, jid)
	}
	jid, err := EnqueueArgs(context.Background(), e, regSignup{N: 1})
	require.NoError(t, err)
	jids = append(jids, jid)

	require.NoError(t, e.Stop(context.Background()))
	_, err = e.Enqueue(context.Background(), "default", "W", nil)
	assert.ErrorIs(t, err, ErrStopped, "Stop closes the enqueue side")
	require.NoError(t, e.Stop(context.Background()), "a second Stop is harmless")

	queued := v.list(v.keys.Queue("default"))
	require.Len(t, queued, len(jids))
	for _, jid := range jids {
		found := 0
		for _, raw := range queued {
			if decode(t, raw)["jid"] == jid {
				found++
			}
		}
		assert.Equal(t, 1, found, jid)
	}
}
