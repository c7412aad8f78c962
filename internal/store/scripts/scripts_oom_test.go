package scripts

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// oomCase is one script called as exq calls it, with the keys it finds there.
type oomCase struct {
	name   string
	file   string // the script's .lua file
	script *redis.Script
	setup  func(ctx context.Context, c *redis.Client, k wire.Keys)
	keys   func(k wire.Keys) []string
	args   []any
	// argsFor, when set, gives the args in the case's namespace instead of args.
	argsFor func(k wire.Keys) []any
	// runs: the script does its work when Redis is out of memory; otherwise Redis refuses it
	// and it writes nothing.
	runs bool
	// refusedIn, for a script that answers a refusal per item instead of failing (the group
	// enqueue), reports whether its reply says so.
	refusedIn func(reply any) bool
}

const (
	job  = `{"class":"T","args":[],"queue":"q","jid":"j1"}`
	node = "n1"
	// keyedJob is a job of key "a" (docs/keys.md).
	keyedJob = `{"class":"T","args":[],"queue":"q","jid":"j1","exq_key":"a"}`
)

func oomCases() []oomCase {
	push := func(key func(wire.Keys) string, vals ...any) func(context.Context, *redis.Client, wire.Keys) {
		return func(ctx context.Context, c *redis.Client, k wire.Keys) { c.RPush(ctx, key(k), vals...) }
	}
	zadd := func(key func(wire.Keys) string, score float64, member string) func(context.Context, *redis.Client, wire.Keys) {
		return func(ctx context.Context, c *redis.Client, k wire.Keys) {
			c.ZAdd(ctx, key(k), redis.Z{Score: score, Member: member})
		}
	}
	backup := func(k wire.Keys) string { return k.Backup(node, "q") }
	return []oomCase{
		// Refused: what brings new data into Redis.
		{name: "enqueue", file: "enqueue.lua", script: Enqueue,
			keys: func(k wire.Keys) []string { return []string{k.Queues(), k.Queue("q")} }, args: []any{"q", job, "wake"}},
		{name: "unique enqueue", file: "enqueue.lua", script: Enqueue,
			keys: func(k wire.Keys) []string { return []string{k.Queues(), k.Queue("q"), k.Unique("tok")} },
			args: []any{"q", job, "wake", "j1", 60000}},
		{name: "enqueue at", file: "enqueue_at.lua", script: EnqueueAt,
			keys: func(k wire.Keys) []string { return []string{k.Schedule()} }, args: []any{"1e9", job, "wake"}},
		{name: "debounce, a new burst", file: "debounce.lua", script: Debounce,
			keys: func(k wire.Keys) []string { return []string{k.Schedule(), k.Debounce("k")} },
			args: []any{1000, 1000, "j1", `"j1"`, `{"class":"T","args":[],"queue":"q","jid":`, `,"created_at":1}`, "s", "wake", 60000}},
		{name: "debounce, joining a waiting burst", file: "debounce.lua", script: Debounce,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.ZAdd(ctx, k.Schedule(), redis.Z{Score: 9e9, Member: job})
				c.HSet(ctx, k.Debounce("k"), "jid", "j1", "jidq", `"j1"`, "first", "8999999999000000", "due", "9000000000000000", "doc", job, "last", "j1")
			},
			keys: func(k wire.Keys) []string { return []string{k.Schedule(), k.Debounce("k")} },
			args: []any{1000, 1000, "j2", `"j2"`, `{"class":"T","args":[],"queue":"q","jid":`, `,"created_at":1}`, "s", "wake", 60000}},
		{name: "enqueue all", file: "enqueue_all.lua", script: EnqueueAll,
			keys: func(k wire.Keys) []string { return []string{k.Schedule(), k.Queues(), k.Queue("q")} },
			args: []any{"wake", 1, 2, 0, "q", "1,;0,1e9;", job, job}},
		{name: "enqueue group", file: "enqueue_group.lua", script: EnqueueGroup,
			keys: func(k wire.Keys) []string { return []string{k.Schedule(), k.Queues(), k.Queue("q"), k.Unique("tok")} },
			args: []any{"wake", 1, 3, "q", 1, "", job, 0, "j1", 0, 0, "1e9", job, 0, "j2", 0, 1, "", job, 1, "j3", 60000},
			refusedIn: func(reply any) bool {
				r, _ := reply.([]any)
				for i := 0; i+1 < len(r); i += 2 {
					msg, _ := r[i+1].(string)
					if r[i] != int64(2) || !strings.Contains(msg, "OOM command not allowed") {
						return false
					}
				}
				return len(r) == 6
			}},
		{name: "push relayed", file: "push_relayed.lua", script: PushRelayed,
			keys: func(k wire.Keys) []string {
				return []string{k.Schedule(), k.Queues(), k.Queue("q"), k.Relayed("j1"), k.Relayed("j2"), k.Unique("tok")}
			},
			args: []any{"wake", 1, 2, 1, 60000, "q", 1, "", job, 0, "1e9", job, 2, "j2", 60000}},
		{name: "periodic enqueue", file: "cron_enqueue.lua", script: CronEnqueue,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.HSet(ctx, k.CronJob("p"), "status", "enabled")
			},
			keys: func(k wire.Keys) []string {
				return []string{k.CronJob("p"), k.CronEnqueued("p"), k.Queue("q"), k.Queues(), k.CronHistory("p"), k.CronClaim("c1")}
			},
			args: []any{"tick", 100, job, "q", "100", `{"jid":"j1"}`, 0, "wake", 60000, ""}},
		{name: "periodic save", file: "cron_save.lua", script: CronSave,
			keys: func(k wire.Keys) []string { return []string{k.CronJob("p"), k.CronJobs(), k.CronEnqueued("p")} },
			args: []any{"cron_job:p", "upsert", "enabled", "", 100, "name", "p"}},
		{name: "periodic status", file: "cron_status.lua", script: CronStatus,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.HSet(ctx, k.CronJob("p"), "status", "enabled")
			},
			keys: func(k wire.Keys) []string { return []string{k.CronJob("p")} }, args: []any{"disabled"}},
		{name: "stats", file: "stats_flush.lua", script: StatsFlush,
			keys: func(k wire.Keys) []string { return []string{k.StatFlush(node), k.Stat("processed")} }, args: []any{"b1", 3600, "c", 0, 5}},
		{name: "join", file: "beat.lua", script: Beat,
			keys: func(k wire.Keys) []string {
				return []string{k.Heartbeats(), k.HeartbeatDeadlines(), k.HeartbeatEpochs(), k.HeartbeatResumed()}
			},
			args: []any{node, 1, "join", "tok", 0, 0.5}},
		{name: "batch create", file: "batch_add.lua", script: BatchAdd,
			keys: func(k wire.Keys) []string {
				return []string{k.Batch("b"), k.BatchJobs("b"), k.BatchPending("b"), k.BatchDead("b"),
					k.Batches(), k.Queues(), k.Queue("q")}
			},
			args: []any{"b", "create", "tok", 100, 3600, "wake", 1, 1, 1, "", "", "q", "queues", "", "j1", 1, job}},
		{name: "foreign mark", file: "foreign_mark.lua", script: ForeignMark,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.HSet(ctx, k.Batch("b"), "fresh", 1)
				c.Expire(ctx, k.Batch("b"), time.Hour)
			},
			keys: func(k wire.Keys) []string { return []string{k.Batch("b"), k.BatchForeign("b")} }, args: []any{"j1", "sidekiq-1", 1000}},
		{name: "workflow create", file: "workflow_create.lua", script: WorkflowCreate,
			keys: func(k wire.Keys) []string {
				return []string{k.Workflow("w"), k.WorkflowGraph("w"), k.WorkflowJobs("w"), k.Workflows(), k.Queues(), k.Queue("q")}
			},
			args: []any{"w", "tok", 100, 3600, "wake", 1, 1, 1, 1, 1, "q", "total", 2, "s:b", "waiting", "b", job, 1, job}},

		// Runs: what the nodes do with the jobs already in Redis.
		{name: "beat", file: "beat.lua", script: Beat, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.ZAdd(ctx, k.Leases("q"), redis.Z{Score: 1e12, Member: node + ":1"})
				c.ZAdd(ctx, k.Heartbeats(), redis.Z{Score: 5, Member: node})
				c.HSet(ctx, k.HeartbeatEpochs(), node, "tok")
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Heartbeats(), k.HeartbeatDeadlines(), k.HeartbeatEpochs(), k.HeartbeatResumed(), k.Leases("q")}
			}, args: []any{node, 1, "beat", "tok", 5, 0.5, 1, node + ":1"}}, // its previous call long ago: it records a stall too
		{name: "fetch", file: "fetch.lua", script: Fetch, runs: true, setup: push(func(k wire.Keys) string { return k.Queue("q") }, job),
			keys: func(k wire.Keys) []string {
				return []string{k.Paused(), k.Heartbeats(), k.HeartbeatEpochs(), k.BackupQueues(node), k.Queue("q"), backup(k)}
			}, args: []any{node, "", "q", 1}},
		{name: "limited fetch, unlimited queue first", file: "fetch_limited.lua", script: FetchLimited, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.RPush(ctx, k.Queue("a"), job)
				c.RPush(ctx, k.Queue("b"), job)
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Paused(), k.Heartbeats(), k.HeartbeatEpochs(), k.BackupQueues(node),
					k.Queue("a"), k.Backup(node, "a"), k.Leases("a"), k.Starts("a"), k.RatePace("a"), k.LeaseWaiters("a"),
					k.Queue("b"), k.Backup(node, "b"), k.Leases("b"), k.Starts("b"), k.RatePace("b"), k.LeaseWaiters("b")}
			},
			args: []any{node, 5, 1, "", "a", 1, 0, 0, 0, 1, 0, "b", 1, 2, 10, 1, 2, 0}},
		{name: "ack", file: "ack.lua", script: Ack, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.RPush(ctx, backup(k), job)
				c.Set(ctx, k.Unique("tok"), "j1", 0)
			},
			keys: func(k wire.Keys) []string {
				return []string{backup(k), k.Unique("tok"), k.Heartbeats(), k.HeartbeatEpochs()}
			},
			args: []any{job, "j1", node, ""}},
		{name: "ack batch", file: "ack_batch.lua", script: AckBatch, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.RPush(ctx, backup(k), job)
				c.ZAdd(ctx, k.Leases("q"), redis.Z{Score: 1e12, Member: node + ":1"})
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Heartbeats(), k.HeartbeatEpochs(), backup(k), k.Leases("q")}
			},
			args: []any{node, "a", 1, "", 1, job, "l", 2, "", 1, node + ":1"}},
		{name: "retry", file: "retry.lua", script: Retry, runs: true, setup: push(backup, job),
			keys: func(k wire.Keys) []string { return []string{k.Retry(), backup(k), k.Heartbeats(), k.HeartbeatEpochs()} },
			args: []any{"1e9", job + " ", job, "wake", node, ""}},
		{name: "dead", file: "dead.lua", script: Dead, runs: true, setup: push(backup, job),
			keys: func(k wire.Keys) []string { return []string{k.Dead(), backup(k), k.Heartbeats(), k.HeartbeatEpochs()} },
			args: []any{"1e9", job + " ", job, 0, 100, node, ""}},
		{name: "requeue", file: "requeue.lua", script: Requeue, runs: true, setup: push(backup, job),
			keys: func(k wire.Keys) []string { return []string{backup(k), k.Queue("q")} }, args: []any{"wake", "q", "x:", job}},
		{name: "put back", file: "put_back.lua", script: PutBack, runs: true, setup: push(backup, job),
			keys: func(k wire.Keys) []string { return []string{backup(k), k.Queue("q")} }, args: []any{"wake", "q", job, "x:"}},
		{name: "recover", file: "recover.lua", script: Recover, runs: true, setup: push(backup, job),
			keys: func(k wire.Keys) []string { return []string{backup(k), k.Queue("q")} }, args: []any{100, "q", "x:"}},
		{name: "rescue", file: "rescue.lua", script: Rescue, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.RPush(ctx, backup(k), job)
				c.ZAdd(ctx, k.Heartbeats(), redis.Z{Score: 5, Member: node})
			},
			keys: func(k wire.Keys) []string { return []string{backup(k), k.Queue("q"), k.Heartbeats()} }, args: []any{node, 5, 100, "wake", "q", "x:"}},
		{name: "rescue of a keyed job", file: "rescue.lua", script: Rescue, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.RPush(ctx, backup(k), keyedJob)
				c.ZAdd(ctx, k.Heartbeats(), redis.Z{Score: 5, Member: node})
			},
			keys:    func(k wire.Keys) []string { return []string{backup(k), k.Queue("q"), k.Heartbeats()} },
			argsFor: func(k wire.Keys) []any { return []any{node, 5, 100, "wake", "q", k.Prefix} }},
		{name: "keyed enqueue", file: "enqueue_keyed.lua", script: EnqueueKeyed,
			keys:    func(k wire.Keys) []string { return []string{k.Queues(), k.KeyJobs("q", "a"), k.KeyDelayed("q")} },
			argsFor: func(k wire.Keys) []any { return []any{"q", keyedJob, "wake", "", 0, "a", k.Prefix, ""} }},
		{name: "keyed enqueue all", file: "enqueue_keyed_all.lua", script: EnqueueKeyedAll,
			keys:    func(k wire.Keys) []string { return []string{k.Queues()} },
			argsFor: func(k wire.Keys) []any { return []any{"wake", k.Prefix, "q", "a", keyedJob, ""} }},
		{name: "keyed fetch", file: "fetch_keyed.lua", script: FetchKeyed, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.RPush(ctx, k.KeyJobs("q", "a"), keyedJob)
				c.ZAdd(ctx, k.KeyReady("q"), redis.Z{Score: 0, Member: "a"})
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Paused(), k.Heartbeats(), k.HeartbeatEpochs(), k.BackupQueues(node),
					k.Queue("q"), backup(k), k.KeyReady("q"), k.KeyBlocked("q"), k.KeyDelayed("q")}
			},
			argsFor: func(k wire.Keys) []any { return []any{node, 60, "", k.Prefix, 0, "q", 1, 1, 0, 0, 1, 0} }},
		{name: "keyed release", file: "release_keys.lua", script: ReleaseKeys, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.RPush(ctx, k.KeyJobs("q", "a"), keyedJob)
				c.ZAdd(ctx, k.KeyLeases("q", "a"), redis.Z{Score: 1e9, Member: node + ":1"})
			},
			keys:    func(k wire.Keys) []string { return []string{k.KeyLeases("q", "a")} },
			argsFor: func(k wire.Keys) []any { return []any{k.Prefix, "wake", "q", "a", node + ":1"} }},
		{name: "keyed retry", file: "retry_keyed.lua", script: RetryKeyed, runs: true, setup: push(backup, keyedJob),
			keys: func(k wire.Keys) []string {
				return []string{k.KeyDelayed("q"), backup(k), k.Heartbeats(), k.HeartbeatEpochs(), k.KeyHeld("q"), k.KeyReady("q"), k.KeyBlocked("q")}
			},
			args: []any{"1e9", keyedJob + " ", keyedJob, "", node, "", "a", "j1", "1"}},
		{name: "keyed kill from the key's list", file: "kill_keyed.lua", script: KillKeyed, runs: true,
			setup: push(func(k wire.Keys) string { return k.KeyJobs("q", "a") }, keyedJob),
			keys: func(k wire.Keys) []string {
				return []string{k.KeyJobs("q", "a"), k.KeyDelayed("q"), k.Dead(), k.KeyHeld("q")}
			},
			argsFor: func(k wire.Keys) []any { return []any{"1e9", 0, 100, keyedJob, "j1", "q", "a", k.Prefix, "wake"} }},
		{name: "keyed kill of a held sequence's retry", file: "kill_keyed.lua", script: KillKeyed, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.ZAdd(ctx, k.KeyDelayed("q"), redis.Z{Score: 1e9, Member: keyedJob})
				c.HSet(ctx, k.KeyHeld("q"), "a", "j1")
				c.RPush(ctx, k.KeyJobs("q", "a"), keyedJob+" ")
			},
			keys: func(k wire.Keys) []string {
				return []string{k.KeyJobs("q", "a"), k.KeyDelayed("q"), k.Dead(), k.KeyHeld("q")}
			},
			argsFor: func(k wire.Keys) []any { return []any{"1e9", 0, 100, keyedJob, "j1", "q", "a", k.Prefix, "wake"} }},
		// Pausing a key adds it to the paused set (SADD first): refused like the queue's pause.
		{name: "keyed pause", file: "key_pause.lua", script: KeyPause, setup: zadd(func(k wire.Keys) string { return k.KeyReady("q") }, 0, "a"),
			keys: func(k wire.Keys) []string {
				return []string{k.KeyPaused("q"), k.KeyReady("q"), k.KeyBlocked("q"), k.KeyJobs("q", "a")}
			},
			argsFor: func(k wire.Keys) []any { return []any{"1", "q", "a", k.Prefix, "wake"} }},
		{name: "bury", file: "bury.lua", script: Bury, runs: true, setup: zadd(wire.Keys.Heartbeats, 5, node),
			keys: func(k wire.Keys) []string {
				return []string{k.Heartbeats(), k.Workers(node), k.HeartbeatDeadlines(), k.HeartbeatEpochs(), k.BackupQueues(node)}
			}, args: []any{node, 5}},
		{name: "sweep a gone node", file: "sweep_node.lua", script: SweepNode, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.HSet(ctx, k.HeartbeatEpochs(), node, "tok")
				c.SAdd(ctx, k.BackupQueues(node), "q")
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Heartbeats(), k.HeartbeatEpochs(), k.BackupQueues(node), backup(k)}
			}, args: []any{node, "q"}},
		{name: "trim an index", file: "trim_index.lua", script: TrimIndex, runs: true, setup: zadd(wire.Keys.Batches, 5, "b1"),
			keys: func(k wire.Keys) []string { return []string{k.Batches(), k.Batch("b1")} }, args: []any{"b1"}},
		// Its previous call long ago: it sees a stall, whose record Redis refuses, and judges by it.
		{name: "stale", file: "stale.lua", script: Stale, runs: true, setup: zadd(wire.Keys.HeartbeatDeadlines, 5, node),
			keys: func(k wire.Keys) []string {
				return []string{k.Heartbeats(), k.HeartbeatDeadlines(), k.HeartbeatResumed()}
			},
			args: []any{60, 5, 0.5}},
		{name: "schedule", file: "schedule.lua", script: Schedule, runs: true, setup: zadd(wire.Keys.Schedule, 5, job),
			keys: func(k wire.Keys) []string { return []string{k.Schedule(), k.Queues(), k.Dead(), k.Queue("q")} },
			args: []any{"1e9", "wake", "poison-", "Poison", "Err", 1, "q", job}},
		{name: "requeue from a set", file: "requeue_set.lua", script: RequeueSet, runs: true, setup: zadd(wire.Keys.Dead, 5, job),
			keys: func(k wire.Keys) []string { return []string{k.Dead(), k.Queues(), k.Queue("q")} }, args: []any{"wake", 1, "q", job}},
		{name: "kill", file: "kill.lua", script: Kill, runs: true, setup: zadd(wire.Keys.Retry, 5, job),
			keys: func(k wire.Keys) []string { return []string{k.Retry(), k.Dead()} }, args: []any{"1e9", 0, 100, job}},
		{name: "remove jobs", file: "remove_jobs.lua", script: RemoveJobs, runs: true, setup: push(func(k wire.Keys) string { return k.Queue("q") }, job),
			keys: func(k wire.Keys) []string { return []string{k.Queue("q")} }, args: []any{"list", 0, "j1", job}},
		{name: "unlock", file: "unlock.lua", script: Unlock, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) { c.Set(ctx, k.Unique("tok"), "j1", 0) },
			keys:  func(k wire.Keys) []string { return []string{k.Unique("tok")} }, args: []any{"j1"}},
		{name: "batch job succeeded", file: "batch_settle.lua", script: BatchSettle, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.HSet(ctx, k.Batch("b"), "queues", "q", "cb:success", job, "cbq:success", "q", "fresh", 1)
				c.HSet(ctx, k.BatchPending("b"), "j1", "0")
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Batch("b"), k.BatchPending("b"), k.BatchDead("b"), k.BatchJobs("b"), k.Queues(), k.Queue("q")}
			},
			args: []any{100, "wake", "q", "", 0, 1, "q", "j1", "succeeded"}},
		{name: "batch job died", file: "batch_settle.lua", script: BatchSettle, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.HSet(ctx, k.Batch("b"), "queues", "q", "cb:death", job, "cbq:death", "q", "fresh", 2)
				c.HSet(ctx, k.BatchPending("b"), "j1", "0", "j2", "0")
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Batch("b"), k.BatchPending("b"), k.BatchDead("b"), k.BatchJobs("b"), k.Queues(), k.Queue("q")}
			},
			args: []any{100, "wake", "q", "", 0, 1, "q", "j1", "died"}},
		{name: "batch job failed", file: "batch_settle.lua", script: BatchSettle, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.HSet(ctx, k.Batch("b"), "queues", "", "fresh", 2)
				c.HSet(ctx, k.BatchPending("b"), "j1", "0", "j2", "0")
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Batch("b"), k.BatchPending("b"), k.BatchDead("b"), k.BatchJobs("b"), k.Queues()}
			},
			args: []any{100, "wake", "", "", 0, 0, "j1", "failed"}},
		{name: "group of outcomes", file: "settle_group.lua", script: SettleGroup, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.HSet(ctx, k.Batch("b"), "queues", "", "fresh", 2)
				c.HSet(ctx, k.BatchPending("b"), "j1", "0", "j2", "0")
				c.HSet(ctx, k.Workflow("w"), "queues", "", "total", 1)
				c.HSet(ctx, k.WorkflowGraph("w"), "s:a", "queued")
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Batch("b"), k.BatchPending("b"), k.BatchDead("b"), k.BatchJobs("b"), k.Queues(),
					k.Workflow("w"), k.WorkflowGraph("w"), k.WorkflowJobs("w"), k.Queues()}
			},
			args: []any{2, "b", 5, 8, 100, "wake", "", "", 0, 0, "j1", "failed", "w", 4, 5, "a", "succeeded", 100, "wake", ""}},
		{name: "ack with the transitions of a batch and a workflow", file: "ack_settle.lua", script: AckSettle, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.RPush(ctx, backup(k), job)
				c.HSet(ctx, k.Batch("b"), "queues", "", "fresh", 2)
				c.HSet(ctx, k.BatchPending("b"), "j1", "0", "j2", "0")
				c.HSet(ctx, k.Workflow("w"), "queues", "q", "total", 2)
				c.HSet(ctx, k.WorkflowGraph("w"), "s:a", "queued", "c:a", "b", "s:b", "waiting", "w:b", 1, "q:b", "q")
				c.HSet(ctx, k.WorkflowJobs("w"), "b", job)
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Heartbeats(), k.HeartbeatEpochs(),
					k.Batch("b"), k.BatchPending("b"), k.BatchDead("b"), k.BatchJobs("b"), k.Queues(),
					k.Workflow("w"), k.WorkflowGraph("w"), k.WorkflowJobs("w"), k.Queues(), k.Queue("q"), backup(k)}
			},
			args: []any{node, 2, "b", 5, 8, 100, "wake", "", "", 0, 0, "j1", "succeeded",
				"m", 5, 6, 100, "wake", "q", 1, "a", "q", "f", 13, "", 1, 1, 2, job}},
		{name: "workflow job succeeded", file: "workflow_settle.lua", script: WorkflowSettle, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.HSet(ctx, k.Workflow("w"), "queues", "q", "total", 2)
				c.HSet(ctx, k.WorkflowGraph("w"), "s:a", "queued", "c:a", "b", "s:b", "waiting", "w:b", 1, "q:b", "q")
				c.HSet(ctx, k.WorkflowJobs("w"), "b", job)
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Workflow("w"), k.WorkflowGraph("w"), k.WorkflowJobs("w"), k.Queues(), k.Queue("q")}
			},
			args: []any{"a", "succeeded", 100, "wake", "q", "q"}},
		{name: "signals done", file: "signals_done.lua", script: SignalsDone, runs: true,
			setup: push(func(k wire.Keys) string { return k.Signals(node) }, "TSTP"),
			keys:  func(k wire.Keys) []string { return []string{k.Signals(node)} }, args: []any{"TSTP"}},
		{name: "prune a node whose hash expired", file: "prune.lua", script: Prune, runs: true,
			setup: func(ctx context.Context, c *redis.Client, k wire.Keys) {
				c.SAdd(ctx, k.Processes(), node)
				c.HSet(ctx, k.Work(node), "tid", "{}")
			},
			keys: func(k wire.Keys) []string {
				return []string{k.Processes(), k.Node(node), k.Workers(node), k.Work(node)}
			},
			args: []any{node}},
	}
}

