package reliability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

func quietLogger() *slog.Logger {
	if os.Getenv("EXQ_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startNode starts an in-process node, stopped when the test ends.
func startNode(t *testing.T, o exq.Options) *exq.Exq {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	e, err := exq.Start(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return e
}

// client returns a go-redis client for addr, closed when the test ends.
func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// counter is a worker that counts runs by jid.
type counter struct {
	mu   sync.Mutex
	runs map[string]int
	fn   func(ctx context.Context, job *exq.Job) error
}

func newCounter(fn func(ctx context.Context, job *exq.Job) error) *counter {
	return &counter{runs: map[string]int{}, fn: fn}
}

func (c *counter) Perform(ctx context.Context, job *exq.Job) error {
	if c.fn != nil {
		if err := c.fn(ctx, job); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.runs[job.JID]++
	c.mu.Unlock()
	return nil
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.runs {
		n += r
	}
	return n
}

func (c *counter) ran(jid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[jid] > 0
}

// snapshot returns the successful runs of every jid.
func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.runs))
	for jid, n := range c.runs {
		out[jid] = n
	}
	return out
}

// locateJobs says where each of jids is in namespace ns: in a queue, in which node's backup list
// (that node live or dead by its last beat in the heartbeats set, judged by window), in schedule,
// retry or dead, or nowhere. It returns one line per place with its count, then up to 20 jids
// with their places, for a test's failure message.
func locateJobs(ctx context.Context, rdb redis.UniversalClient, ns string, jids []string, window time.Duration) string {
	if len(jids) == 0 {
		return "no job is missing"
	}
	wanted := make(map[string]bool, len(jids))
	for _, jid := range jids {
		wanted[jid] = true
	}
	places := map[string][]string{} // jid → every place it was seen
	note := func(doc, place string) {
		var j struct {
			JID string `json:"jid"`
		}
		if json.Unmarshal([]byte(doc), &j) == nil && wanted[j.JID] {
			places[j.JID] = append(places[j.JID], place)
		}
	}
	var errs []string
	now := time.Now()
	if t, err := rdb.Time(ctx).Result(); err == nil {
		now = t // heartbeats are scored with the Redis server's clock
	} else {
		errs = append(errs, "TIME: "+err.Error())
	}
	beats := map[string]float64{}
	if zs, err := rdb.ZRangeWithScores(ctx, ns+":heartbeats", 0, -1).Result(); err == nil {
		for _, z := range zs {
			beats[z.Member.(string)] = z.Score
		}
	} else {
		errs = append(errs, "heartbeats: "+err.Error())
	}
	nodeState := func(node string) string {
		score, ok := beats[node]
		if !ok {
			for member, s := range beats { // a member that carries more than the node's id
				if strings.HasPrefix(member, node) {
					score, ok = s, true
					break
				}
			}
		}
		if !ok {
			return "dead (no heartbeat)"
		}
		age := now.Sub(time.Unix(0, int64(score*1e9))).Round(time.Millisecond)
		if age > window {
			return fmt.Sprintf("dead (last beat %s ago, window %s)", age, window)
		}
		return fmt.Sprintf("live (last beat %s ago)", age)
	}
	var keys []string
	iter := rdb.Scan(ctx, 0, ns+":queue:*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		errs = append(errs, "SCAN: "+err.Error())
	}
	sort.Strings(keys)
	for _, key := range keys {
		name := strings.TrimPrefix(key, ns+":queue:")
		place := "in queue " + name
		if rest, ok := strings.CutPrefix(name, "backup::"); ok {
			node, queue := rest, "?"
			if i := strings.LastIndex(rest, "::"); i >= 0 {
				node, queue = rest[:i], rest[i+2:]
			}
			place = fmt.Sprintf("in the backup list of node %s (queue %s), %s", node, queue, nodeState(node))
		}
		docs, err := rdb.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			errs = append(errs, key+": "+err.Error())
		}
		for _, d := range docs {
			note(d, place)
		}
	}
	for _, set := range []string{"schedule", "retry", "dead"} {
		docs, err := rdb.ZRange(ctx, ns+":"+set, 0, -1).Result()
		if err != nil {
			errs = append(errs, set+": "+err.Error())
		}
		for _, d := range docs {
			note(d, "in "+set)
		}
	}
	count := map[string]int{}
	for _, jid := range jids {
		ps := places[jid]
		if len(ps) == 0 {
			ps = []string{"nowhere (in no queue, backup list or set)"}
			places[jid] = ps
		}
		count[strings.Join(ps, " and ")]++
	}
	summary := make([]string, 0, len(count))
	for place, n := range count {
		summary = append(summary, fmt.Sprintf("  %d %s", n, place))
	}
	sort.Strings(summary)
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs missing:\n%s\n", len(jids), strings.Join(summary, "\n"))
	for i, jid := range jids {
		if i == 20 {
			fmt.Fprintf(&b, "  … and %d more\n", len(jids)-20)
			break
		}
		fmt.Fprintf(&b, "  %s: %s\n", jid, strings.Join(places[jid], " and "))
	}
	if len(errs) > 0 {
		fmt.Fprintf(&b, "  (errors while looking: %s)\n", strings.Join(errs, "; "))
	}
	return b.String()
}

// The chaos and outage tests rely on locateJobs to say where lost jobs are; it must tell every
// place apart.
func TestLocateJobsSaysWhereEachJobIs(t *testing.T) {
	rdb, ns := testutil.Redis(t)
	ctx := context.Background()
	doc := func(jid string) string { return `{"class":"W","queue":"q","args":[],"jid":"` + jid + `"}` }
	now, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	beat := func(at time.Time) float64 { return float64(at.UnixNano()) / 1e9 }
	require.NoError(t, rdb.ZAdd(ctx, ns+":heartbeats",
		redis.Z{Score: beat(now), Member: "live-node"}, redis.Z{Score: beat(now.Add(-time.Minute)), Member: "dead-node"}).Err())
	require.NoError(t, rdb.RPush(ctx, ns+":queue:q", doc("in-queue"), doc("other")).Err())
	require.NoError(t, rdb.RPush(ctx, ns+":queue:backup::live-node::q", doc("at-live")).Err())
	require.NoError(t, rdb.RPush(ctx, ns+":queue:backup::dead-node::q", doc("at-dead")).Err())
	require.NoError(t, rdb.RPush(ctx, ns+":queue:backup::gone-node::q", doc("at-gone")).Err())
	for _, set := range []string{"schedule", "retry", "dead"} {
		require.NoError(t, rdb.ZAdd(ctx, ns+":"+set, redis.Z{Score: 1, Member: doc("in-" + set)}).Err())
	}
	got := locateJobs(ctx, rdb, ns, []string{"in-queue", "at-live", "at-dead", "at-gone", "in-schedule", "in-retry", "in-dead", "lost"}, 20*time.Second)
	for _, want := range []string{
		"8 jobs missing:",
		"in-queue: in queue q\n",
		"at-live: in the backup list of node live-node (queue q), live (last beat",
		"at-dead: in the backup list of node dead-node (queue q), dead (last beat 1m0",
		"at-gone: in the backup list of node gone-node (queue q), dead (no heartbeat)\n",
		"in-schedule: in schedule\n",
		"in-retry: in retry\n",
		"in-dead: in dead\n",
		"lost: nowhere",
		"  1 nowhere",
	} {
		assert.Contains(t, got, want)
	}
	assert.NotContains(t, got, "other", "only the jobs asked about")
	assert.Equal(t, "no job is missing", locateJobs(ctx, rdb, ns, nil, time.Second))
}
