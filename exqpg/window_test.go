package exqpg

import (
	"context"
	"testing"
	"time"

	"github.com/exqgo/exq"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errCut stands for a relay killed between its push and its delete.
type errCut struct{}

// cutAfterPush runs one round of r that dies right after its push: the round's transaction
// rolls back as Postgres ends a dead session's, so its rows stay, unlocked, and their jids
// are marked in Redis.
func cutAfterPush(t *testing.T, r *Relay) {
	t.Helper()
	r.afterPush = func() { panic(errCut{}) }
	defer func() {
		r.afterPush = nil
		_, ok := recover().(errCut)
		require.True(t, ok, "the round reached its push")
	}()
	_, _ = r.Round(context.Background())
}

// A relay cut between its push and its delete leaves its rows; the relay that takes them over
// within MarkTTL writes nothing (a duplicate) and deletes them: one job. Once the marks have
// expired, nothing tells a pushed row from one never pushed, and the row becomes a second
// job: the guarantee holds while some relay runs within MarkTTL (24 h by default) of the cut
// (docs/outbox.md, "The push and the delete").
func TestARelayCutBetweenPushAndDeleteMakesOneJobWithinMarkTTL(t *testing.T) {
	pool, schema := pgPool(t)
	rdb, ns := redisNS(t)
	ob, _ := New(schema)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		expired bool
		jobs    int64
	}{
		{"taken over within MarkTTL", false, 1},
		{"taken over after MarkTTL", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queue := "q" + randomName()
			var jid string
			require.NoError(t, inTx(t, pool, func(tx Tx) (err error) { jid, err = ob.Enqueue(ctx, tx, queue, "W", nil); return err }))
			dead, err := NewRelay(pool, client(t, rdb, ns), RelayOptions{Schema: schema, Logger: quietLogger()})
			require.NoError(t, err)
			cutAfterPush(t, dead)
			assert.Equal(t, int64(1), rdb.LLen(ctx, ns+":queue:"+queue).Val(), "pushed")
			assert.Equal(t, 1, rows(t, pool, schema), "not deleted")
			ttl := rdb.PTTL(ctx, ns+":relayed:"+jid).Val()
			assert.InDelta(t, exq.DefaultRelayMarkTTL, ttl, float64(time.Minute), "the mark lasts MarkTTL")
			if tc.expired {
				require.Equal(t, int64(1), rdb.Del(ctx, ns+":relayed:"+jid).Val(), "the mark, as its TTL ends it")
			}
			next, err := NewRelay(pool, client(t, rdb, ns), RelayOptions{Schema: schema, Logger: quietLogger()})
			require.NoError(t, err)
			n, err := next.Round(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Zero(t, rows(t, pool, schema), "deleted")
			assert.Equal(t, tc.jobs, rdb.LLen(ctx, ns+":queue:"+queue).Val())
		})
	}
}
