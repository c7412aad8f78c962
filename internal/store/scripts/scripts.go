// Package scripts holds exq's Lua scripts. Each .lua file starts with a comment naming its
// KEYS, ARGV and reply. They run with EVALSHA and fall back to EVAL on NOSCRIPT (go-redis
// Script.Run), so a Redis restart or SCRIPT FLUSH costs one extra round trip, never an error.
//
// # Out of memory
//
// When Redis is out of memory (maxmemory reached under noeviction), what brings new data into
// Redis is refused and what the running nodes do with the jobs already there goes on: the
// enqueue scripts (Enqueue, EnqueueAll, EnqueueGroup, EnqueueAt, Debounce, CronEnqueue, PushRelayed,
// BatchAdd, WorkflowCreate), ForeignMark, CronSave, CronStatus, StatsFlush and a node's join (Beat with
// "join") are refused and write nothing; every other script runs (beats, fetches,
// acknowledgements, retries, rescues, the scheduler's moves, removals, and the outcomes of
// batch and workflow jobs, BatchSettle and WorkflowSettle, which a node writes before it
// acknowledges the job). So a full Redis makes producers fail clearly while the queues drain,
// which is what frees memory, and no live node is taken for dead for want of a beat.
//
// The scripts carry no shebang ("#!lua flags=allow-oom"): Redis 6 cannot compile one, and
// Redis 7 treats a script without one by the rule Redis 6 has: out of memory when the script
// starts, its first write that may need memory (SET, LPUSH, ZADD… but not DEL, LREM, RPOP,
// ZREM…) is refused, and once it has written, nothing more is. So a script's first write
// decides: the ones that must run start with a removal (Beat its deadline, Fetch LTRIM then
// LPUSH), the refused ones with an addition. scripts_oom_test.go pins every script's side.
package scripts

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed enqueue.lua
	enqueueSrc string
	// pushSrc is the prelude of the scripts that write jobs (withPush).
	//go:embed push.lua
	pushSrc string
	//go:embed enqueue_all.lua
	enqueueAllSrc string
	//go:embed enqueue_group.lua
	enqueueGroupSrc string
	//go:embed fetch.lua
	fetchSrc string
	//go:embed ack_batch.lua
	ackBatchSrc string
	//go:embed fetch_limited.lua
	fetchLimitedSrc string
	//go:embed cron_save.lua
	cronSaveSrc string
	//go:embed cron_enqueue.lua
	cronEnqueueSrc string
	//go:embed cron_status.lua
	cronStatusSrc string
	//go:embed retry.lua
	retrySrc string
	//go:embed dead.lua
	deadSrc string
	//go:embed requeue.lua
	requeueSrc string
	//go:embed put_back.lua
	putBackSrc string
	//go:embed recover.lua
	recoverSrc string
	//go:embed schedule.lua
	scheduleSrc string
	//go:embed enqueue_at.lua
	enqueueAtSrc string
	//go:embed ack.lua
	ackSrc string
	//go:embed unlock.lua
	unlockSrc string
	//go:embed remove_jobs.lua
	removeJobsSrc string
	//go:embed requeue_set.lua
	requeueSetSrc string
	//go:embed kill.lua
	killSrc string
	//go:embed beat.lua
	beatSrc string
	//go:embed stale.lua
	staleSrc string
	//go:embed rescue.lua
	rescueSrc string
	//go:embed bury.lua
	burySrc string
	//go:embed sweep_node.lua
	sweepNodeSrc string
	//go:embed trim_index.lua
	trimIndexSrc string
	//go:embed signals_done.lua
	signalsDoneSrc string
	//go:embed prune.lua
	pruneSrc string
	//go:embed stats_flush.lua
	statsFlushSrc string
	//go:embed push_relayed.lua
	pushRelayedSrc string
	//go:embed batch_add.lua
	batchAddSrc string
	//go:embed batch_settle.lua
	batchSettleSrc string
	//go:embed foreign_mark.lua
	foreignMarkSrc string
	//go:embed workflow_create.lua
	workflowCreateSrc string
	//go:embed workflow_settle.lua
	workflowSettleSrc string
	//go:embed settle_group.lua
	settleGroupSrc string
	//go:embed ack_settle.lua
	ackSettleSrc string
	// leasesSrc is the prelude of the fetches that drop lapsed leases (withLeases).
	//go:embed leases.lua
	leasesSrc string
	// keyedSrc is the prelude of the scripts that move keyed jobs (withKeyed).
	//go:embed keyed.lua
	keyedSrc string
	//go:embed enqueue_keyed.lua
	enqueueKeyedSrc string
	//go:embed kill_keyed.lua
	killKeyedSrc string
	//go:embed fetch_keyed.lua
	fetchKeyedSrc string
	//go:embed release_keys.lua
	releaseKeysSrc string
	//go:embed retry_keyed.lua
	retryKeyedSrc string
	//go:embed enqueue_keyed_all.lua
	enqueueKeyedAllSrc string
	//go:embed key_pause.lua
	keyPauseSrc string
)

