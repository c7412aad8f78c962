package exqprom

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// The all-time counters are Prometheus counters: whatever Redis holds, a scrape never serves a
// negative one (stat:failed "-5" was served as exq_failed_total -5, which rate() reads as
// nonsense); one past int64 is served at the limit.
func TestStoredCountersOutOfRangeAreServedAsCounters(t *testing.T) {
	t.Parallel()
	rdb, ns := testutil.Redis(t)
	ctx := context.Background()
	require.NoError(t, rdb.Set(ctx, ns+":stat:failed", "-5", 0).Err())
	require.NoError(t, rdb.Set(ctx, ns+":stat:processed", "99999999999999999999999999", 0).Err())
	api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	defer api.Close()
	s, _ := scrape(t, server(t, New(api, Options{CacheFor: -1, Logger: quietLogger()})))
	assert.Equal(t, 0.0, s.value(t, "exq_failed_total"))
	assert.Equal(t, 9.223372036854776e+18, s.value(t, "exq_processed_total"))
}
