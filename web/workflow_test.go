package web

import (
	"context"
	"strings"
	"testing"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLayoutGraphRefusesACycleReadFromRedisAndBigGraphs(t *testing.T) {
	cyc := []exq.WorkflowJobStatus{{Name: "a", DependsOn: []string{"b"}}, {Name: "b", DependsOn: []string{"a"}}}
	assert.Nil(t, layoutGraph(cyc))
	big := make([]exq.WorkflowJobStatus, maxDrawn+1)
	for i := range big {
		big[i].Name = strings.Repeat("x", i+1)
	}
	assert.Nil(t, layoutGraph(big))
	g := layoutGraph([]exq.WorkflowJobStatus{{Name: "a"}, {Name: "b", DependsOn: []string{"a"}}})
	require.NotNil(t, g)
	assert.Len(t, g.Edges, 1)
	assert.Greater(t, g.Nodes[1].X, g.Nodes[0].X, "a child is drawn right of its parent")
}

// The workflow page shows the result each job stored: escaped, and cut at resultShown bytes
// with the whole size said.
func TestWorkflowPageShowsTheResultsItsJobsStored(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	type in struct{ N int }
	const hostile = `<script>alert(1)</script>`
	long := strings.Repeat("ab", 300)
	e, err := exq.Start(context.Background(), exq.Options{Redis: f.client, Namespace: f.ns, Queues: []exq.Queue{{Name: "q"}},
		Logger: quiet, Workers: map[string]exq.Worker{
			"Extract": exq.TypedResult(func(context.Context, *exq.Job, in) (string, error) { return hostile, nil }),
			"Load":    exq.TypedResult(func(context.Context, *exq.Job, in) (string, error) { return long, nil }),
			"Tell":    exq.WorkerFunc(func(context.Context, *exq.Job) error { return nil }),
		}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	w, err := e.EnqueueWorkflow(context.Background(), exq.WorkflowOptions{}, []exq.WorkflowJob{
		{Name: "extract", Queue: "q", Class: "Extract", Args: []any{in{1}}},
		{Name: "load", Queue: "q", Class: "Load", Args: []any{in{2}}, DependsOn: []string{"extract"}},
		{Name: "tell", Queue: "q", Class: "Tell", DependsOn: []string{"load"}}})
	require.NoError(t, err)
	testutil.WaitFor(t, "the workflow finished", func() bool {
		st, err := f.api.Workflow(context.Background(), w.ID)
		return err == nil && st.Succeeded == 3
	})

	page := f.page("/workflows/" + w.ID)
	assert.Contains(t, page, "<th>Result</th>")
	assert.Contains(t, page, `<code class="args">&#34;\u003cscript\u003ealert(1)\u003c/script\u003e&#34;</code>`, "escaped")
	assert.NotContains(t, page, hostile)
	assert.Contains(t, page, `<code class="args">&#34;`+long[:resultShown-1]+`…</code> <small>602 bytes</small>`, "cut, with its size")
	assert.Regexp(t, `<code>`+w.JIDs["tell"]+`</code></a></td>\s*<td>–</td>`, page, "tell stored nothing")

	// A result written straight into Redis, with markup, is escaped.
	const raw = `<img src=x onerror=alert(1)>`
	require.NoError(t, f.rdb.Set(context.Background(), f.keys.Result(w.JIDs["tell"]), raw, 0).Err())
	page = f.page("/workflows/" + w.ID)
	assert.NotContains(t, page, raw)
	assert.Contains(t, page, `<code class="args">&lt;img src=x onerror=alert(1)&gt;</code>`)
}
