package interop_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// A real Sidekiq 6.4 server runs the jobs of an exq batch, as a misconfigured fleet would: a
// slow one (6 s, longer than a ping) and a fast one. Sidekiq records nothing in the batch, so
// both stay pending; the exq node sees the slow one on Sidekiq's busy list and reports it (a
// ForeignRun event, and the note that API.BatchJobs "foreign" reads), and the audit finds both
// in no queue or set once Sidekiq has run them ("unaccounted"). The fast one is reported too
// when Sidekiq's beat wrote its busy list while it ran (it did once in twenty runs).
func TestABatchJobRunBySidekiqIsReportedNotSilent(t *testing.T) {
	p := newPeer(t)
	ctx := context.Background()
	record := filepath.Join(t.TempDir(), "performed.jsonl")
	require.NoError(t, os.WriteFile(record, nil, 0o644))
	var mu sync.Mutex
	var seen []exq.Event
	e := p.startExq(exq.Options{Queues: []exq.Queue{{Name: "exq-only", Concurrency: 1}},
		Listeners: []exq.Listener{func(ev exq.Event) {
			if ev.Kind == exq.ForeignRun {
				mu.Lock()
				seen = append(seen, ev)
				mu.Unlock()
			}
		}}})
	bid, jids, err := e.NewBatch(ctx, exq.BatchOptions{OnSuccess: &exq.JobSpec{Queue: "exq-only", Class: "Never"}},
		[]exq.JobSpec{{Queue: "default", Class: "SlowJob", Args: []any{6}}, {Queue: "default", Class: "RecordJob"}})
	require.NoError(t, err)
	sk := p.startSidekiq("QUEUE=default", "CONCURRENCY=2", "RECORD_FILE="+record)

	waitFor(t, "the exq node to report the slow job running on Sidekiq", func() (bool, string) {
		if sk.exited() {
			t.Fatalf("Sidekiq ended early:\n%s", tail(sk.logPath, 40))
		}
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0, fmt.Sprintf("%d events", len(seen))
	})
	waitFor(t, "Sidekiq to run both jobs", func() (bool, string) {
		recs, err := readRecords(record)
		if err != nil {
			return false, err.Error()
		}
		return len(recs) >= 2, fmt.Sprintf("%d runs recorded", len(recs))
	})
	sk.stop()

	mu.Lock()
	reported := map[string]exq.Event{}
	for _, ev := range seen {
		assert.NotContains(t, reported, ev.JID, "each foreign run is reported once")
		reported[ev.JID] = ev
	}
	mu.Unlock()
	for jid, ev := range reported {
		assert.Contains(t, jids, jid, "a reported run is a job of the batch")
		assert.Equal(t, bid, ev.Flow)
		assert.Equal(t, "default", ev.Queue)
		assert.NotEmpty(t, ev.From, "the Sidekiq node's identity")
	}
	ev, ok := reported[jids[0]]
	require.True(t, ok, "the slow job is reported: %v", seen)
	assert.Equal(t, "SlowJob", ev.Class)

	api := e.API()
	st, err := api.Batch(ctx, bid)
	require.NoError(t, err)
	assert.Equal(t, 2, st.Pending, "Sidekiq recorded nothing in the batch")
	assert.True(t, st.SucceededAt.IsZero())
	foreign, err := api.BatchJobs(ctx, bid, "foreign", 10)
	require.NoError(t, err)
	assert.Contains(t, foreign, jids[0], "the slow job was seen on Sidekiq's busy list")
	assert.Subset(t, jids, foreign, "only jobs of the batch are noted as seen on a foreign node")
	unaccounted, err := api.BatchJobs(ctx, bid, "unaccounted", 10)
	require.NoError(t, err)
	assert.ElementsMatch(t, jids, unaccounted, "both ran on Sidekiq and are in no queue or set")
}
