// Package interop_test runs exq against a real Sidekiq sharing one Redis: jobs pushed by
// Sidekiq's client run on exq, jobs enqueued by exq run on a Sidekiq server, a Sidekiq job failing
// on exq keeps Sidekiq's fields through the retry, and Sidekiq's Web UI shows an exq node
// (counters, Busy page, sets, and from Sidekiq 7 the Metrics tab) and quiets it.
//
// CI runs it against Sidekiq 6.4 (Debian's ruby-sidekiq) under the namespace "exq". The same tests
// run against Sidekiq 7 or 8 from their source, without a namespace (they refuse one): put their
// lib folders in EXQ_INTEROP_RUBYLIB (docs/interop.md).
//
// The tests need a real redis-server (they use its database 5): EXQ_TEST_REDIS_URL, or a private
// one testutil starts. They also need ruby with the Sidekiq gems (apt-get install ruby-sidekiq
// ruby-redis-namespace ruby-sidekiq-cron); the Ruby side is in ruby/. Without them they are
// skipped and counted, except under CI=true, where they fail. They use one fixed namespace (or
// database), so they never run in parallel with each other.
package interop_test

import (
	"testing"

	"github.com/exqgo/exq/internal/testutil"
)

// TestMain fails the package if a test leaves a goroutine behind (an exq node not stopped, an
// HTTP connection left open, a process whose Wait never returned).
func TestMain(m *testing.M) {
	testutil.MainLeak(m)
}