// Out of memory, every script either does its work or is refused and writes nothing, on the
// side scripts.go says: one case per script and way it is called, on a real redis-server
// filled to its maxmemory.
func TestOutOfMemoryEveryScriptRunsOrIsRefusedWhole(t *testing.T) {
	srv := testutil.MemoryLimited(t, 8)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	ctx := context.Background()
	cases := oomCases()
	ns := make([]wire.Keys, len(cases))
	for i, tc := range cases {
		ns[i] = wire.NewKeys("oom" + strconv.Itoa(i))
		if tc.setup != nil {
			tc.setup(ctx, c, ns[i])
		}
	}
	snapshot := func(k wire.Keys) map[string]string {
		keys, err := c.Keys(ctx, k.Prefix+"*").Result()
		require.NoError(t, err)
		out := map[string]string{}
		for _, key := range keys {
			out[key] = c.Dump(ctx, key).Val()
		}
		return out
	}
	before := make([]map[string]string, len(cases))
	for i := range cases {
		before[i] = snapshot(ns[i])
	}
	srv.OutOfMemory(t)
	covered := map[string]bool{}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			covered[tc.file] = true
			args := tc.args
			if tc.argsFor != nil {
				args = tc.argsFor(ns[i])
			}
			reply, err := tc.script.Run(ctx, c, tc.keys(ns[i]), args...).Result()
			after := snapshot(ns[i])
			switch {
			case tc.runs:
				require.NoError(t, err, "runs out of memory")
				assert.NotEqual(t, before[i], after, "it did its work")
			case tc.refusedIn != nil:
				require.NoError(t, err)
				assert.True(t, tc.refusedIn(reply), "every item refused: %v", reply)
				assert.Equal(t, before[i], after, "nothing written")
			default:
				require.Error(t, err, "refused out of memory")
				assert.Contains(t, err.Error(), "OOM command not allowed")
				assert.Equal(t, before[i], after, "nothing written")
			}
		})
	}
	files, err := filepath.Glob("*.lua")
	require.NoError(t, err)
	var missing []string
	for _, f := range files {
		if !covered[f] && f != "push.lua" && f != "keyed.lua" && f != "leases.lua" { // preludes (withPush, withKeyed, withLeases)
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "every script has a case")
	_, err = os.Stat("scripts.go")
	require.NoError(t, err, "the test runs in the scripts' folder")
}

