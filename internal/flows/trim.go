package flows

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/store"
)

// IndexTrim removes from the listing indexes of batches and workflows the ids whose data has
// expired. Readers only skip those ids (they never write); the nodes trim them, a bounded step
// per ping: a pass goes over the batches index, then the workflows index, TrimPage ids per
// call and at most TrimPages calls per step, and starts only when this node claims it (one node
// of a namespace passes at a time, at most once every Every, by the Redis server's clock; a
// pass that lasts longer renews its claim at each step).
type IndexTrim struct {
	Store *store.Store
	Every time.Duration // how often a pass starts, at most (DefaultTrimEvery when 0)

	passing bool // this node holds a pass
	idx     store.FlowIndex
	cursor  uint64
}

// DefaultTrimEvery is how often a node of a namespace starts a pass over the listing indexes.
const DefaultTrimEvery = time.Minute

// How much one step looks at: ZSCAN pages of about TrimPage ids, at most TrimPages of them.
const (
	TrimPage  = 200
	TrimPages = 10
)

// Step goes on with the pass this node holds, or claims the next one when it is due. It
// reports how many ids it removed.
func (t *IndexTrim) Step(ctx context.Context) (int, error) {
	every := cmp.Or(t.Every, DefaultTrimEvery)
	if !t.passing {
		if has, err := t.Store.HasFlowIndexes(ctx); err != nil || !has {
			if err != nil {
				return 0, fmt.Errorf("exq: trim of the batch and workflow listings: %w", err)
			}
			return 0, nil // nothing to trim: no claim written
		}
		ok, err := t.Store.ClaimIndexTrim(ctx, every)
		if err != nil {
			return 0, fmt.Errorf("exq: trim of the batch and workflow listings: %w", err)
		}
		if !ok {
			return 0, nil
		}
		t.passing, t.idx, t.cursor = true, store.BatchIndex, 0
	} else if _, err := t.Store.RenewIndexTrim(ctx, every); err != nil {
		// A pass longer than Every keeps its claim, so that no other node starts one beside it.
		return 0, fmt.Errorf("exq: trim of the batch and workflow listings: %w", err)
	}
	removed := 0
	for range TrimPages {
		next, n, err := t.Store.TrimIndex(ctx, t.idx, t.cursor, TrimPage)
		removed += n
		if err != nil {
			return removed, fmt.Errorf("exq: trim of the batch and workflow listings: %w", err)
		}
		t.cursor = next
		if next != 0 {
			continue
		}
		if t.idx == store.WorkflowIndex {
			t.passing = false
			break
		}
		t.idx = store.WorkflowIndex
	}
	return removed, nil
}
