// Package wire holds the Redis key names and the job JSON encoding that exq shares with Exq
// and Sidekiq (WIRE.md). Nothing else in the module builds a key or a job document by hand.
package wire

import "time"

// Keys builds every Redis key name for one namespace. The zero value is the empty namespace,
// which means no prefix at all, for every key (Exq adds a stray colon to some keys; we don't).
type Keys struct {
	// Prefix is the namespace followed by a colon, or "" for no namespace.
	Prefix string
}

// NewKeys returns the key builder for namespace ns ("" = no prefix).
func NewKeys(ns string) Keys {
	if ns == "" {
		return Keys{}
	}
	return Keys{Prefix: ns + ":"}
}

// Queues is the set of known queue names.
func (k Keys) Queues() string { return k.Prefix + "queues" }

// Queue is the list that holds the jobs waiting in queue q.
func (k Keys) Queue(q string) string { return k.Prefix + "queue:" + q }

// Backup is the list of jobs that node has taken from queue q and not finished.
func (k Keys) Backup(node, q string) string {
	return k.Prefix + "queue:backup::" + node + "::" + q
}

// BackupPattern is a SCAN pattern that matches every backup list of node (and, since a key
// cannot say where the node ends, those of nodes whose identity starts with node + "::", which
// BackupQueue tells apart).
func (k Keys) BackupPattern(node string) string {
	return globEscape(k.Prefix+"queue:backup::"+node+"::") + "*"
}

// AnyBackupPattern is a SCAN pattern that matches the backup lists of every node.
func (k Keys) AnyBackupPattern() string { return globEscape(k.Prefix+"queue:backup::") + "*" }

// BackupQueue is the queue of node's backup list key, and false when key is not one of node's
// backup lists (another node's, or one whose queue part holds "::", which no queue name does).
func (k Keys) BackupQueue(node, key string) (string, bool) {
	head := k.Prefix + "queue:backup::" + node + "::"
	if len(key) <= len(head) || key[:len(head)] != head {
		return "", false
	}
	q := key[len(head):]
	for i := 0; i+1 < len(q); i++ {
		if q[i] == ':' && q[i+1] == ':' {
			return "", false
		}
	}
	return q, true
}

// globEscape escapes the characters a Redis glob pattern gives a meaning to.
func globEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// BackupQueues is exq's own set of the queues in which node has taken jobs into a backup list
// (the fetch scripts add to it as they take jobs), so that a rescue finds every backup list of
// a dead node even when its queue is in no queues set (removed while its jobs ran, or filled by
// a producer that never adds it). Exq and Sidekiq nodes keep none: their lists are found by a
// SCAN (BackupPattern).
func (k Keys) BackupQueues(node string) string { return k.Prefix + "backup_queues:" + node }

// Schedule is the sorted set of jobs enqueued for later.
func (k Keys) Schedule() string { return k.Prefix + "schedule" }

// Retry is the sorted set of failed jobs waiting for their next attempt.
func (k Keys) Retry() string { return k.Prefix + "retry" }

// Dead is the sorted set of jobs that will not run again by themselves.
func (k Keys) Dead() string { return k.Prefix + "dead" }

// Wake is the pub/sub channel on which enqueues announce a queue that has new jobs, so idle
// exq nodes fetch at once instead of waiting for their next poll. It is a channel, not a key:
// Exq and Sidekiq nodes never see it, and nothing is stored under it.
func (k Keys) Wake() string { return k.Prefix + "wake" }

// Unique is the lock of unique jobs with token; it holds the holder's jid.
func (k Keys) Unique(token string) string { return k.Prefix + "unique:" + token }

// Relayed marks a job an outbox relay pushed, so that a second push of the same jid (a relay
// that died before it deleted its rows) writes nothing. It holds "1" and expires.
func (k Keys) Relayed(jid string) string { return k.Prefix + "relayed:" + jid }

// Outbox is the hash in which outbox relays report their backlog (exq's own key).
func (k Keys) Outbox() string { return k.Prefix + "outbox" }

// Processes is the set of node identities that are (or recently were) alive.
func (k Keys) Processes() string { return k.Prefix + "processes" }

// Node is the hash describing node id (info, busy, beat, quiet, rtt_us, rss).
func (k Keys) Node(id string) string { return k.Prefix + id }

// Workers is the hash of the jobs node id is running, as Exq and Sidekiq 6 name it.
func (k Keys) Workers(id string) string { return k.Prefix + id + ":workers" }

