package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedGood stores one of each record the read commands list, written as the runtimes write
// them: a waiting job j1, a live node node1 running job r1, a periodic job c1, a batch b1 and
// a workflow w1.
func (c *cliEnv) seedGood() {
	c.t.Helper()
	ctx := context.Background()
	now := time.Now().Unix()
	p := c.rdb.Pipeline()
	p.LPush(ctx, c.ns+":queue:default", `{"class":"C","args":[],"queue":"default","jid":"j1"}`)
	p.SAdd(ctx, c.ns+":queues", "default")
	id := "node1:1:abc"
	p.HSet(ctx, c.ns+":"+id, "info", fmt.Sprintf(`{"hostname":"h","started_at":%d,"pid":1,"concurrency":5,"queues":["default"],"identity":%q}`, now, id),
		"busy", "1", "beat", fmt.Sprint(now), "quiet", "false")
	p.HSet(ctx, c.ns+":"+id+":workers", "t1", fmt.Sprintf(`{"queue":"default","payload":"{\"class\":\"C\",\"jid\":\"r1\",\"args\":[]}","run_at":%d}`, now))
	p.SAdd(ctx, c.ns+":processes", id)
	p.HSet(ctx, c.ns+":cron_job:c1", "name", "c1", "cron", "* * * * *", "klass", "K", "queue", "default", "args", "[]", "status", "enabled")
	p.SAdd(ctx, c.ns+":cron_jobs", "cron_job:c1")
	p.HSet(ctx, c.ns+":batch:b1", "bid", "b1", "created_at", fmt.Sprint(now), "description", "d")
	p.SAdd(ctx, c.ns+":batch:b1:jobs", "j1")
	p.HSet(ctx, c.ns+":batch:b1:pending", "j1", "0")
	p.ZAdd(ctx, c.ns+":batches", redisZ(float64(now), "b1"))
	p.HSet(ctx, c.ns+":wf:w1", "created_at", fmt.Sprint(now), "total", "1", "description", "w")
	p.HSet(ctx, c.ns+":wf:w1:graph", "s:a", "queued", "w:a", "0", "j:a", "j1", "q:a", "default")
	p.ZAdd(ctx, c.ns+":workflows", redisZ(float64(now), "w1"))
	_, err := p.Exec(ctx)
	require.NoError(c.t, err)
}

