package exq

import (
	"errors"
	"fmt"
	"testing"

	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/store"
)

// The sentinel errors that the internal packages return are exq's own (set in init, so that
// `go doc` shows no internal name): an error from inside matches the exported sentinel with
// errors.Is, and none of them is nil.
func TestExportedSentinelsMatchTheInternalPackagesErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name               string
		exported, internal error
	}{
		{"ErrInvalidOptions", ErrInvalidOptions, store.ErrInvalidOptions},
		{"ErrNotReplicated", ErrNotReplicated, store.ErrNotReplicated},
		{"ErrRedisUnavailable", ErrRedisUnavailable, store.ErrRedisUnavailable},
		{"ErrRedisOOM", ErrRedisOOM, store.ErrOOM},
		{"ErrInvalidBatch", ErrInvalidBatch, flows.ErrInvalidBatch},
		{"ErrBatchNotFound", ErrBatchNotFound, flows.ErrBatchNotFound},
		{"ErrBatchExists", ErrBatchExists, flows.ErrBatchExists},
		{"ErrNotInBatch", ErrNotInBatch, flows.ErrNotInBatch},
		{"ErrBatchClosed", ErrBatchClosed, flows.ErrBatchClosed},
		{"ErrInvalidWorkflow", ErrInvalidWorkflow, flows.ErrInvalidWorkflow},
		{"ErrWorkflowNotFound", ErrWorkflowNotFound, flows.ErrWorkflowNotFound},
		{"ErrWorkflowExists", ErrWorkflowExists, flows.ErrWorkflowExists},
		{"ErrResultTooLarge", ErrResultTooLarge, flows.ErrResultTooLarge},
		{"ErrNoResult", ErrNoResult, flows.ErrNoResult},
	} {
		if c.exported == nil {
			t.Errorf("%s is nil", c.name)
			continue
		}
		if err := fmt.Errorf("exq: something: %w", c.internal); !errors.Is(err, c.exported) {
			t.Errorf("an error wrapping the internal %v does not match %s", c.internal, c.name)
		}
	}
}