// Work is the same hash as Sidekiq 7 and 8 name it (launcher.rb writes, api.rb's WorkSet
// reads "<identity>:work"). exq writes both names with the same fields and values, and reads
// both, so the running jobs of every runtime show everywhere.
func (k Keys) Work(id string) string { return k.Prefix + id + ":work" }

// Signals is the list through which UIs and the API send signals to node id.
func (k Keys) Signals(id string) string { return k.Prefix + id + "-signals" }

// Heartbeats is the sorted set of node identities scored by their last beat.
func (k Keys) Heartbeats() string { return k.Prefix + "heartbeats" }

// HeartbeatDeadlines is exq's own sorted set of node identities scored by the time each node
// counts as dead: its last beat plus the window it publishes (its interval × (missed + 1)), so
// that every node judges every other by that node's own window. Exq and Sidekiq write none.
func (k Keys) HeartbeatDeadlines() string { return k.Prefix + "heartbeat_deadlines" }

// HeartbeatEpochs is exq's own hash of node identity to the token of the node's current
// incarnation: a node writes a new one each time it joins the heartbeats (at start, and again
// after it finds it was buried while it could not beat), and a burial deletes it. The fetch and
// acknowledgement scripts of a node compare it with theirs, so that a node that was buried
// while paused takes no job before it knows, and no late outcome of a run from before the
// burial touches a backup list again (another run of the same job may sit there).
func (k Keys) HeartbeatEpochs() string { return k.Prefix + "heartbeat_epochs" }

// HeartbeatResumed is exq's own string holding the Redis server's time (seconds, six
// decimals) at which the latest stall seen by a node ended: no node is taken for dead until a
// whole window of its own has passed since then, so that a stall of the server, during which
// nobody's beat could run, never counts against a node.
func (k Keys) HeartbeatResumed() string { return k.Prefix + "heartbeat_resumed" }

// Paused is exq's own set of the names of paused queues: the fetch script of every exq node
// of the namespace skips them (API.PauseQueue, ResumeQueue). Exq and Sidekiq nodes do not
// read it.
func (k Keys) Paused() string { return k.Prefix + "paused" }

// Leases is exq's own sorted set of the leases on queue q's cluster-wide slots
// (Queue.GlobalLimit): one member "<node>:<n>" per running job, scored by when the lease
// expires by the Redis server's clock. The fetch script takes them with the jobs; nodes renew
// theirs with every heartbeat and remove them as jobs end, so a killed node's leases lapse
// within its heartbeat window.
func (k Keys) Leases(q string) string { return k.Prefix + "leases:" + q }

// LeaseWaiters is exq's own sorted set of the nodes waiting for a lease of queue q (their last
// fetch was held back by its GlobalLimit), scored by when they stop counting as waiting by the
// Redis server's clock: while others wait, a node takes no more than its share of the slots.
func (k Keys) LeaseWaiters(q string) string { return k.Prefix + "lease_waiters:" + q }

// Starts is exq's own sorted set of the job starts of queue q within its rate window
// (Queue.Rate): one member "<node>:<n>" per start, scored by the Redis server's clock.
func (k Keys) Starts(q string) string { return k.Prefix + "starts:" + q }

// RatePace holds the pacing state of queue q's rate limit (Queue.Rate): the server time, in
// seconds, from which the next start is due (GCRA's theoretical arrival time).
func (k Keys) RatePace(q string) string { return k.Prefix + "rate_pace:" + q }

// Limits is exq's own hash of queue name to the JSON of the cluster-wide limits the nodes
// working on it run with ({"global_limit":5,"rate":200,"rate_per_ms":1000}), written by each
// node at start, so that the API and the CLI can show them.
func (k Keys) Limits() string { return k.Prefix + "limits" }

// CronJobs is sidekiq-cron 1.x's set of periodic jobs. Its members are CronMember(name),
// without the namespace, as sidekiq-cron (through redis-namespace) writes them.
func (k Keys) CronJobs() string { return k.Prefix + "cron_jobs" }

// CronMember is the member of CronJobs naming periodic job name: "cron_job:<name>".
func CronMember(name string) string { return "cron_job:" + name }

// CronJob is the hash of periodic job name (sidekiq-cron 1.x: klass, cron, message, status,
// last_enqueue_time, …; every value a string).
func (k Keys) CronJob(name string) string { return k.Prefix + CronMember(name) }

