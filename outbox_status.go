package exq

import (
	"context"
	"fmt"
	"time"
)

// OutboxStatus is what the outbox relays (module exqpg) last reported about their Postgres
// table, read from Redis (P outbox), so that this module can show it without a database
// driver.
type OutboxStatus struct {
	// Reported is false when no relay ever reported in this namespace; the rest is then zero.
	Reported bool
	// Backlog is how many committed jobs wait in the table for a relay.
	Backlog int64
	// Failed is how many rows a relay refused (documents that are not jobs); they stay in the
	// table with their error until someone fixes or deletes them.
	Failed int64
	// OldestAt is when the oldest waiting row was written, on the Redis server's clock; zero
	// when none waits.
	OldestAt time.Time
	// UpdatedAt is when a relay last reported, on the Redis server's clock. Relays report
	// every few seconds (exqpg.RelayOptions.StatusInterval): an old UpdatedAt means no relay
	// runs.
	UpdatedAt time.Time
}

// Outbox returns what the outbox relays last reported; see OutboxStatus.
func (a *API) Outbox(ctx context.Context) (OutboxStatus, error) {
	backlog, failed, oldest, updated, ok, err := a.jq.outbox(ctx)
	if err != nil {
		return OutboxStatus{}, fmt.Errorf("exq: outbox status: %w", err)
	}
	return OutboxStatus{Reported: ok, Backlog: backlog, Failed: failed, OldestAt: oldest, UpdatedAt: updated}, nil
}

// ReportOutbox records an outbox relay's view of its table in Redis, for API.Outbox: backlog
// rows waiting, failed rows refused, and the age of the oldest waiting row (0 when none
// waits), turned into an instant on the Redis server's clock. exqpg's relays call it; an
// application has no need to.
func (c *Client) ReportOutbox(ctx context.Context, backlog, failed int64, oldestAge time.Duration) error {
	return c.enq.reportOutbox(ctx, backlog, failed, oldestAge)
}

// ReportOutbox is Client.ReportOutbox on a node's connection.
func (e *Exq) ReportOutbox(ctx context.Context, backlog, failed int64, oldestAge time.Duration) error {
	return e.enq.reportOutbox(ctx, backlog, failed, oldestAge)
}

func (en *enqueuer) reportOutbox(ctx context.Context, backlog, failed int64, oldestAge time.Duration) error {
	if backlog < 0 || failed < 0 || oldestAge < 0 {
		return fmt.Errorf("exq: report outbox: negative backlog (%d), failed (%d) or age (%s)", backlog, failed, oldestAge)
	}
	now, err := en.serverNow(ctx, "report outbox")
	if err != nil {
		return err
	}
	var oldest time.Time
	if backlog > 0 {
		oldest = now.Add(-oldestAge)
	}
	if err := en.jq.reportOutbox(ctx, backlog, failed, oldest, now); err != nil {
		return fmt.Errorf("exq: report outbox: %w", err)
	}
	return nil
}
