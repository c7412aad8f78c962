package web

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

func TestBatchAndWorkflowPagesShowTheirStateEscaped(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	c, err := exq.NewClient(ctx, exq.ClientOptions{Redis: f.client, Namespace: f.ns, Logger: quiet})
	require.NoError(t, err)
	defer c.Close()
	const hostile = `<script>alert(1)</script>`
	bid, jids, err := c.NewBatch(ctx, exq.BatchOptions{Description: "nightly " + hostile,
		OnSuccess: &exq.JobSpec{Queue: "cb", Class: "Done"}}, []exq.JobSpec{{Queue: "q", Class: "W"}, {Queue: "q", Class: "W"}})
	require.NoError(t, err)
	w, err := c.EnqueueWorkflow(ctx, exq.WorkflowOptions{Description: hostile}, []exq.WorkflowJob{
		{Name: "extract", Queue: "q", Class: "W"},
		{Name: hostile, Queue: "q", Class: "W", DependsOn: []string{"extract"}},
		{Name: "load", Queue: "q", Class: "W", DependsOn: []string{"extract", hostile}}})
	require.NoError(t, err)

	list := f.page("/batches")
	assert.Contains(t, list, "/batches/"+bid)
	wfs := f.page("/workflows")
	assert.Contains(t, wfs, "/workflows/"+w.ID)
	one := f.page("/batches/" + bid)
	for _, jid := range jids {
		assert.Contains(t, one, jid, "a pending job is listed")
	}
	assert.Contains(t, one, "?audit=1")
	audited := f.page("/batches/" + bid + "?audit=1")
	assert.Contains(t, audited, "Unaccounted")
	assert.Equal(t, 2, strings.Count(audited, "None."), "both jobs are in their queue: nothing is reported")
	wf := f.page("/workflows/" + w.ID)
	assert.Contains(t, wf, "<svg", "the graph is drawn")
	assert.Equal(t, 3, strings.Count(wf, `<line `), "one edge per dependency")
	assert.Contains(t, wf, `class="st-queued"`)
	assert.Contains(t, wf, `class="st-waiting"`)
	for _, page := range []string{list, wfs, one, wf} {
		assert.NotContains(t, page, hostile, "text from Redis is escaped")
	}
	code, _ := f.get("/batches/nope")
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = f.get("/workflows/nope")
	assert.Equal(t, http.StatusNotFound, code)
}

// Each page marks its own tab in the nav: a batch's and a workflow's page their list's, never
// the other's.
func TestNavMarksTheTabOfEachFlowPage(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	c, err := exq.NewClient(ctx, exq.ClientOptions{Redis: f.client, Namespace: f.ns, Logger: quiet})
	require.NoError(t, err)
	defer c.Close()
	bid, _, err := c.NewBatch(ctx, exq.BatchOptions{}, []exq.JobSpec{{Queue: "q", Class: "W"}})
	require.NoError(t, err)
	w, err := c.EnqueueWorkflow(ctx, exq.WorkflowOptions{}, []exq.WorkflowJob{{Name: "a", Queue: "q", Class: "W"}})
	require.NoError(t, err)
	for _, c := range []struct{ path, tab string }{
		{"/batches", "Batches"}, {"/batches/" + bid, "Batches"},
		{"/workflows", "Workflows"}, {"/workflows/" + w.ID, "Workflows"},
		{"/metrics", "Metrics"},
	} {
		body := f.page(c.path)
		nav := regexp.MustCompile(`(?s)<nav>.*?</nav>`).FindString(body)
		on := regexp.MustCompile(`class="on">([^<]*)</a>`).FindAllStringSubmatch(nav, -1)
		require.Len(t, on, 1, "%s: one tab marked", c.path)
		assert.Equal(t, c.tab, on[0][1], c.path)
	}
}
