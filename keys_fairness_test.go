package exq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/exqgo/exq/internal/testutil"
)

// Fair share at the size issue 41 names (with -long; BenchmarkKeyedFairness reports the same
// run): key A has 100 000 jobs of 10 ms waiting, key B enqueues 10 jobs a second, one node runs
// 50 at a time. With keys served in turn, B's jobs start within 50 ms of their enqueue (p99)
// while A's jobs run at no less than 0.8× the rate of the same jobs without keys, measured in
// the same run; without keys, B's jobs wait behind A's backlog (the starvation fair share
// fixes: a p50 over a second).
func TestFairShareStartsASmallKeysJobsPromptlyBesideABacklogAtNearlyFullThroughput(t *testing.T) {
	if !testutil.Long() {
		t.Skip("about 50 s: run with -long")
	}
	size := fairnessSize{backlog: 100_000, job: 10 * time.Millisecond, conc: 50, every: 100 * time.Millisecond}
	fair := runFairness(t, "fair", size)
	plain := runFairness(t, "plain", size)
	t.Logf("fair: B p50 %s, p99 %s (%d jobs), A %.0f jobs/s; plain: B p50 %s, p99 %s, A %.0f jobs/s; A's rate fair/plain %.3f",
		fair.p50, fair.p99, fair.bJobs, fair.aRate, plain.p50, plain.p99, plain.aRate, fair.aRate/plain.aRate)
	assert.LessOrEqual(t, fair.p99, 50*time.Millisecond, "B's jobs start within 50 ms (p99) with fair share")
	assert.GreaterOrEqual(t, fair.aRate/plain.aRate, 0.8, "A's throughput with fair share against without keys")
	assert.Greater(t, plain.p50, time.Second, "without keys, B's jobs wait behind A's backlog")
}
