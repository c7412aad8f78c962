package exq

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/acker"
	"github.com/exqgo/exq/internal/registry"
	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil/fakequeue"
	"github.com/exqgo/exq/internal/wire"
)

// The tests of this file run one job through the runner on a fake JobQueue (no Redis, no
// timers: persist's wait between attempts returns at once) and check the writes it makes, in
// order: a batch's or workflow's outcome (Settle) in the acknowledgement's own call for a
// success, before the retry, the death or a locked job's acknowledgement otherwise, and a reply
// lost on the way back sent again without a second effect.

var _ jobQueue = (*fakequeue.JobQueue)(nil)

// orderNow is the runner's clock in these tests.
var orderNow = time.Unix(1_800_000_000, 0).UTC()

// orderRun is a runner on a fake JobQueue, with what it reported.
type orderRun struct {
	q         *fakequeue.JobQueue
	rn        *runner
	graceOver chan struct{}

	mu       sync.Mutex
	outcomes []outcome
	stats    []bool // the ok of each run recorded
}

func (o *orderRun) Record(ok bool, _ time.Time) { o.RecordRun(ok, time.Time{}, "", 0) }

func (o *orderRun) RecordRun(ok bool, _ time.Time, _ string, _ time.Duration) {
	o.mu.Lock()
	o.stats = append(o.stats, ok)
	o.mu.Unlock()
}

// newOrderRun builds a runner whose class "T" runs perform, on a fake JobQueue. change, if
// set, changes its parts first.
func newOrderRun(t *testing.T, perform func(ctx context.Context, job *Job) error, change func(*runnerParts)) *orderRun {
	t.Helper()
	o := &orderRun{q: fakequeue.New("node1"), graceOver: make(chan struct{})}
	// A stopped acker writes each acknowledgement as it is handed over: its place among the
	// other writes is the runner's, not the acker goroutine's.
	ack := acker.New(o.q, time.Second, testLogger())
	stopped, stop := context.WithCancel(context.Background())
	stop()
	ack.Run(stopped)
	immediately := func(time.Duration) <-chan time.Time {
		ch := make(chan time.Time, 1)
		ch <- orderNow
		return ch
	}
	record := func(next Handler) Handler {
		return func(ctx context.Context, job *Job) error {
			job.onOutcome(func(out outcome) {
				o.mu.Lock()
				o.outcomes = append(o.outcomes, out)
				o.mu.Unlock()
			})
			return next(ctx, job)
		}
	}
	parts := runnerParts{jq: o.q, acker: ack, registry: registry.New(map[string]Worker{"T": WorkerFunc(perform)}, 0),
		stats: o, release: func(*run) {}, setJID: func(*run, string) {}, done: make(chan struct{}), graceOver: o.graceOver,
		after: immediately, middleware: []Middleware{record}, now: func() time.Time { return orderNow }, log: testLogger(),
		maxRetries: DefaultMaxRetries, jobTimeout: 0, redisTimeout: time.Second, deadTimeout: time.Hour, deadMaxJobs: 100,
		defaultBackoff: func(n int, _ *Job) time.Duration { return time.Duration(n) * time.Minute }}
	if change != nil {
		change(&parts)
	}
	o.rn = newRunner(parts)
	return o
}

// orderDoc is a job of class T with retry_count 0 and the given fields added.
func orderDoc(jid, fields string) string {
	return `{"class":"T","queue":"default","jid":"` + jid + `","args":[],"retry":3,"enqueued_at":1800000000.0` + fields + `}`
}

// process takes doc from queue "default" into the backup list, as a fetch does, and runs it.
func (o *orderRun) process(doc string) *run {
	o.q.Push("default", doc)
	r := &run{queue: "default", raw: doc, epoch: o.q.Take("default", doc), started: orderNow}
	o.rn.process(r)
	return r
}

// outcome is the outcome the run reported (it ran once).
func (o *orderRun) outcome(t *testing.T) outcome {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	require.Len(t, o.outcomes, 1, "one outcome reported")
	return o.outcomes[0]
}

// settles returns the runs' outcomes recorded with Settle, in order.
func settles(q *fakequeue.JobQueue) []string {
	var outs []string
	for _, c := range q.Calls() {
		if c.Method == "Settle" {
			if c.Item.Batch != "" {
				outs = append(outs, "batch "+c.Item.Runs[0][1])
			} else {
				outs = append(outs, "workflow "+c.Item.Out)
			}
		}
	}
	return outs
}

// changed lists the calls that changed something, as "Method" or "Method (again)" for a call
// that changed nothing.
func changed(q *fakequeue.JobQueue) []string {
	var out []string
	for _, c := range q.Calls() {
		if c.Changed {
			out = append(out, c.Method)
		} else {
			out = append(out, c.Method+" (again)")
		}
	}
	return out
}

