package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An iterable job's saved state (it-<jid>, Sidekiq 7.3's layout) shows on the busy page beside
// the job, escaped and with its cursor cut, and on the page of the job while it waits.
func TestIterationStateShowsOnTheBusyPageAndTheJobPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	id := "sk7:1:iter"
	now := float64(time.Now().UnixMicro()) / 1e6
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Node(id), "info", `{"hostname":"h","pid":1,"concurrency":5,"queues":["default"]}`,
		"busy", "1", "beat", fmt.Sprint(now), "quiet", "false").Err())
	require.NoError(t, f.rdb.SAdd(ctx, f.keys.Processes(), id).Err())
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Work(id),
		"r1", `{"queue":"default","payload":"{\"class\":\"Walk\",\"args\":[9],\"jid\":\"iter-1\"}","run_at":1796010417}`).Err())
	hostile := `"<script>` + strings.Repeat("x", 1000) + `"`
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Iteration("iter-1"), "ex", "3", "c", hostile, "rt", "12.5").Err())
	body := f.page("/busy")
	assert.Contains(t, body, `<small class="iteration">cursor &#34;&lt;script&gt;xxx`)
	assert.Contains(t, body, `· run 3 · 12.5s iterating</small>`)
	assert.NotContains(t, body, "<script>")
	assert.NotContains(t, body, strings.Repeat("x", 300), "the cursor is cut")

	require.NoError(t, f.rdb.HSet(ctx, f.keys.Iteration("iter-2"), "ex", "1", "c", "41", "rt", "0.2", "cancelled", "1796010415").Err())
	require.NoError(t, f.rdb.LPush(ctx, f.keys.Queue("default"), `{"class":"Walk","queue":"default","args":[9],"jid":"iter-2"}`).Err())
	require.NoError(t, f.rdb.SAdd(ctx, f.keys.Queues(), "default").Err())
	assert.Contains(t, f.page("/queues/default/jobs/iter-2"), `<dt>Iteration</dt><dd>cursor 41 · run 1 · 200ms iterating · cancelled</dd>`)
}