// Fetch pops a job and then pushes it onto the backup list (RPOP, LPUSH): when that list is
// not a list (a key someone else wrote), the fetch fails before it pops anything.
func TestFetchIntoABackupListThatIsNotAListLeavesTheJobInItsQueue(t *testing.T) {
	c, ns := testutil.Redis(t)
	ctx := context.Background()
	k := wire.NewKeys(ns)
	for _, tc := range []struct {
		name   string
		script *redis.Script
		keys   []string
		args   []any
	}{
		{"fetch", Fetch, []string{k.Paused(), k.Heartbeats(), k.HeartbeatEpochs(), k.BackupQueues(node), k.Queue("q"), k.Backup(node, "q")},
			[]any{node, "", "q", 2}},
		{"limited fetch", FetchLimited, []string{k.Paused(), k.Heartbeats(), k.HeartbeatEpochs(), k.BackupQueues(node),
			k.Queue("q"), k.Backup(node, "q"), k.Leases("q"), k.Starts("q"), k.RatePace("q"), k.LeaseWaiters("q")},
			[]any{node, 5, 1, "", "q", 2, 3, 0, 0, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, c.Del(ctx, k.Queue("q"), k.Leases("q")).Err())
			require.NoError(t, c.RPush(ctx, k.Queue("q"), "newer", job).Err())
			require.NoError(t, c.Set(ctx, k.Backup(node, "q"), "not a list", 0).Err())
			err := tc.script.Run(ctx, c, tc.keys, tc.args...).Err()
			require.Error(t, err)
			assert.Contains(t, err.Error(), "WRONGTYPE")
			assert.Equal(t, []string{"newer", job}, c.LRange(ctx, k.Queue("q"), 0, -1).Val(), "the job is still in its queue")
			assert.Equal(t, "not a list", c.Get(ctx, k.Backup(node, "q")).Val())
		})
	}
}

