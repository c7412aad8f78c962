package exq

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/testutil"
)

// countLines is how many of l's lines contain s.
func (l *logLines) countLines(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// After a fetch whose reply was lost, the node reconciles once (the failed fetch may have taken
// jobs) and then fetches as usual: no later fetch may take the jobs it fetched itself for
// strays (a backup list holding jobs no worker has), which would log a warning and reconcile
// the whole node again for nothing.
func TestALostFetchReplyIsReconciledOnceAndLeavesNoStrayWarnings(t *testing.T) {
	t.Parallel()
	for _, tc := range lostFetchClients {
		t.Run(tc.name, func(t *testing.T) {
			c := newCutter(t)
			const perQueue = 40
			want := append(c.enqueueN("a", perQueue), c.enqueueN("b", perQueue)...)
			cut := c.cutScript(scripts.Fetch, 1)
			logs := &logLines{}
			rec := &recorder{fn: func(ctx context.Context, job *Job) error {
				time.Sleep(5 * time.Millisecond) // so that fetches take jobs while others run
				return nil
			}}
			o := tc.opts(c)
			o.Queues = []Queue{{Name: "a", Concurrency: 4}, {Name: "b", Concurrency: 4}}
			o.Workers = map[string]Worker{"W": rec}
			o.DisableScheduler = true
			o.Logger = slog.New(slog.NewTextHandler(logs, nil))
			e := c.start(o)
			waitCut(t, cut)
			testutil.WaitFor(t, "every job ran", func() bool { return rec.count() >= len(want) })
			testutil.WaitFor(t, "the backup lists are empty", func() bool {
				return len(c.list(c.keys.Backup(e.NodeID(), "a")))+len(c.list(c.keys.Backup(e.NodeID(), "b"))) == 0
			})
			ranOnce(t, rec, want)
			strays := logs.countLines("a backup list holds jobs no worker of this node has")
			t.Logf("fed %d jobs, one fetch reply lost: %d stray warnings, %d queues put back by a reconcile",
				len(want), strays, logs.countLines("put back jobs a failed fetch had taken"))
			if tc.name == lostFetchClients[0].name {
				// The client sent the fetch again: the first run's jobs are strays, once.
				assert.LessOrEqual(t, strays, 1, "one warning for the one lost reply")
			} else {
				assert.Zero(t, strays, "the failed fetch is reconciled by its error; no later fetch sees strays")
			}
		})
	}
}
