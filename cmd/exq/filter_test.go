package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// retries, scheduled and dead take --class and --queue (the README showed exq retries --class,
// which exited 2): the matching jobs, paged by --limit and --offset among the matches, reading
// at most filterScanLimit members, and saying how many it read. Reading writes nothing.
func TestSetListingsFilterByClassAndQueue(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	ctx := context.Background()
	var members []redis.Z
	for i := range 30 {
		class, queue := "App.Refund", "billing"
		if i%3 != 0 {
			class, queue = "App.Mail", "mail"
		}
		members = append(members, redis.Z{Score: float64(1700000000 + i), Member: fmt.Sprintf(
			`{"class":"%s","args":[%d],"queue":"%s","jid":"j%02d","error_class":"E","error_message":"boom"}`, class, i, queue, i)})
	}
	members = append(members, redis.Z{Score: 1700000100, Member: "not json"})
	require.NoError(t, c.rdb.ZAdd(ctx, c.ns+":retry", members...).Err())
	before := c.rdb.ZCard(ctx, c.ns+":retry").Val()

	var got []struct {
		JID, Class, Queue string
	}
	c.json(&got, "retries", "--class", "App.Refund", "--limit", "3", "--offset", "2")
	require.Len(t, got, 3)
	assert.Equal(t, []string{"j06", "j09", "j12"}, []string{got[0].JID, got[1].JID, got[2].JID}, "matches 3 to 5, soonest first")
	for _, j := range got {
		assert.Equal(t, "App.Refund", j.Class)
	}

	code, out, errOut := c.run("retries", "--queue", "mail", "--class", "App.Mail", "--limit", "50")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "20 matching from match 1 on; read 31 of the 31 jobs\n")
	assert.NotContains(t, out, "App.Refund")

	code, out, errOut = c.run("dead", "--class", "App.Refund")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "0 matching from match 1 on; read 0 of the 0 jobs\n")

	assert.Equal(t, before, c.rdb.ZCard(ctx, c.ns+":retry").Val(), "reading moved nothing")
}

// A filter reads at most filterScanLimit members: past them it says so rather than reading on.
func TestASetFilterReadsABoundedNumberOfJobs(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	c.zadd("dead", "d", filterScanLimit+5)
	code, out, errOut := c.run("dead", "--class", "Nobody")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, fmt.Sprintf("0 matching from match 1 on; read %d of the %d jobs (a filter reads at most %d)\n",
		filterScanLimit, filterScanLimit+5, filterScanLimit))
}
