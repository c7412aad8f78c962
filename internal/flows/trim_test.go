package flows

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// A node's step of the trim looks at a bounded number of ids; the node that claimed the pass
// goes on with it step after step, through the batches and then the workflows, while another
// node's steps do nothing until the claim lapses (each step of the pass renews it); the pass
// removes every id whose data expired, and only those.
func TestIndexTrimStepsAreBoundedAndOneNodePassesAtATime(t *testing.T) {
	t.Parallel()
	rdb, ns := testutil.Redis(t)
	ctx := context.Background()
	keys := wire.NewKeys(ns)
	const n = 5000 // ids per index, of which a tenth still have their data
	for _, idx := range []struct {
		index string
		hash  func(string) string
	}{{keys.Batches(), keys.Batch}, {keys.Workflows(), keys.Workflow}} {
		members := make([]redis.Z, n)
		p := rdb.Pipeline()
		for i := range members {
			id := fmt.Sprintf("id%05d", i)
			members[i] = redis.Z{Score: float64(i), Member: id}
			if i%10 == 0 {
				p.HSet(ctx, idx.hash(id), "created_at", i)
			}
		}
		p.ZAdd(ctx, idx.index, members...)
		_, err := p.Exec(ctx)
		require.NoError(t, err)
	}
	a := &IndexTrim{Store: store.New(rdb, store.Config{Namespace: ns, Node: "a"}), Every: time.Hour}
	b := &IndexTrim{Store: store.New(rdb, store.Config{Namespace: ns, Node: "b"}), Every: time.Hour}

	removed, err := a.Step(ctx)
	require.NoError(t, err)
	assert.Positive(t, removed)
	assert.LessOrEqual(t, removed, 2*TrimPages*TrimPage, "a step is bounded (ZSCAN's COUNT is a hint)")
	steps := 1
	for a.passing {
		// The claim nearly lapsed: a's next step renews it, so b starts no pass beside it.
		require.NoError(t, rdb.PExpire(ctx, keys.IndexTrim(), 50*time.Millisecond).Err())
		na, err := a.Step(ctx)
		require.NoError(t, err)
		removed += na
		steps++
		assert.Greater(t, rdb.PTTL(ctx, keys.IndexTrim()).Val(), 59*time.Minute, "a renewed its claim")
		if !a.passing {
			break
		}
		nb, err := b.Step(ctx)
		require.NoError(t, err)
		assert.Zero(t, nb, "a holds the pass")
		require.Less(t, steps, 100, "the pass ends")
	}
	assert.Greater(t, steps, 2, "the pass took several steps")
	assert.Equal(t, 2*(n-n/10), removed)
	for _, index := range []string{keys.Batches(), keys.Workflows()} {
		assert.EqualValues(t, n/10, rdb.ZCard(ctx, index).Val(), index)
	}
	// The claim is for Every: neither node starts another pass before it lapses.
	for _, tr := range []*IndexTrim{a, b} {
		nr, err := tr.Step(ctx)
		require.NoError(t, err)
		assert.Zero(t, nr)
		assert.False(t, tr.passing)
	}
	require.NoError(t, rdb.Del(ctx, keys.IndexTrim()).Err()) // as the claim lapses
	_, err = b.Step(ctx)
	require.NoError(t, err)
	assert.Equal(t, "b", rdb.Get(ctx, keys.IndexTrim()).Val(), "b claims the next pass")
}