// The scripts, ready to run.
var (
	Enqueue    = redis.NewScript(enqueueSrc)
	EnqueueAll = redis.NewScript(withPush(enqueueAllSrc))
	// EnqueueGroup writes the enqueues that concurrent callers share (groupcommit.go).
	EnqueueGroup = redis.NewScript(enqueueGroupSrc)
	Fetch        = redis.NewScript(fetchSrc)
	// AckBatch takes a batch of finished jobs off the backup lists (acker.go).
	AckBatch = redis.NewScript(ackBatchSrc)
	// FetchLimited is Fetch for polls where a queue has a cluster-wide limit or leases to release.
	FetchLimited = redis.NewScript(withLeases(fetchLimitedSrc))
	// CronSave and CronEnqueue keep periodic jobs in sidekiq-cron 1.x's layout.
	CronSave    = redis.NewScript(cronSaveSrc)
	CronEnqueue = redis.NewScript(cronEnqueueSrc)
	CronStatus  = redis.NewScript(cronStatusSrc)
	Retry       = redis.NewScript(retrySrc)
	Dead        = redis.NewScript(deadSrc)
	Requeue     = redis.NewScript(withKeyed(requeueSrc))
	PutBack     = redis.NewScript(withKeyed(putBackSrc))
	Recover     = redis.NewScript(withKeyed(recoverSrc))
	Schedule    = redis.NewScript(scheduleSrc)
	EnqueueAt   = redis.NewScript(enqueueAtSrc)
	Ack         = redis.NewScript(ackSrc)
	Unlock      = redis.NewScript(unlockSrc)
	RemoveJobs  = redis.NewScript(removeJobsSrc)
	RequeueSet  = redis.NewScript(requeueSetSrc)
	// Kill moves jobs from retry or schedule to dead (the admin API's Kill).
	Kill   = redis.NewScript(killSrc)
	Beat   = redis.NewScript(beatSrc)
	Stale  = redis.NewScript(staleSrc)
	Rescue = redis.NewScript(withKeyed(rescueSrc))
	Bury   = redis.NewScript(burySrc)
	// SweepNode forgets the incarnation and backup-queue set a gone node's burial left.
	SweepNode = redis.NewScript(sweepNodeSrc)
	// TrimIndex removes the ids of expired batches or workflows from their listing index.
	TrimIndex = redis.NewScript(trimIndexSrc)
	// SignalsDone removes handled signals from a node's signals list (compare-and-remove).
	SignalsDone = redis.NewScript(signalsDoneSrc)
	// Prune removes the nodes whose hash has expired, each checked again in the script (a
	// node that pinged since the prune's read stays).
	Prune = redis.NewScript(pruneSrc)
	// StatsFlush adds one batch of counters, once per batch id.
	StatsFlush = redis.NewScript(statsFlushSrc)
	// PushRelayed pushes jobs an outbox relay read from a database, each jid at most once.
	PushRelayed = redis.NewScript(withPush(pushRelayedSrc))
	// BatchAdd creates a batch with its first jobs, or adds jobs to it from one of its jobs.
	BatchAdd = redis.NewScript(batchAddSrc)
	// BatchSettle records how a run of a batch's job ended and fires the callbacks due.
	BatchSettle = redis.NewScript(batchSettleSrc)
	// ForeignMark notes a job of a batch or workflow seen running on a Sidekiq or Exq node.
	ForeignMark = redis.NewScript(foreignMarkSrc)
	// WorkflowCreate writes a workflow and pushes the jobs that wait for nothing.
	WorkflowCreate = redis.NewScript(withPush(workflowCreateSrc))
	// WorkflowSettle records a workflow job's end and releases or cancels its dependents.
	WorkflowSettle = redis.NewScript(workflowSettleSrc)
	// SettleGroup records several outcomes of batch and workflow jobs in one call, each by the
	// text of its own script, wrapped as a function that takes the item's KEYS and ARGV.
	SettleGroup = redis.NewScript("local function batch_settle(KEYS, ARGV)\n" + batchSettleSrc + "\nend\n" +
		"local function workflow_settle(KEYS, ARGV)\n" + workflowSettleSrc + "\nend\n" + settleGroupSrc)
	// AckSettle takes finished jobs off the backup lists with the transitions of their batches
	// and workflows in the same call (acker.go), the transitions by the text of their scripts as
	// SettleGroup runs them.
	AckSettle = redis.NewScript("local function batch_settle(KEYS, ARGV)\n" + batchSettleSrc + "\nend\n" +
		"local function workflow_settle(KEYS, ARGV)\n" + workflowSettleSrc + "\nend\n" + ackSettleSrc)
)