// CronJobOfMember is the hash a member of CronJobs names, as read from the set (it may not
// have the "cron_job:" form if another program wrote it).
func (k Keys) CronJobOfMember(member string) string { return k.Prefix + member }

// CronEnqueued is the sorted set of the ticks of periodic job name that were enqueued: member
// the tick as "2006-01-02T15:04:05Z", score its Unix time. Adding the member is the claim: a
// tick is enqueued only by whoever's ZADD added it (sidekiq-cron and exq alike).
func (k Keys) CronEnqueued(name string) string { return k.CronJob(name) + ":enqueued" }

// CronHistory is the list of the last enqueues of periodic job name, newest first:
// {"jid":…,"enqueued":"2006-01-02 15:04:05 +0000"}.
func (k Keys) CronHistory(name string) string { return k.CronJob(name) + ":jid_history" }

// CronClaim marks, for a while, that the periodic enqueue with claim id (a random id the
// enqueuing node picks per tick) claimed its tick (exq's own key, with a TTL): a node whose
// reply was lost sends the call again and learns from it whether the tick is its own.
func (k Keys) CronClaim(id string) string { return k.Prefix + "cron_claim:" + id }

// StatFlush holds the id of the last batch of counters node applied (exq's own key, with a
// TTL), so that a batch sent again after a lost reply is not counted twice.
func (k Keys) StatFlush(node string) string { return k.Prefix + "stat_flush:" + node }

// Stat is the all-time counter of kind ("processed" or "failed").
func (k Keys) Stat(kind string) string { return k.Prefix + "stat:" + kind }

// StatDay is the counter of kind for the UTC day of t.
func (k Keys) StatDay(kind string, t time.Time) string {
	return k.Prefix + "stat:" + kind + ":" + t.UTC().Format("2006-01-02")
}

// StatSecond is the realtime counter of kind for the UTC second of t.
func (k Keys) StatSecond(kind string, t time.Time) string {
	return k.Prefix + "stat:" + kind + "_rt:" + t.UTC().Format("2006-01-02 15:04:05") + "Z"
}

// Batches is exq's own sorted set of batch ids scored by their creation time (seconds), for
// listings. A member whose Batch hash has expired is skipped by readers and trimmed by the
// nodes (IndexTrim).
func (k Keys) Batches() string { return k.Prefix + "batches" }

// IndexTrim is exq's own string that the node passing over the listing indexes (Batches,
// Workflows) to trim the ids of expired data holds: its node identity, PX the time until the
// next pass, so that one node of a namespace passes at a time.
func (k Keys) IndexTrim() string { return k.Prefix + "index_trim" }

// Batch is exq's own hash describing batch bid: created_at, description, the callbacks' job
// documents and the times each fired, and the TTL its data keeps once the batch has ended.
// Every key of a batch is built from the namespace's prefix, so under a hash-tagged namespace
// ("{ns}") all of them share the namespace's Redis Cluster slot with the queues.
func (k Keys) Batch(bid string) string { return k.Prefix + "batch:" + bid }

// BatchJobs is the set of every jid ever added to batch bid (its total). Adding a jid already
// in it is a no-op, which makes an add sent twice (a lost reply) harmless.
func (k Keys) BatchJobs(bid string) string { return k.Prefix + "batch:" + bid + ":jobs" }

// BatchPending is the hash of batch bid's jids that have not succeeded: "0" until a run of
// the job has ended (failed or died), "1" after. The outcome script removes a jid once (its
// read of the field, in the same script, says whether it is there), which is what makes a
// success count exactly once; the batch hash's "fresh" counts the jids at "0".
func (k Keys) BatchPending(bid string) string { return k.Prefix + "batch:" + bid + ":pending" }

// BatchDead is the set of batch bid's jids that died (moved to the dead set).
func (k Keys) BatchDead(bid string) string { return k.Prefix + "batch:" + bid + ":dead" }

// BatchForeign is the hash of batch bid's jobs seen running on a node that is not exq: jid →
// node.
func (k Keys) BatchForeign(bid string) string { return k.Prefix + "batch:" + bid + ":foreign" }

// WorkflowForeign is the same hash for workflow id's jobs.
func (k Keys) WorkflowForeign(id string) string { return k.Prefix + "wf:" + id + ":foreign" }

