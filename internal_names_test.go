package exq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/flows"
	"github.com/exqgo/exq/internal/wire"
)

// TestAPeriodicNameEndingInAKeySuffixIsRefusedInTheUsersWords: the refusal speaks of schedules,
// not of the internal type that parses them.
func TestAPeriodicNameEndingInAKeySuffixIsRefusedInTheUsersWords(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"x:enqueued", "x:jid_history"} {
		_, _, err := PeriodicJob{Name: name, Spec: "@hourly", Class: "X"}.check()
		require.ErrorIs(t, err, ErrInvalidPeriodic, name)
		assert.Contains(t, err.Error(), "(the keys of another schedule)")
		assert.NotContains(t, err.Error(), "cronspec")
	}
}

// TestThePublicLimitsAreTheOnesTheInternalsApply: the constants written out in the root
// package (so that go doc shows their values) are the internal packages' own.
func TestThePublicLimitsAreTheOnesTheInternalsApply(t *testing.T) {
	t.Parallel()
	assert.Equal(t, flows.BatchTTL, DefaultBatchTTL)
	assert.Equal(t, flows.BatchExpiry, DefaultBatchExpiry)
	assert.Equal(t, flows.WorkflowTTL, DefaultWorkflowTTL)
	assert.Equal(t, flows.WorkflowExpiry, DefaultWorkflowExpiry)
	assert.Equal(t, wire.MaxProgressMessage, MaxProgressMessage)
	assert.Equal(t, wire.MetricsTTL, MetricsMaxWindow)
}
