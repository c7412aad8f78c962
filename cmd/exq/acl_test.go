package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// The exq command under the README's ACLs: without the channel, cron enqueue pushes the job
// once and exits 0 (it exited 1 with "can't publish" after pushing); with the read-only
// user, the look commands work although a stale process is listed, and leave it there.
func TestCommandsUnderTheDocumentedACLs(t *testing.T) {
	ns := testutil.Namespace(t)
	srv := testutil.StartACLServer(t, ns)
	ctx := context.Background()
	admin := srv.Admin

	nochan := srv.UserURL("nochannels")
	r := runBin(t, exqBin, nochan, "-n", ns, "cron", "add", "nightly", "@daily", "reports", "R")
	require.Equal(t, 0, r.code, r.errOut)
	r = runBin(t, exqBin, nochan, "-n", ns, "cron", "enqueue", "nightly")
	assert.Equal(t, 0, r.code, r.errOut)
	assert.EqualValues(t, 1, admin.LLen(ctx, ns+":queue:reports").Val(), "pushed once")
	r = runBin(t, exqBin, nochan, "-n", ns, "queues", "pause", "reports")
	require.Equal(t, 0, r.code, r.errOut)
	r = runBin(t, exqBin, nochan, "-n", ns, "queues", "resume", "reports")
	assert.Equal(t, 0, r.code, r.errOut)
	assert.Empty(t, admin.SMembers(ctx, ns+":paused").Val())

	now := float64(time.Now().UnixMicro()) / 1e6
	require.NoError(t, admin.HSet(ctx, ns+":live:1:a", "info", `{"hostname":"h","pid":1,"concurrency":5,"queues":["reports"],"labels":["exq-go"],"busy":0,"quiet":false}`,
		"busy", "0", "beat", fmt.Sprint(now), "quiet", "false").Err())
	require.NoError(t, admin.HSet(ctx, ns+":dead:2:b:workers", "t", `{"queue":"reports","payload":"{}","run_at":1}`).Err())
	require.NoError(t, admin.SAdd(ctx, ns+":processes", "live:1:a", "dead:2:b").Err())
	ro := srv.UserURL("readonly")
	for _, args := range [][]string{{"stats"}, {"processes"}, {"busy"}, {"queues"}, {"jobs", "reports"}, {"dead"}, {"cron", "list"}} {
		r := runBin(t, exqBin, ro, append([]string{"-n", ns}, args...)...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.errOut)
	}
	assert.True(t, admin.SIsMember(ctx, ns+":processes", "dead:2:b").Val(), "reads did not prune")
}
