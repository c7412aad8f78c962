package exqprom

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

func TestOutboxGaugesFollowTheRelaysReport(t *testing.T) {
	rdb, ns := testutil.Redis(t)
	ctx := context.Background()
	api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	defer api.Close()
	srv := server(t, New(api, Options{CacheFor: -1, Logger: quietLogger()}))
	s, _ := scrape(t, srv)
	assert.Equal(t, -1.0, s.value(t, "exq_outbox_backlog"), "absent until a relay reports")

	c, err := exq.NewClient(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.ReportOutbox(ctx, 17, 0, 90*time.Second))
	s, _ = scrape(t, srv)
	assert.Equal(t, 17.0, s.value(t, "exq_outbox_backlog"))
	assert.InDelta(t, 90, s.value(t, "exq_outbox_oldest_age_seconds"), 0.01)

	require.NoError(t, c.ReportOutbox(ctx, 0, 0, 0))
	s, _ = scrape(t, srv)
	assert.Equal(t, 0.0, s.value(t, "exq_outbox_backlog"))
	assert.Equal(t, 0.0, s.value(t, "exq_outbox_oldest_age_seconds"))
}