// Out of memory, Fetch takes a queue's jobs off with LTRIM before it pushes them onto the
// backup list (a removal first, so Redis lets it run; an addition is refused only as a
// script's first write): every job asked for moves, from every queue, in order.
func TestFetchMovesEveryJobAskedForWhenRedisIsOutOfMemory(t *testing.T) {
	srv := testutil.MemoryLimited(t, 8)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	ctx := context.Background()
	k := wire.NewKeys("oomfetch")
	require.NoError(t, c.RPush(ctx, k.Queue("a"), "a3", "a2", "a1").Err())
	require.NoError(t, c.RPush(ctx, k.Queue("b"), "b2", "b1").Err())
	srv.OutOfMemory(t)
	reply, err := RunFetch(ctx, c,
		[]string{k.Paused(), k.Heartbeats(), k.HeartbeatEpochs(), k.BackupQueues(node),
			k.Queue("a"), k.Backup(node, "a"), k.Queue("b"), k.Backup(node, "b")},
		node, "", "a", 3, "b", 5)
	require.NoError(t, err)
	assert.Equal(t, []string{"0", "3", "a1", "a2", "a3", "0", "2", "b1", "b2"}, reply)
	assert.Equal(t, []string{"a3", "a2", "a1"}, c.LRange(ctx, k.Backup(node, "a"), 0, -1).Val())
	assert.Equal(t, []string{"b2", "b1"}, c.LRange(ctx, k.Backup(node, "b"), 0, -1).Val())
	assert.Zero(t, c.Exists(ctx, k.Queue("a"), k.Queue("b")).Val())
	assert.ElementsMatch(t, []string{"a", "b"}, c.SMembers(ctx, k.BackupQueues(node)).Val())
}

// RunFetch sends the script's text when the server does not have it (a restart, SCRIPT FLUSH),
// as Script.Run does, and reads the flat reply either way. (A server of its own: the flush
// would make other packages' pipelined EVALSHAs fail on a shared one.)
func TestRunFetchLoadsTheScriptWhenTheServerLacksIt(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	ctx := context.Background()
	k := wire.NewKeys("runfetch")
	keys := []string{k.Paused(), k.Heartbeats(), k.HeartbeatEpochs(), k.BackupQueues(node), k.Queue("q"), k.Backup(node, "q")}
	require.NoError(t, c.RPush(ctx, k.Queue("q"), "j2", "j1").Err())
	require.NoError(t, c.ScriptFlush(ctx).Err())
	reply, err := RunFetch(ctx, c, keys, node, "", "q", 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"0", "1", "j1"}, reply)
	loaded, err := c.ScriptExists(ctx, Fetch.Hash()).Result()
	require.NoError(t, err)
	assert.Equal(t, []bool{true}, loaded, "EVAL cached it")
	reply, err = RunFetch(ctx, c, keys, node, "", "q", 5)
	require.NoError(t, err)
	assert.Equal(t, []string{"1", "1", "j2"}, reply)
}