// One key of another type than its listing expects (a set member naming a key of another
// kind, or a key something else wrote) spoils its own record, never another command or the
// other records: every read command still answers, --json is JSON, and the good records are
// there. Before, a listed batch or workflow id naming another kind of key failed the whole
// listing (exq batch list, GET /batches); one periodic job's key holding a string failed every exq command (even exq
// batch show), and one process member naming the queues set failed stats, busy and processes.
func TestAKeyOfAnotherTypeSpoilsOnlyItsOwnRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bad  func(ctx context.Context, c *cliEnv) error
	}{
		{"a process member naming the queues set", func(ctx context.Context, c *cliEnv) error {
			return c.rdb.SAdd(ctx, c.ns+":processes", "queues").Err()
		}},
		{"a node hash that is a set", func(ctx context.Context, c *cliEnv) error {
			if err := c.rdb.SAdd(ctx, c.ns+":processes", "node2:1:abc").Err(); err != nil {
				return err
			}
			return c.rdb.SAdd(ctx, c.ns+":node2:1:abc", "x").Err()
		}},
		{"a node's busy list that is a string", func(ctx context.Context, c *cliEnv) error {
			if err := c.rdb.SAdd(ctx, c.ns+":processes", "node3:1:abc").Err(); err != nil {
				return err
			}
			if err := c.rdb.HSet(ctx, c.ns+":node3:1:abc", "info", `{"hostname":"h"}`).Err(); err != nil {
				return err
			}
			return c.rdb.Set(ctx, c.ns+":node3:1:abc:workers", "x", 0).Err()
		}},
		{"a periodic job member naming the dead set", func(ctx context.Context, c *cliEnv) error {
			if err := c.rdb.ZAdd(ctx, c.ns+":dead", redisZ(1, "{}")).Err(); err != nil {
				return err
			}
			return c.rdb.SAdd(ctx, c.ns+":cron_jobs", "dead").Err()
		}},
		{"a periodic job's hash that is a string", func(ctx context.Context, c *cliEnv) error {
			if err := c.rdb.SAdd(ctx, c.ns+":cron_jobs", "cron_job:c2").Err(); err != nil {
				return err
			}
			return c.rdb.Set(ctx, c.ns+":cron_job:c2", "x", 0).Err()
		}},
		{"a queue whose list is a string", func(ctx context.Context, c *cliEnv) error {
			if err := c.rdb.SAdd(ctx, c.ns+":queues", "evil").Err(); err != nil {
				return err
			}
			return c.rdb.Set(ctx, c.ns+":queue:evil", "x", 0).Err()
		}},
		{"a listed batch id naming another batch's set", func(ctx context.Context, c *cliEnv) error {
			return c.rdb.ZAdd(ctx, c.ns+":batches", redisZ(float64(time.Now().Unix()+1), "b1:jobs")).Err()
		}},
		{"a batch's pending hash that is a string", func(ctx context.Context, c *cliEnv) error {
			return c.rdb.Set(ctx, c.ns+":batch:b1:pending", "x", 0).Err()
		}},
		{"a listed workflow id naming another workflow's graph", func(ctx context.Context, c *cliEnv) error {
			return c.rdb.ZAdd(ctx, c.ns+":workflows", redisZ(float64(time.Now().Unix()+1), "w1:graph")).Err()
		}},
		{"a workflow's graph that is a string", func(ctx context.Context, c *cliEnv) error {
			return c.rdb.Set(ctx, c.ns+":wf:w1:graph", "x", 0).Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCLIEnv(t)
			c.seedGood()
			require.NoError(t, tc.bad(context.Background(), c))
			for _, args := range [][]string{
				{"stats"}, {"queues"}, {"jobs", "default"}, {"busy"}, {"processes"}, {"cron", "list"},
				{"cron", "history", "c1"}, {"batch", "list"}, {"batch", "show", "b1"}, {"workflow", "list"},
				{"workflow", "show", "w1"}, {"metrics"}, {"retries"}, {"dead"}, {"job", "j1"}, {"job", "r1"},
			} {
				code, out, errOut := c.run(append(args, "--json")...)
				assert.Equal(t, 0, code, "%v: %s", args, errOut)
				assert.True(t, json.Valid([]byte(out)), "%v --json is JSON: %.300q", args, out)
			}
			var procs []map[string]any
			c.json(&procs, "processes")
			assert.Contains(t, fmt.Sprint(procs), "node1:1:abc")
			var busy []map[string]any
			c.json(&busy, "busy")
			assert.Contains(t, fmt.Sprint(busy), "r1")
			var crons []map[string]any
			c.json(&crons, "cron", "list")
			assert.Contains(t, fmt.Sprint(crons), "c1")
			var queues []map[string]any
			c.json(&queues, "queues")
			assert.Contains(t, fmt.Sprint(queues), "default")
			var batches, workflows []map[string]any
			c.json(&batches, "batch", "list")
			require.Len(t, batches, 1, "the good batch, alone")
			assert.Equal(t, "b1", batches[0]["id"])
			c.json(&workflows, "workflow", "list")
			require.Len(t, workflows, 1, "the good workflow, alone")
			assert.Equal(t, "w1", workflows[0]["id"])
			var stats map[string]any
			c.json(&stats, "stats")
			assert.EqualValues(t, 1, stats["enqueued"], "the good queue's job is counted")
		})
	}
}

// redisZ is one sorted-set member.
func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// An id no batch or workflow can have (NewBatch and EnqueueWorkflow refuse a ':') names
// another one's key: exq batch show b1:pending read b1's pending hash as a batch, and exq
// workflow show w1:graph showed w1's graph as a workflow of its own. Each is not found now,
// saying why, and the dashboard answers 404.
func TestAnIDNoBatchOrWorkflowCanHaveIsNotFound(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	c.seedGood()
	for _, args := range [][]string{
		{"batch", "show", "b1:pending"}, {"batch", "show", "b1:jobs"}, {"workflow", "show", "w1:graph"}, {"workflow", "show", "w1:jobs"},
	} {
		code, out, errOut := c.run(args...)
		assert.Equal(t, 1, code, "%v: %s", args, out)
		assert.Contains(t, errOut, "not a", "%v", args)
		assert.Contains(t, errOut, "not found", "%v", args)
	}
}

// A key a whole answer depends on (the paused set, the published limits, the outbox report)
// of another type is an error naming that key and the type it should have: Redis's WRONGTYPE
// names neither. The other commands still answer.
func TestAWholeKeyOfAnotherTypeIsNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, kind string }{{"paused", "set"}, {"limits", "hash"}, {"outbox", "hash"}} {
		t.Run(tc.key, func(t *testing.T) {
			t.Parallel()
			c := newCLIEnv(t)
			c.seedGood()
			require.NoError(t, c.rdb.Set(context.Background(), c.ns+":"+tc.key, "x", 0).Err())
			args := []string{"queues"}
			if tc.key == "outbox" {
				args = []string{"outbox", "status"}
			}
			code, _, errOut := c.run(args...)
			assert.Equal(t, 1, code)
			assert.Contains(t, errOut, fmt.Sprintf("%s:%s is not a %s", c.ns, tc.key, tc.kind))
			code, _, errOut = c.run("batch", "show", "b1")
			assert.Equal(t, 0, code, errOut)
		})
	}
}
