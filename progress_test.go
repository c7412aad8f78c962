package exq

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// progressOf is the progress API.BusyJobs lists for job jid, or nil.
func progressOf(t *testing.T, a *API, jid string) *Progress {
	t.Helper()
	busy, err := a.BusyJobs(context.Background())
	require.NoError(t, err)
	for _, b := range busy {
		if j, err := b.Job(); err == nil && j.JID == jid {
			return b.Progress
		}
	}
	return nil
}

func TestProgressIsShownOnTheBusyListWhileTheJobRuns(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	step, refused := make(chan struct{}), make(chan error, 1)
	e := v.start(Options{Workers: map[string]Worker{"Copy": WorkerFunc(func(ctx context.Context, _ *Job) error {
		if err := SetProgress(ctx, 0.25, "copying <b>files</b>"); err != nil {
			return err
		}
		<-step
		for i := range 10_000 { // coalesced: the busy list carries the latest only
			if err := SetProgress(ctx, float64(i)/10_000, "copying"); err != nil {
				return err
			}
		}
		if err := SetProgress(ctx, 0.75, "almost"); err != nil {
			return err
		}
		refused <- SetProgress(ctx, 1.5, "too far")
		<-step
		return nil
	})}}, testHooks{pingInterval: time.Hour, statsInterval: 20 * time.Millisecond})
	a, _ := v.api()
	v.push("default", `{"class":"Copy","args":[],"queue":"default","jid":"copy-1"}`)

	testutil.WaitFor(t, "the first progress is listed", func() bool {
		p := progressOf(t, a, "copy-1")
		return p != nil && *p == Progress{Fraction: 0.25, Message: "copying <b>files</b>"}
	})
	// Both names of the busy list carry it, as exq's own field of the entry.
	for _, k := range []string{v.keys.Workers(e.NodeID()), v.keys.Work(e.NodeID())} {
		for _, val := range v.hash(k) {
			var w struct {
				Payload  string          `json:"payload"`
				Progress json.RawMessage `json:"progress"`
			}
			require.NoError(t, json.Unmarshal([]byte(val), &w))
			assert.JSONEq(t, `{"fraction":0.25,"message":"copying <b>files</b>"}`, string(w.Progress))
			assert.Contains(t, w.Payload, `"jid":"copy-1"`)
		}
	}

	// A field the node did not write: a whole rewrite of the busy list (DEL, HSET) would drop
	// it, the write of the entries whose progress changed leaves it.
	for _, k := range []string{v.keys.Workers(e.NodeID()), v.keys.Work(e.NodeID())} {
		require.NoError(t, v.rdb.HSet(context.Background(), k, "marker", "{}").Err())
	}
	step <- struct{}{}
	require.ErrorIs(t, <-refused, ErrInvalidProgress)
	// With the ping an hour away, only the progress write (the entries that changed) brings it.
	testutil.WaitFor(t, "the latest progress is listed", func() bool {
		p := progressOf(t, a, "copy-1")
		return p != nil && *p == Progress{Fraction: 0.75, Message: "almost"}
	})
	assert.Contains(t, v.hash(v.keys.Work(e.NodeID())), "marker", "only the changed entry was written")
	assert.Equal(t, v.hash(v.keys.Workers(e.NodeID())), v.hash(v.keys.Work(e.NodeID())), "both names say the same")
	close(step)
	testutil.WaitFor(t, "the busy list is empty once the job ends", func() bool { return len(v.hash(v.keys.Work(e.NodeID()))) == 0 })
}