// EnqueueKeyed, EnqueueKeyedAll, FetchKeyed, ReleaseKeys and RetryKeyed move keyed jobs,
// KillKeyed buries a waiting one, and KeyPause pauses and resumes a key (docs/keys.md).
var (
	EnqueueKeyed    = redis.NewScript(withKeyed(enqueueKeyedSrc))
	EnqueueKeyedAll = redis.NewScript(withKeyed(enqueueKeyedAllSrc))
	KillKeyed       = redis.NewScript(withKeyed(killKeyedSrc))
	FetchKeyed      = redis.NewScript(withLeases(withKeyed(fetchKeyedSrc)))
	ReleaseKeys     = redis.NewScript(withKeyed(releaseKeysSrc))
	RetryKeyed      = redis.NewScript(retryKeyedSrc)
	KeyPause        = redis.NewScript(withKeyed(keyPauseSrc))
)

// withKeyed puts keyed.lua's functions (where a keyed job waits) before src.
func withKeyed(src string) string { return keyedSrc + src }

// withLeases puts leases.lua's function (drop_lapsed) before src.
func withLeases(src string) string { return leasesSrc + src }

// withPush puts push.lua's functions (the key type check and the pushes of collected jobs)
// before src, so that every script that writes jobs writes them alike.
func withPush(src string) string { return pushSrc + src }

// Processor runs a command: any go-redis client.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// RunFetch runs Fetch as Script.Run does (EVALSHA, then EVAL when the server lacks the script)
// and reads its flat reply as strings: a generic reply boxes every job in an interface, an
// allocation per job on the poll loop's path.
func RunFetch(ctx context.Context, c Processor, keys []string, args ...any) ([]string, error) {
	cmdArgs := make([]any, 3, 3+len(keys)+len(args))
	cmdArgs[0], cmdArgs[1], cmdArgs[2] = "evalsha", Fetch.Hash(), len(keys)
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewStringSliceCmd(ctx, cmdArgs...)
	if err := c.Process(ctx, cmd); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmdArgs[0], cmdArgs[1] = "eval", fetchSrc
		cmd = redis.NewStringSliceCmd(ctx, cmdArgs...)
		_ = c.Process(ctx, cmd)
	}
	return cmd.Result()
}
