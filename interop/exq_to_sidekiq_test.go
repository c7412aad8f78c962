package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// goArgs returns varied args for job i, as raw JSON an exq caller hands to Enqueue.
func goArgs(i int) json.RawMessage {
	var s string
	switch i % 8 {
	case 0:
		s = fmt.Sprintf(`[%d,"go string %d"]`, i, i)
	case 1:
		s = fmt.Sprintf(`[{"user":{"id":%d,"roles":["admin","ops"],"deep":{"x":[1,[2,[3,{"k":null}]]]}}}]`, i)
	case 2:
		s = fmt.Sprintf(`["unicode %d: héllo wörld, 日本語, emoji 🎉, escaped \u00e9 \ud83d\ude00, quote \" backslash \\ <b>&amp;</b>", "line\nbreak\ttab"]`, i)
	case 3:
		s = fmt.Sprintf(`[null,%d,[null],{"nil":null}]`, i)
	case 4:
		s = fmt.Sprintf(`[12345678901234567890,-9223372036854775808,1180591620717411303424,%d]`, i)
	case 5:
		s = fmt.Sprintf(`[[],{},[[]],[{}],%d]`, i)
	case 6:
		s = `[]`
	case 7:
		s = fmt.Sprintf(`[1.5,-2.25,0.001,6.02e23,true,false,"",%d]`, i)
	}
	return json.RawMessage(s)
}

// exq enqueues 500 jobs for Ruby classes (RecordJob, and GoJob through EXTRA_CLASSES): 440 one by
// one, 30 in one EnqueueAll batch and 30 with EnqueueIn a few seconds ahead. A real Sidekiq 6.4
// (ruby/sidekiq_server.rb) runs every one exactly once (ruby/check_once.rb agrees) with its args intact,
// and its poller runs the scheduled ones once due.
func TestExqJobsRunOnceOnSidekiq(t *testing.T) {
	p := newPeer(t)
	ctx := context.Background()
	record := filepath.Join(t.TempDir(), "performed.jsonl")
	require.NoError(t, os.WriteFile(record, nil, 0o644))

	// This node only enqueues: no queue to fetch, no scheduler (Sidekiq's poller moves the
	// scheduled jobs).
	e := p.startExq(exq.Options{Queues: []exq.Queue{}, DisableScheduler: true})
	sk := p.startSidekiq("QUEUE=default", "CONCURRENCY=5", "POLL_INTERVAL=1", "EXTRA_CLASSES=GoJob", "RECORD_FILE="+record)

	type sent struct {
		class string
		args  json.RawMessage
		due   time.Time // zero for jobs enqueued to run now
	}
	want := map[string]sent{}
	var order []string
	add := func(jid string, s sent) {
		t.Helper()
		require.NotContains(t, want, jid)
		want[jid] = s
		order = append(order, jid)
	}
	class := func(i int) string {
		if i%2 == 0 {
			return "GoJob"
		}
		return "RecordJob"
	}
	for i := 0; i < 440; i++ {
		jid, err := e.Enqueue(ctx, "default", class(i), goArgs(i))
		require.NoError(t, err)
		add(jid, sent{class: class(i), args: goArgs(i)})
	}
	var batch []exq.JobSpec
	for i := 440; i < 470; i++ {
		batch = append(batch, exq.JobSpec{Queue: "default", Class: class(i), Args: goArgs(i)})
	}
	results, err := e.EnqueueAll(ctx, batch)
	require.NoError(t, err)
	for i, r := range results {
		require.NoError(t, r.Err)
		add(r.JID, sent{class: batch[i].Class, args: goArgs(440 + i)})
	}
	for i := 470; i < 500; i++ {
		d := 2*time.Second + time.Duration(i%3)*time.Second
		before := time.Now()
		jid, err := e.EnqueueIn(ctx, "default", class(i), d, goArgs(i))
		require.NoError(t, err)
		add(jid, sent{class: class(i), args: goArgs(i), due: before.Add(d)})
	}
	require.Len(t, want, 500)
	jidsFile := filepath.Join(t.TempDir(), "jids.txt")
	require.NoError(t, os.WriteFile(jidsFile, []byte(strings.Join(order, "\n")+"\n"), 0o644))

	waitFor(t, "Sidekiq to run all 500 exq jobs", func() (bool, string) {
		if sk.exited() {
			t.Fatalf("Sidekiq ended early:\n%s", tail(sk.logPath, 40))
		}
		recs, err := readRecords(record)
		if err != nil {
			return false, err.Error()
		}
		ok := map[string]bool{}
		for _, r := range recs {
			if r.Result == "ok" {
				ok[r.JID] = true
			}
		}
		return len(ok) >= len(want) && p.drained("default"), fmt.Sprintf("%d of %d jids ran ok; %s", len(ok), len(want), p.keyState("default"))
	})
	sk.stop() // TERM: a job in flight would be pushed back, and none is left

	cctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	out, err := exec.CommandContext(cctx, "ruby", filepath.Join(p.dir, "check_once.rb"), jidsFile, record).CombinedOutput()
	require.NoError(t, err, "check_once.rb: %s", out)
	assert.Contains(t, string(out), "expected 500 jids, ran ok: 500, missing: 0, duplicated: 0, unexpected: 0")
	t.Logf("check_once.rb: %s", strings.TrimSpace(string(out)))

	recs, err := readRecords(record)
	require.NoError(t, err)
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.JID]++
		s, ok := want[r.JID]
		if !assert.True(t, ok, "Sidekiq ran jid %s that exq never enqueued", r.JID) {
			continue
		}
		assert.Equal(t, "ok", r.Result, "jid %s", r.JID)
		assert.Equal(t, s.class, r.Class, "jid %s", r.JID)
		assert.Equal(t, "default", r.Queue, "jid %s", r.JID)
		assert.Nil(t, r.RetryCount, "jid %s never failed", r.JID)
		same, err := sameJSON(s.args, r.Args)
		require.NoError(t, err)
		assert.True(t, same, "args of %s: Sidekiq got %s, exq sent %s", r.JID, r.Args, s.args)
		if !s.due.IsZero() {
			ranAt := time.UnixMicro(int64(r.At * 1e6))
			assert.False(t, ranAt.Before(s.due), "scheduled job %s ran at %s, before it was due (%s)", r.JID, ranAt, s.due)
		}
	}
	// Every jid exq enqueued, by identity: none lost, none run twice (a jid Sidekiq ran that exq
	// never enqueued failed above).
	for jid := range want {
		assert.Equal(t, 1, seen[jid], "executions of %s on Sidekiq", jid)
	}
	t.Logf("exq enqueued %d jobs (30 scheduled); Sidekiq recorded %d executions of %d jids", len(want), len(recs), len(seen))
}