// field reads one field of a stored document.
func field(t *testing.T, doc, name string) any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	require.NoError(t, d.Decode(&m))
	return m[name]
}

func succeed(context.Context, *Job) error { return nil }

func failWith(err error) func(context.Context, *Job) error {
	return func(context.Context, *Job) error { return err }
}

func TestRunOfABatchJobThatSucceedsRecordsItsTransitionInItsAcknowledgement(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t, succeed, nil)
	o.process(orderDoc("j1", `,"bid":"b1"`))
	assert.Equal(t, []string{"Settle", "AckMany"}, changed(o.q))
	assert.Equal(t, []string{"batch " + store.RunSucceeded}, settles(o.q))
	assert.Equal(t, "AckMany", o.q.Calls()[0].In, "the transition is part of the acknowledgement's call, atomic with its LREM")
	assert.Empty(t, o.q.Backup("default"))
	assert.Equal(t, "done", o.outcome(t).name)
}

func TestRunOfABatchJobWhoseAcknowledgementFailsRecordsNoTransitionAndStaysInItsBackupList(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t, succeed, nil)
	o.q.Inject("AckMany", fakequeue.Fail)
	doc := orderDoc("j1", `,"wfid":"w1","wf_job":"a"`)
	o.process(doc)
	assert.Empty(t, o.q.Calls(), "neither the transition nor the LREM: one call, all or nothing")
	assert.Equal(t, []string{doc}, o.q.Backup("default"), "a rescue runs it again, and that run records the transition")
}

func TestRunOfABatchJobWhoseAcknowledgementReplyIsLostRecordsItsTransitionOnce(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t, succeed, nil)
	o.q.Inject("AckMany", fakequeue.LoseReply)
	doc := orderDoc("j1", `,"bid":"b1"`)
	o.process(doc)
	// Sent again or not, the transition is recorded once: a job no longer in its backup list
	// records none, and a settle of a job already settled changes nothing.
	var transitions int
	for _, c := range o.q.Calls() {
		if c.Method == "Settle" && c.Changed {
			transitions++
		}
	}
	assert.Equal(t, 1, transitions)
	assert.Empty(t, o.q.Backup("default"))
	assert.Equal(t, "AckMany", o.q.Calls()[0].In)
}

func TestRunOfAUniqueWorkflowJobThatSucceedsSettlesBeforeTheAckThatReleasesItsLock(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t, succeed, nil)
	o.q.Lock("tok", "j1")
	o.process(orderDoc("j1", `,"wfid":"w1","wf_job":"a","unique_until":"success","unique_token":"tok"`))
	assert.Equal(t, []string{"Settle", "Ack"}, changed(o.q))
	assert.Equal(t, []string{"workflow " + store.RunSucceeded}, settles(o.q))
	assert.Empty(t, o.q.Locked("tok"), "the ack released the lock")
	assert.Equal(t, "done", o.outcome(t).name)
}

func TestRunWhoseSettleReplyIsLostSendsItAgainThenAcks(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t, succeed, nil)
	o.q.Lock("tok", "j1")
	o.q.Inject("Settle", fakequeue.LoseReply)
	// A job with a lock until success settles first and acknowledges second (its Ack releases
	// the lock), as a failure or a death does.
	o.process(orderDoc("j1", `,"bid":"b1","unique_until":"success","unique_token":"tok"`))
	assert.Equal(t, []string{"Settle", "Settle (again)", "Ack"}, changed(o.q),
		"the settle whose reply was lost is sent again (a no-op), and only then the ack")
	assert.Empty(t, o.q.Backup("default"))
	assert.Equal(t, "done", o.outcome(t).name)
}

func TestRunWhoseAckReplyIsLostSendsItAgainAndCountsTheJobDone(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t, succeed, nil)
	o.q.Lock("tok", "j1")
	o.q.Inject("Ack", fakequeue.LoseReply)
	o.process(orderDoc("j1", `,"bid":"b1","unique_until":"success","unique_token":"tok"`))
	assert.Equal(t, []string{"Settle", "Ack", "Ack (again)"}, changed(o.q))
	assert.Empty(t, o.q.Backup("default"))
	assert.Empty(t, o.q.Locked("tok"))
	assert.Equal(t, outcome{name: "done"}, o.outcome(t), "stored, not left in backup")
}

func TestRunOfAFailedBatchJobWithRetriesLeftSettlesBeforeTheRetry(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t, failWith(errors.New("boom")), nil)
	o.process(orderDoc("j1", `,"bid":"b1"`))
	assert.Equal(t, []string{"Settle", "Retry"}, changed(o.q))
	assert.Equal(t, []string{"batch " + store.RunFailed}, settles(o.q))
	retries := o.q.Retries()
	require.Len(t, retries, 1)
	assert.Equal(t, orderNow.Add(time.Minute), retries[0].At, "Options.Backoff of retry 1")
	assert.Equal(t, json.Number("1"), field(t, retries[0].Doc, "retry_count"))
	out := o.outcome(t)
	assert.Equal(t, "retry", out.name)
	assert.Equal(t, 1, out.retryCount)
	assert.Equal(t, []bool{false}, o.stats)
}

