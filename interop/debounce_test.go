package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// exq debounces bursts of enqueues (exq.Debounce) and no exq scheduler runs: Sidekiq's poller
// moves each burst's job, an ordinary scheduled job to it, and Sidekiq runs it once, with the
// args of the burst's last call.
func TestDebouncedBurstsRunOnceOnSidekiq(t *testing.T) {
	p := newPeer(t)
	ctx := context.Background()
	record := filepath.Join(t.TempDir(), "performed.jsonl")
	require.NoError(t, os.WriteFile(record, nil, 0o644))
	e := p.startExq(exq.Options{Queues: []exq.Queue{}, DisableScheduler: true})
	last := map[string]json.RawMessage{} // burst jid → the args of its last call
	for k := range 3 {
		var jid string
		for i := range 5 {
			args := json.RawMessage(fmt.Sprintf(`[%d,%d]`, k, i))
			got, err := e.Enqueue(ctx, "default", "RecordJob", args, exq.Debounce(fmt.Sprint("key-", k), time.Second, 10*time.Second))
			require.NoError(t, err)
			if i > 0 {
				require.Equal(t, jid, got, "one burst per key")
			}
			jid = got
			last[jid] = args
		}
	}
	sk := p.startSidekiq("QUEUE=default", "CONCURRENCY=2", "POLL_INTERVAL=1", "RECORD_FILE="+record)
	waitFor(t, "Sidekiq to run the 3 bursts", func() (bool, string) {
		if sk.exited() {
			t.Fatalf("Sidekiq ended early:\n%s", tail(sk.logPath, 40))
		}
		recs, err := readRecords(record)
		if err != nil {
			return false, err.Error()
		}
		return len(recs) >= len(last) && p.drained("default"), fmt.Sprintf("%d of %d ran; %s", len(recs), len(last), p.keyState("default"))
	})
	sk.stop()
	recs, err := readRecords(record)
	require.NoError(t, err)
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.JID]++
		want, ok := last[r.JID]
		if !assert.True(t, ok, "Sidekiq ran jid %s that no burst had", r.JID) {
			continue
		}
		same, err := sameJSON(want, r.Args)
		require.NoError(t, err)
		assert.True(t, same, "burst %s ran with %s, its last call's args are %s", r.JID, r.Args, want)
	}
	for jid := range last {
		assert.Equal(t, 1, seen[jid], "runs of burst %s on Sidekiq", jid)
	}
}
