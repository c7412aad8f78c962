package exqpg

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// gatedPusher pushes through its Client once gate is closed; it reports at once.
type gatedPusher struct {
	*exq.Client
	gate chan struct{}
}

func (g gatedPusher) PushRelayed(ctx context.Context, ttl time.Duration, jobs []exq.RelayedJob) ([]exq.RelayResult, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Client.PushRelayed(ctx, ttl, jobs)
}

// A relay reports its status soon after it drains a backlog it reported, and once more as it
// stops, whatever its StatusInterval (an hour here): `exq outbox status` and the dashboard
// once showed a backlog of 1 for good after a relay drained the table and exited.
func TestARelayReportsWhenItDrainsAndAsItStops(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns})
	require.NoError(t, err)
	defer api.Close()
	reported := func(backlog, failed int64) func() bool {
		return func() bool {
			s, err := api.Outbox(ctx)
			return err == nil && s.Reported && s.Backlog == backlog && s.Failed == failed
		}
	}
	for range 3 {
		require.NoError(t, inTx(t, pool, func(tx Tx) error { _, err := ob.Enqueue(ctx, tx, "q", "W", nil); return err }))
	}
	p := gatedPusher{Client: client(t, rdb, ns), gate: make(chan struct{})}
	r, err := NewRelay(pool, p, RelayOptions{Schema: schema, StatusInterval: time.Hour, Logger: quietLogger()})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	eventually(t, 10*time.Second, "the backlog of 3 reported as the relay starts", reported(3, 0))
	close(p.gate)
	eventually(t, 10*time.Second, "the drained backlog reported", reported(0, 0))
	assert.Equal(t, int64(3), rdb.LLen(ctx, ns+":queue:q").Val())

	// Rows no round takes (failed already) change the table without waking the relay: only its
	// report as it stops tells.
	_, err = pool.Exec(ctx, `INSERT INTO "`+schema+`".exq_outbox (jid, queue, job, failed_at, error)
		VALUES ('a', 'q', '{}', now(), 'x'), ('b', 'q', '{}', now(), 'x')`)
	require.NoError(t, err)
	stop()
	<-done
	assert.True(t, reported(0, 2)(), "the report written as Run returned")
}
