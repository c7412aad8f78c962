package web

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

func TestDashboardShowsTheOutboxOnlyWhenARelayReported(t *testing.T) {
	f := newFixture(t, Options{})
	assert.NotContains(t, f.page("/"), "Outbox", "no relay ever reported")

	ctx := context.Background()
	c, err := exq.NewClient(ctx, exq.ClientOptions{Redis: f.client, Namespace: f.ns, Logger: quiet})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.ReportOutbox(ctx, 1234, 2, 3*time.Minute))
	body := f.page("/")
	assert.Contains(t, body, "Outbox (Postgres, module exqpg)")
	assert.Contains(t, body, "1,234 committed job(s), the oldest had waited 3 min when reported")
	assert.Contains(t, body, "rows the relay set aside wait")
	assert.NotContains(t, body, "stale")

	// A report a relay stopped renewing says so, and keeps the age it reported (as `exq outbox
	// status` does): the row had waited 3 minutes then, not the 24 years since.
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Outbox(), "updated_at", "1000000000", "oldest_at", "999999820").Err())
	body = f.page("/")
	assert.Contains(t, body, "stale: no relay runs")
	assert.Contains(t, body, "the oldest had waited 3 min when reported")

	// What is read from Redis is untrusted: a field that is not a count or a time spoils its
	// own field (left out, and said so, escaped), never the section or the page.
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Outbox(), "backlog", "<script>alert(1)</script>", "updated_at", "1e12").Err())
	body = f.page("/")
	assert.Contains(t, body, "Outbox (Postgres")
	assert.Contains(t, body, "0 committed job(s)")
	assert.Contains(t, body, "at an unreadable time")
	assert.Contains(t, body, "Left out: "+f.keys.Outbox()+" field backlog is not a count: &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;")
	assert.NotContains(t, body, "<script>alert")
}
