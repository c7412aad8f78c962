package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// 6. Without a terminal, a bulk delete without --force is refused (exit 2) and deletes nothing.
func TestDeleteQueueWithoutForceOnNonTTYRefusesAndKeepsJobs(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 300)
	c.zadd("dead", "d", 10)
	for _, args := range [][]string{{"delete", "--queue", "mail"}, {"delete", "--all", "--set", "dead"}} {
		code, out, errOut := c.run(args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "; stdin is not a terminal, so exq cannot ask: pass --force to confirm (see exq delete --help)\n", "%v", args)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "%v", args)
	}
	ctx := context.Background()
	assert.EqualValues(t, 300, c.rdb.LLen(ctx, c.ns+":queue:mail").Val())
	assert.EqualValues(t, 10, c.rdb.ZCard(ctx, c.ns+":dead").Val())
}

// 6, 10. With --force the queue goes, the count is said, and progress is plain lines on a
// non-terminal stderr.
func TestDeleteQueueWithForceSaysHowManyJobsItRemoved(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 1200)
	c.push("other", 3)
	code, out, errOut := c.run("delete", "--queue", "mail", "--force")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "deleted queue mail and its 1200 jobs\n", out)
	assertPlainProgress(t, c.cutNotice(errOut, "delete"), "deleting queue mail", 1200)
	ctx := context.Background()
	assert.Zero(t, c.rdb.Exists(ctx, c.ns+":queue:mail").Val())
	assert.Equal(t, []string{"other"}, c.rdb.SMembers(ctx, c.ns+":queues").Val())
	assert.EqualValues(t, 3, c.rdb.LLen(ctx, c.ns+":queue:other").Val())

	var got map[string]any
	c.push("mail", 2)
	c.json(&got, "delete", "--queue", "mail", "-f")
	assert.Equal(t, map[string]any{"queue": "mail", "deleted": 2.0}, got)
}

// 6. A queue that does not exist fails (exit 1) and nothing is deleted.
func TestDeleteNoSuchQueueFailsAndDeletesNothing(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 5)
	code, out, errOut := c.run("delete", "--queue", "mial", "--force")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "exq delete: no queue \"mial\" in namespace \""+c.ns+"\" (see exq queues); nothing was deleted\n", errOut)
	assert.EqualValues(t, 5, c.rdb.LLen(context.Background(), c.ns+":queue:mail").Val())
}

// 6, 10. delete --all says how many jobs it removed, with progress lines.
func TestDeleteAllOfASetSaysHowManyAndShowsProgress(t *testing.T) {
	c := newCLIEnv(t)
	c.zadd("dead", "d", 2500)
	c.zadd("retry", "r", 2)
	code, out, errOut := c.run("delete", "--all", "--set", "dead", "--force")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "deleted 2500 jobs of dead\n", out)
	assertPlainProgress(t, c.cutNotice(errOut, "delete"), "deleting dead jobs", 2500)
	ctx := context.Background()
	assert.Zero(t, c.rdb.ZCard(ctx, c.ns+":dead").Val())
	assert.EqualValues(t, 2, c.rdb.ZCard(ctx, c.ns+":retry").Val(), "the other set is untouched")

	code, out, errOut = c.run("delete", "--all", "--set", "dead", "--force")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "dead is empty; nothing was deleted\n", out)
}

// 6. On a terminal the bulk delete asks, names what it would delete, and does nothing unless
// told yes.
func TestDeleteOnATerminalAsksAndOnlyYesDeletes(t *testing.T) {
	c := newCLIEnv(t)
	c.push("mail", 40)
	ctx := context.Background()
	for _, answer := range []string{"", "n\n", "nope\n"} {
		code, out, errOut := c.runIn(answer, true, "delete", "--queue", "mail")
		assert.Equal(t, 1, code, "%q", answer)
		assert.Empty(t, out)
		assert.Equal(t, "Delete queue mail and its 40 jobs? [y/N] exq delete: not confirmed; nothing was deleted\n", errOut, "%q", answer)
		assert.EqualValues(t, 40, c.rdb.LLen(ctx, c.ns+":queue:mail").Val())
	}
	code, out, errOut := c.runIn("y\n", true, "delete", "--queue", "mail")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "deleted queue mail and its 40 jobs\n", out)
	assert.True(t, strings.HasPrefix(errOut, "Delete queue mail and its 40 jobs? [y/N] "), errOut)
	assert.Contains(t, errOut, "\r", "a terminal gets the redrawn bar")
	assert.Contains(t, errOut, "40/40")
	assert.Zero(t, c.rdb.Exists(ctx, c.ns+":queue:mail").Val())
}

// 10. retry --all reports progress as plain lines when stderr is not a terminal.
func TestRetryAllProgressIsPlainLinesWhenStderrIsNotATerminal(t *testing.T) {
	c := newCLIEnv(t)
	c.zadd("dead", "b", 2500)
	code, out, errOut := c.run("retry", "--all")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "moved 2500 jobs from dead to their queues\n", out)
	assertPlainProgress(t, c.cutNotice(errOut, "requeue"), "moving dead jobs to their queues", 2500)
	assert.EqualValues(t, 2500, c.rdb.LLen(context.Background(), c.ns+":queue:bulk").Val())

	code, out, errOut = c.run("retry", "--all")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "dead is empty; nothing was moved\n", out)
	assert.Equal(t, c.notice("requeue"), errOut, "no progress for nothing")
}

// 10. On a terminal, the progress bar is the library's, redrawn in place.
func TestRetryAllDrawsABarOnATerminal(t *testing.T) {
	c := newCLIEnv(t)
	c.zadd("dead", "b", 1500)
	code, out, errOut := c.runIn("", true, "retry", "--all")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "moved 1500 jobs from dead to their queues\n", out)
	assert.Contains(t, errOut, "\r")
	assert.Contains(t, errOut, "moving dead jobs to their queues")
	assert.Contains(t, errOut, "1500/1500")
	assert.Contains(t, errOut, "100%")
}

// assertPlainProgress checks a progress report for a file or pipe: whole lines, no \r, the
// last one complete.
func assertPlainProgress(t *testing.T, errOut, label string, total int) {
	t.Helper()
	assert.NotContains(t, errOut, "\r", "no terminal frames in a file")
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 2, errOut)
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(label) + `: \d+/\d+ \(\d+%\)$`)
	for _, l := range lines {
		assert.Regexp(t, re, l)
	}
	assert.Equal(t, label+": 0/"+itoa(total)+" (0%)", lines[0])
	assert.Equal(t, label+": "+itoa(total)+"/"+itoa(total)+" (100%)", lines[len(lines)-1])
}