// Workflows is exq's own sorted set of workflow ids scored by their creation time (seconds).
// A member whose Workflow hash has expired is skipped by readers and trimmed by the nodes
// (IndexTrim).
func (k Keys) Workflows() string { return k.Prefix + "workflows" }

// Workflow is exq's own hash describing workflow id: created_at, total, the counts of its
// jobs by outcome (succeeded, dead, canceled), finished_at, the queues its jobs use and the
// TTL of its data once it has finished.
func (k Keys) Workflow(id string) string { return k.Prefix + "wf:" + id }

// WorkflowGraph is the hash of workflow id's graph and states, fields per job name n:
// "s:n" state (waiting, queued, succeeded, dead, canceled), "w:n" parents not yet finished,
// "c:n" children and "p:n" parents (names joined by "\n"), "q:n" queue, "j:n" jid,
// "r:n" present when n runs even if a parent dies, "why:n" why n was canceled.
func (k Keys) WorkflowGraph(id string) string { return k.Prefix + "wf:" + id + ":graph" }

// WorkflowJobs is the hash of workflow id's job documents not yet pushed, by job name: a job is
// removed from it as it is pushed to its queue.
func (k Keys) WorkflowJobs(id string) string { return k.Prefix + "wf:" + id + ":jobs" }

// Result holds the result job jid stored (Job results), with the TTL the storing node set.
func (k Keys) Result(jid string) string { return k.Prefix + "result:" + jid }

// ResultReady is the pub/sub channel on which the storing of job jid's result is announced, so
// that a client waiting for it wakes at once. A channel, not a key: nothing is stored under it.
func (k Keys) ResultReady(jid string) string { return k.Prefix + "result_ready:" + jid }

// Steps is the hash of the durable steps job jid saved (exq.Step): field the step's name,
// value its result as JSON. exq's own; it expires (StepTTL) once the job has ended.
func (k Keys) Steps(jid string) string { return k.Prefix + "steps:" + jid }

// ExpiredStat is exq's own counter of the jobs that were not run because they had expired
// (ExpiresIn, ExpiresAt): an integer, never reset.
func (k Keys) ExpiredStat() string { return k.Prefix + "exq_stat:expired" }

// Iteration is the state of iterable job jid: a hash in Sidekiq 7.3's layout ("it-<jid>",
// fields ex, c, rt, cancelled), under the namespace prefix, so that with the empty namespace
// it is exactly Sidekiq's key and either side reads and cancels the other's jobs.
func (k Keys) Iteration(jid string) string { return k.Prefix + "it-" + jid }

// KeyJobs is the list of keyed jobs of key waiting in queue q, oldest at the head (docs/keys.md).
func (k Keys) KeyJobs(q, key string) string { return k.Prefix + "key_jobs:" + q + ":" + key }

// KeyReady is the sorted set of the keys of queue q that may start a job now, scored by their
// turn (the lowest is served next).
func (k Keys) KeyReady(q string) string { return k.Prefix + "key_ready:" + q }

// KeyBlocked is the sorted set of the keys of queue q that wait for a time (a lease's lapse,
// the rate's window, a held sequence's retry), scored by it in Unix seconds of the server.
func (k Keys) KeyBlocked(q string) string { return k.Prefix + "key_blocked:" + q }

// KeyLeases is the sorted set of the leases of key's running jobs in queue q, scored by when
// each lapses.
func (k Keys) KeyLeases(q, key string) string { return k.Prefix + "key_leases:" + q + ":" + key }

// KeyStarts is the log of key's starts in queue q within its KeyPolicy's Rate window.
func (k Keys) KeyStarts(q, key string) string { return k.Prefix + "key_starts:" + q + ":" + key }

// KeyHeld is the hash of queue q's keys held by a sequence's failed job (key -> the jid of
// the job waiting for its retry): none of the key's other jobs starts before it.
func (k Keys) KeyHeld(q string) string { return k.Prefix + "key_held:" + q }

// KeyDelayed is the sorted set of queue q's keyed jobs due later (scheduled, or retrying
// without holding their key), scored by their due time.
func (k Keys) KeyDelayed(q string) string { return k.Prefix + "key_delayed:" + q }

// KeyPaused is the set of queue q's keys paused by API.PauseKey: none of their jobs starts
// (key_ready leaves them out) until API.ResumeKey. exq's own; members stay until resumed.
func (k Keys) KeyPaused(q string) string { return k.Prefix + "key_paused:" + q }