func TestRunOfAJobWithNoRetriesLeftSettlesItsDeathBeforeTheDeadSetAndReleasesItsLock(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t, failWith(errors.New("boom")), nil)
	o.q.Lock("tok", "j1")
	o.process(orderDoc("j1", `,"retry_count":3,"wfid":"w1","wf_job":"a","unique_until":"success","unique_token":"tok"`))
	assert.Equal(t, []string{"Settle", "Dead"}, changed(o.q))
	assert.Equal(t, []string{"workflow " + store.RunDied}, settles(o.q))
	require.Len(t, o.q.DeadJobs(), 1)
	assert.Empty(t, o.q.Locked("tok"), "a death releases a success lock")
	out := o.outcome(t)
	assert.Equal(t, "dead", out.name)
	assert.Equal(t, 4, out.retryCount)
}

// TestRunOutcomeIsRetryDeadOrSnooze walks the ways a run that did not succeed ends: what it
// records in its batch, what it writes, and the outcome. Every run's reply of its last write
// is lost once: it is sent again, and the job is stored once.
func TestRunOutcomeIsRetryDeadOrSnooze(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		err     error
		cancel  bool // the run is cancelled by a CANCEL signal
		fields  string
		settled []string
		write   string
		out     string
		count   int // retry_count stored
		at      time.Time
	}{
		{name: "a failure with retries left is retried", err: errors.New("boom"), settled: []string{"batch failed"},
			write: "Retry", out: "retry", count: 1, at: orderNow.Add(time.Minute)},
		{name: "a failure of the last retry dies", err: errors.New("boom"), fields: `,"retry_count":3`,
			settled: []string{"batch died"}, write: "Dead", out: "dead", count: 4},
		{name: "args that do not decode die with retries left", err: &ArgsDecodeError{Class: "T", err: errors.New("bad")},
			settled: []string{"batch died"}, write: "Dead", out: "dead", count: 1},
		{name: "a permanent failure wrapped dies with retries left", err: errors.Join(errors.New("x"), &ArgsDecodeError{Class: "T", err: errors.New("bad")}),
			settled: []string{"batch died"}, write: "Dead", out: "dead", count: 1},
		{name: "a snooze waits in the retry set and is no end of the batch", err: Snooze(90 * time.Second), fields: `,"retry_count":2`,
			write: "Retry", out: "snoozed", count: 2, at: orderNow.Add(90 * time.Second)},
		{name: "a cancelled job dies with retries left", cancel: true, settled: []string{"batch died"}, write: "Dead", out: "dead", count: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var o *orderRun
			var r *run
			o = newOrderRun(t, func(ctx context.Context, _ *Job) error {
				if tc.cancel {
					r.ctx.Cancel(errCanceled) // as a CANCEL signal does
				}
				return tc.err
			}, nil)
			o.q.Inject(tc.write, fakequeue.LoseReply)
			doc := orderDoc("j1", `,"bid":"b1"`+tc.fields)
			o.q.Push("default", doc)
			r = &run{queue: "default", raw: doc, epoch: o.q.Take("default", doc)}
			o.rn.process(r)

			want := make([]string, 0, len(tc.settled)+2)
			for range tc.settled {
				want = append(want, "Settle")
			}
			want = append(want, tc.write, tc.write+" (again)")
			assert.Equal(t, want, changed(o.q))
			assert.Equal(t, tc.settled, settles(o.q))
			stored := o.q.Retries()
			if tc.write == "Dead" {
				stored = o.q.DeadJobs()
			}
			require.Len(t, stored, 1, "stored once")
			assert.Equal(t, json.Number(strconv.Itoa(tc.count)), field(t, stored[0].Doc, "retry_count"))
			if !tc.at.IsZero() {
				assert.Equal(t, tc.at, stored[0].At)
			}
			out := o.outcome(t)
			assert.Equal(t, tc.out, out.name)
			assert.Equal(t, tc.count, out.retryCount)
			assert.Empty(t, o.q.Backup("default"))
		})
	}
}

