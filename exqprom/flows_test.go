package exqprom

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// TestMetricsOfBatchesAndWorkflows runs a batch whose jobs all run but one dies, and a
// workflow where a parent succeeds and another dies, on a real node whose Listener is the
// collector's: the batch's complete and death callbacks count once each (success never
// fires), the workflow's released and canceled dependents and its end count as they happened.
func TestMetricsOfBatchesAndWorkflows(t *testing.T) {
	ctx := context.Background()
	rdb, ns := testutil.Redis(t)
	c := New(nil, Options{})

	var mu sync.Mutex
	var callbacksFired int
	finished := false
	done := make(chan struct{})
	watch := func(ev exq.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ev.Kind == exq.BatchCallback:
			callbacksFired++
		case ev.Kind == exq.WorkflowReleased && ev.Callback == "finished":
			finished = true
		default:
			return
		}
		if callbacksFired == 2 && finished {
			close(done)
		}
	}
	ok := exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil })
	e, err := exq.Start(ctx, exq.Options{Redis: rdb, Namespace: ns, Logger: quietLogger(), MaxRetries: exq.NoRetries,
		Workers: map[string]exq.Worker{
			"Ok":     ok,
			"Doomed": exq.WorkerFunc(func(context.Context, *exq.Job) error { return errors.New("boom") }),
			"Cb":     ok,
		},
		// The collector first: when watch hears the last event, the collector has counted it.
		Listeners: []exq.Listener{c.Listener(), watch},
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Stop(ctx)) }()

	cb := func(name string) *exq.JobSpec { return &exq.JobSpec{Queue: "default", Class: "Cb", Args: []any{name}} }
	_, _, err = e.NewBatch(ctx, exq.BatchOptions{OnSuccess: cb("success"), OnComplete: cb("complete"), OnDeath: cb("death")},
		[]exq.JobSpec{{Queue: "default", Class: "Ok"}, {Queue: "default", Class: "Ok"}, {Queue: "default", Class: "Doomed"}})
	require.NoError(t, err)
	_, err = e.EnqueueWorkflow(ctx, exq.WorkflowOptions{}, []exq.WorkflowJob{
		{Name: "a", Queue: "default", Class: "Ok"},
		{Name: "b", Queue: "default", Class: "Ok", DependsOn: []string{"a"}},
		{Name: "c", Queue: "default", Class: "Ok", DependsOn: []string{"a"}},
		{Name: "x", Queue: "default", Class: "Doomed"},
		{Name: "y", Queue: "default", Class: "Ok", DependsOn: []string{"x"}}, // canceled when x dies
	})
	require.NoError(t, err)
	select {
	case <-done:
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the batch's callbacks and the workflow's end were not reported")
	}

	s, _ := scrape(t, server(t, c))
	assert.Equal(t, map[string]float64{"callback=success": 0, "callback=complete": 1, "callback=death": 1, "callback=other": 0},
		s.values("exq_batch_callbacks_total"))
	assert.Equal(t, 2.0, s.value(t, "exq_workflow_jobs_released_total"), "b and c, when a succeeded")
	assert.Equal(t, 1.0, s.value(t, "exq_workflow_jobs_canceled_total"), "y, when x died")
	assert.Equal(t, 1.0, s.value(t, "exq_workflows_finished_total"))
}

// A BatchCallback of a callback this version does not know counts as "other", and a count
// below zero adds nothing: the label set stays bounded and the counters never go back.
func TestListenerBoundsBatchAndWorkflowEvents(t *testing.T) {
	c := New(nil, Options{})
	l := c.Listener()
	l(exq.Event{Kind: exq.BatchCallback, Callback: "bogus\xff"})
	l(exq.Event{Kind: exq.BatchCallback, Callback: "success"})
	l(exq.Event{Kind: exq.WorkflowReleased, Count: -3, Canceled: -1})
	s, _ := scrape(t, server(t, c))
	assert.Equal(t, map[string]float64{"callback=success": 1, "callback=complete": 0, "callback=death": 0, "callback=other": 1},
		s.values("exq_batch_callbacks_total"))
	assert.Equal(t, 0.0, s.value(t, "exq_workflow_jobs_released_total"))
	assert.Equal(t, 0.0, s.value(t, "exq_workflow_jobs_canceled_total"))
	assert.Equal(t, 0.0, s.value(t, "exq_workflows_finished_total"))
	allocs := testing.AllocsPerRun(100, func() {
		l(exq.Event{Kind: exq.BatchCallback, Callback: "complete"})
		l(exq.Event{Kind: exq.WorkflowReleased, Count: 2, Callback: "finished"})
	})
	assert.Zero(t, allocs)
}
