package interop_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// Jobs pushed by Sidekiq's client one at a time, at random gaps of 0.05–0.3 s (no wake-up is
// published: Sidekiq does not know exq's channel), start on an idle exq node with the default
// PollTimeout within milliseconds of Sidekiq's enqueued_at: p50 ≤ 20 ms, p99 ≤ 100 ms, each
// once. Without the blocking idle wait the poll back-off let them wait 0.5–5 s. The node arms
// its wait after every fetch that came back short, so short gaps find it idle too; 100 pushes
// make the p99 the second-slowest pickup rather than the slowest.
func TestSidekiqPushesStartPromptlyOnAnIdleExqNode(t *testing.T) {
	p := newPeer(t)
	var mu sync.Mutex
	waits := map[string][]time.Duration{}
	e := p.startExq(exq.Options{
		Queues: []exq.Queue{{Name: "default", Concurrency: 5}, {Name: "other", Concurrency: 5}},
		Workers: map[string]exq.Worker{"GoPickup": exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
			d := time.Since(job.EnqueuedAt)
			mu.Lock()
			waits[job.JID] = append(waits[job.JID], d)
			mu.Unlock()
			return nil
		})},
	})
	const count = 100
	out := p.ruby("", []string{"COUNT=" + strconv.Itoa(count), "QUEUE=default", "CLASS=GoPickup", "GAP_MIN=0.05", "GAP_MAX=0.3"},
		filepath.Join(p.dir, "push_paced.rb"))
	jids := strings.Fields(out)
	require.Len(t, jids, count)
	waitFor(t, "exq to start every Sidekiq job", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(waits) == count, p.keyState("default")
	})
	stopExq(t, e)

	mu.Lock()
	defer mu.Unlock()
	var first []time.Duration
	for _, jid := range jids {
		ws := waits[jid]
		if assert.Len(t, ws, 1, "runs of %s", jid) {
			first = append(first, ws[0])
		}
	}
	slices.Sort(first)
	p50, p99 := first[len(first)/2], first[(len(first)*99+99)/100-1]
	t.Logf("Sidekiq client → exq, %d jobs: p50 %s, p99 %s, max %s", len(first), p50, p99, first[len(first)-1])
	assert.LessOrEqual(t, p50, 20*time.Millisecond, "median pickup of a Sidekiq push")
	assert.LessOrEqual(t, p99, 100*time.Millisecond, "p99 pickup of a Sidekiq push")
}