func TestRunWhoseSettleNeverAnswersLeavesTheJobInItsBackupListWhenTheGraceIsOver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
	}{{"success", nil}, {"failure", errors.New("boom")}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := newOrderRun(t, failWith(tc.err), func(p *runnerParts) {
				p.after = func(time.Duration) <-chan time.Time { return nil } // only the grace's end ends the wait
			})
			close(o.graceOver)
			o.q.Inject("Settle", fakequeue.Fail)
			o.q.Lock("tok", "j1") // a success of a job with a lock until success settles on its own
			doc := orderDoc("j1", `,"bid":"b1","retry_count":1,"unique_until":"success","unique_token":"tok"`)
			o.process(doc)
			assert.Empty(t, o.q.Calls(), "no settle happened, so neither does the ack or the retry")
			assert.Equal(t, []string{doc}, o.q.Backup("default"), "the job stays for a rescue")
			out := o.outcome(t)
			assert.Equal(t, "left in backup", out.name)
			assert.Equal(t, 1, out.retryCount, "the stored retry_count, unchanged")
		})
	}
}

func TestRunOfABuriedIncarnationWritesNoOutcomeOverTheRescue(t *testing.T) {
	t.Parallel()
	var o *orderRun
	o = newOrderRun(t, func(context.Context, *Job) error {
		o.q.Bury() // another node takes this one for dead while the job runs, and rescues it
		return errors.New("boom")
	}, nil)
	o.q.Inject("Retry", fakequeue.LoseReply)
	doc := orderDoc("j1", `,"bid":"b1"`)
	o.process(doc)
	assert.Equal(t, []string{"Settle", "Retry (again)", "Retry (again)"}, changed(o.q),
		"the settle is idempotent by jid; the retry of a buried run writes nothing, however often sent")
	assert.Empty(t, o.q.Retries())
	assert.Equal(t, []string{doc}, o.q.Queue("default"), "the rescued job, untouched, runs again")
	assert.Empty(t, o.q.Backup("default"))
}

func TestRunOrphanedWhileItRanWritesNothing(t *testing.T) {
	t.Parallel()
	var r *run
	o := newOrderRun(t, func(context.Context, *Job) error {
		r.orphan() // the heartbeat found the node buried (manager.orphanAll)
		return nil
	}, nil)
	doc := orderDoc("j1", `,"bid":"b1"`)
	o.q.Push("default", doc)
	r = &run{queue: "default", raw: doc, epoch: o.q.Take("default", doc)}
	o.rn.process(r)
	assert.Empty(t, o.q.Calls(), "no settle, no ack: the rescued job's next run records its outcome")
	assert.Equal(t, []string{doc}, o.q.Backup("default"))
	assert.Equal(t, "rescued", o.outcome(t).name)
}

func TestRunWhoseSettleIsSlowWritesNoOutcomeUntilItIsDone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		err   error
		write string
	}{{"success", nil, "Ack"}, {"failure", errors.New("boom"), "Retry"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := newOrderRun(t, failWith(tc.err), nil)
			o.q.Inject("Settle", fakequeue.Hold)
			o.q.Lock("tok", "j1") // a success of a job with a lock until success settles on its own
			held := o.q.Held("Settle")
			done := make(chan struct{})
			go func() {
				defer close(done)
				o.process(orderDoc("j1", `,"bid":"b1","unique_until":"success","unique_token":"tok"`))
			}()
			release := <-held
			assert.Empty(t, o.q.Calls(), "nothing written while the settle is on its way")
			close(release)
			<-done
			assert.Equal(t, []string{"Settle", tc.write}, changed(o.q))
		})
	}
}

func TestRunOfAnUndecodableJobGoesDeadOnceWhenTheReplyIsLost(t *testing.T) {
	t.Parallel()
	o := newOrderRun(t, succeed, nil)
	o.q.Inject("Dead", fakequeue.LoseReply)
	o.process(`{"class":"T","jid":`)
	assert.Equal(t, []string{"Dead", "Dead (again)"}, changed(o.q))
	dead := o.q.DeadJobs()
	require.Len(t, dead, 1)
	assert.Equal(t, wire.PoisonErrorClass, field(t, dead[0].Doc, "error_class"))
	assert.Equal(t, []bool{false}, o.stats)
}

func TestRunOfAJobUniqueUntilStartUnlocksBeforeItRunsAndSettlesBeforeTheAck(t *testing.T) {
	t.Parallel()
	var o *orderRun
	var lockedWhileRunning string
	o = newOrderRun(t, func(context.Context, *Job) error {
		lockedWhileRunning = o.q.Locked("tok")
		return nil
	}, nil)
	o.q.Lock("tok", "j1")
	o.q.Inject("Unlock", fakequeue.LoseReply)
	o.process(orderDoc("j1", `,"bid":"b1","unique_until":"start","unique_token":"tok"`))
	assert.Empty(t, lockedWhileRunning, "released before the run: a duplicate may be enqueued while it runs")
	assert.Equal(t, []string{"Unlock", "Unlock (again)", "Settle", "AckMany"}, changed(o.q))
	assert.Equal(t, "AckMany", o.q.Calls()[2].In, "the success's transition in its acknowledgement")
}