func TestSetProgressRefusesBadInputNamingIt(t *testing.T) {
	t.Parallel()
	job := &Job{Class: "C", JID: "j"}
	ctx := WithJob(context.Background(), job)
	for _, tc := range []struct {
		name     string
		fraction float64
		message  string
		want     string
	}{
		{"below zero", -0.01, "", "fraction -0.01 is not a number from 0 to 1"},
		{"above one", 1.01, "", "fraction 1.01 is not a number from 0 to 1"},
		{"NaN", math.NaN(), "", "fraction NaN is not a number from 0 to 1"},
		{"infinite", math.Inf(1), "", "fraction +Inf is not a number from 0 to 1"},
		{"long message", 0.5, strings.Repeat("x", MaxProgressMessage+1), "message of 201 bytes is longer than 200"},
		{"not UTF-8", 0.5, "a\xffb", "message is not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := SetProgress(ctx, tc.fraction, tc.message)
			require.ErrorIs(t, err, ErrInvalidProgress)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.NoError(t, SetProgress(ctx, 1, strings.Repeat("é", MaxProgressMessage/2)), "the bounds are inclusive; outside a node it is checked, shown nowhere")
	assert.ErrorIs(t, SetProgress(context.Background(), 0.5, ""), ErrInvalidProgress, "outside a job")
}

// A busy entry written by another program (or by hand) may hold anything where the progress
// belongs: readers list the job, with a progress only when it is a fraction from 0 to 1, and
// its message bounded.
func TestBusyJobsReadAHostileProgressSafely(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	v.sidekiqProcess("foreign:1", "info", `{"hostname":"f","pid":1,"identity":"foreign:1"}`, "busy", 9, "beat", "1796010418.5", "quiet", "false")
	long := strings.Repeat("é", 1<<19) // 1 MiB
	entries := map[string]struct {
		progress string
		want     *Progress
	}{
		"a": {`"half"`, nil},
		"b": {`{"fraction":"0.5","message":"m"}`, nil},
		"c": {`{"fraction":1e300,"message":"m"}`, nil},
		"d": {`{"fraction":-1}`, nil},
		"e": {`{"fraction":0.5,"message":"` + long + `"}`, &Progress{0.5, strings.Repeat("é", MaxProgressMessage/2)}},
		"f": {`{"fraction":0.5,"message":7}`, &Progress{0.5, ""}},
		"g": {`{"fraction":1,"message":"a\u001b[31mb<script>"}`, &Progress{1, "a\x1b[31mb<script>"}},
		"h": {`[0.5]`, nil},
		"i": {`{"fraction":0.5,"message":"` + strings.Repeat("x", 199) + `é"}`, &Progress{0.5, strings.Repeat("x", 199)}},
	}
	for run, e := range entries {
		val := `{"queue":"q","payload":"{\"class\":\"C\",\"args\":[],\"jid\":\"` + run + `\"}","run_at":1796010417,"progress":` + e.progress + `}`
		require.NoError(t, v.rdb.HSet(ctx, v.keys.Work("foreign:1"), run, val).Err())
	}
	// Not JSON at all (NaN is no JSON number): that entry is left out, the others are listed.
	require.NoError(t, v.rdb.HSet(ctx, v.keys.Work("foreign:1"), "z", `{"queue":"q","payload":"{}","run_at":1,"progress":{"fraction":NaN}}`).Err())
	a, _ := v.api()
	busy, err := a.BusyJobs(ctx)
	require.NoError(t, err)
	require.Len(t, busy, len(entries))
	for _, b := range busy {
		want := entries[b.RunID].want
		assert.Equal(t, want, b.Progress, "entry %s", b.RunID)
		if b.Progress != nil {
			assert.LessOrEqual(t, len(b.Progress.Message), MaxProgressMessage)
		}
	}
}

// BenchmarkSetProgress is one report of a running job: a check and an atomic store, no Redis
// command (the pinger carries the latest value with its next busy-list write).
func BenchmarkSetProgress(b *testing.B) {
	job := &Job{Class: "C", JID: "j", progress: new(atomic.Pointer[wire.Progress])}
	ctx := WithJob(context.Background(), job)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := SetProgress(ctx, float64(i%100)/100, "copying"); err != nil {
			b.Fatal(err)
		}
	}
}
