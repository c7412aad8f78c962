package exq

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// cronRecord is a periodic job as stored in sidekiq-cron 1.x's hash (whoever wrote it).
type cronRecord struct {
	name, class, spec, description string
	queue                          string          // from message, "default" when it names none
	args                           json.RawMessage // the args field, else message's args, else []
	enabled                        bool            // status "enabled", or no status (sidekiq-cron's default)
	lastEnqueue                    time.Time
	problem                        string // what exq cannot read in it, "" when nothing
}

// readCronRecord reads a stored hash as sidekiq-cron does (job.rb: the args field wins over
// message.args, a missing status means enabled, the queue lives only in message).
func readCronRecord(member string, h map[string]string) cronRecord {
	r := cronRecord{name: h["name"], class: h["klass"], spec: h["cron"], description: h["description"], queue: DefaultQueue,
		enabled: h["status"] == "" || h["status"] == "enabled"}
	if r.name == "" {
		r.name = strings.TrimPrefix(member, "cron_job:")
	}
	var msg struct {
		Queue string          `json:"queue"`
		Class string          `json:"class"`
		Args  json.RawMessage `json:"args"`
	}
	if m := h["message"]; m != "" {
		if err := json.Unmarshal([]byte(m), &msg); err != nil {
			r.problem = "message is not JSON"
		}
	}
	if msg.Queue != "" {
		r.queue = msg.Queue
	}
	if r.class == "" {
		r.class = msg.Class
	}
	r.args = json.RawMessage("[]")
	switch a := h["args"]; {
	case a != "" && json.Valid([]byte(a)):
		r.args = json.RawMessage(a)
	case a != "":
		// sidekiq-cron wraps a string that is not JSON in a list.
		r.args, _ = json.Marshal([]string{a})
	case len(msg.Args) > 0:
		r.args = msg.Args
	}
	if t, err := parseCronTime(h["last_enqueue_time"]); err != nil {
		r.problem = err.Error()
	} else {
		r.lastEnqueue = t
	}
	if r.class == "" && r.problem == "" {
		r.problem = "no klass"
	}
	return r
}

// loadCron reads every periodic job of the namespace.
func (jq *jobQueue) loadCron(ctx context.Context) ([]cronRecord, error) {
	members, err := jq.rdb.SMembers(ctx, jq.keys.CronJobs()).Result()
	if err != nil || len(members) == 0 {
		return nil, err
	}
	cmds := make([]*redis.MapStringStringCmd, len(members))
	if _, err := jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range members {
			cmds[i] = p.HGetAll(ctx, jq.keys.CronJobOfMember(m))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]cronRecord, 0, len(members))
	for i, m := range members {
		if h := cmds[i].Val(); len(h) > 0 {
			out = append(out, readCronRecord(m, h))
		}
	}
	return out, nil
}

// cronFields renders p as sidekiq-cron 1.x's hash fields (without status and
// last_enqueue_time), in its order, every value a string it can read.
func cronFields(p PeriodicJob, line string) ([]any, error) {
	args, err := encodeArgs(p.Args)
	if err != nil {
		return nil, err
	}
	msg, err := json.Marshal(struct {
		Queue string          `json:"queue"`
		Class string          `json:"class"`
		Args  json.RawMessage `json:"args"`
	}{p.queue(), p.Class, args})
	if err != nil {
		return nil, err
	}
	return []any{"name", p.Name, "klass", p.Class, "cron", line, "description", p.Description, "args", string(args),
		"date_as_argument", "false", "message", string(msg), "active_job", "false", "queue_name_prefix", "",
		"queue_name_delimiter", "", "symbolize_args", "false"}, nil
}

// Modes of saveCron.
const (
	cronUpsert = "upsert"
	cronCreate = "create"
	cronUpdate = "update"
)

// saveCron writes p (already checked; line is its stored spec, s its schedule) in mode and
// reports what cron_save.lua returned (1 created, 0 updated, -1 not found, -2 exists).
func (jq *jobQueue) saveCron(ctx context.Context, p PeriodicJob, line string, s schedule, mode string, now time.Time) (int64, error) {
	fields, err := cronFields(p, line)
	if err != nil {
		return 0, err
	}
	status := "enabled"
	if p.Disabled {
		status = "disabled"
	}
	// The tick before now as exq sees it, and as sidekiq-cron does (the latest at or before the
	// second before now): a poll of either in this second must not fire a tick from before.
	var prev []string
	for _, at := range []time.Time{now, now.Truncate(time.Second).Add(-time.Second)} {
		if t := s.latest(at); !t.IsZero() && !slices.Contains(prev, tickMember(t)) {
			prev = append(prev, tickMember(t))
		}
	}
	args := append([]any{wire.CronMember(p.Name), mode, status, strings.Join(prev, " "), float64(now.UnixMicro()) / 1e6}, fields...)
	return scripts.CronSave.Run(ctx, jq.rdb, []string{jq.keys.CronJob(p.Name), jq.keys.CronJobs(), jq.keys.CronEnqueued(p.Name)}, args...).Int64()
}

// cronClaim is one periodic enqueue of a tick. Sent again after a lost reply, the same claim
// learns whether the tick is its own (cron_enqueue.lua).
type cronClaim struct {
	id    string        // random; names the claim's marker key
	ttl   time.Duration // how long the marker lives
	check bool          // only ask whether this claim was made, writing nothing
}

// cronEnqueue pushes doc, the job of schedule name for tick (zero: now, unclaimed), as
// cron_enqueue.lua does, and reports whether it did (or an earlier call with the same claim).
func (jq *jobQueue) cronEnqueue(ctx context.Context, name, queue, jid, doc string, tick, now time.Time, claim cronClaim) (bool, error) {
	member, score := "", 0.0
	keys := []string{jq.keys.CronJob(name), jq.keys.CronEnqueued(name), jq.keys.Queue(queue), jq.keys.Queues(), jq.keys.CronHistory(name)}
	if !tick.IsZero() {
		member, score = tickMember(tick), float64(tick.Unix())
		keys = append(keys, jq.keys.CronClaim(claim.id))
	}
	at := now.UTC().Format(cronTimeLayout)
	entry, err := json.Marshal(struct {
		JID      string `json:"jid"`
		Enqueued string `json:"enqueued"`
	}{jid, at})
	if err != nil {
		return false, err
	}
	mode := ""
	if claim.check {
		mode = "check"
	}
	n, err := scripts.CronEnqueue.Run(ctx, jq.rdb, keys, member, score, doc, queue, at, string(entry),
		now.Add(-24*time.Hour).Unix(), jq.keys.Wake(), max(claim.ttl.Milliseconds(), 1), mode).Int64()
	return n == 1, err
}

// setCronStatus sets the status of schedule name ("enabled" or "disabled") and reports
// whether the schedule exists.
func (jq *jobQueue) setCronStatus(ctx context.Context, name, status string) (bool, error) {
	n, err := scripts.CronStatus.Run(ctx, jq.rdb, []string{jq.keys.CronJob(name)}, status).Int64()
	return n == 1, err
}

// deleteCron removes schedule name with its enqueued ticks and history, as sidekiq-cron's
// destroy does, and reports whether it existed.
func (jq *jobQueue) deleteCron(ctx context.Context, name string) (bool, error) {
	var gone *redis.IntCmd
	_, err := jq.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SRem(ctx, jq.keys.CronJobs(), wire.CronMember(name))
		gone = p.Del(ctx, jq.keys.CronJob(name))
		p.Del(ctx, jq.keys.CronEnqueued(name), jq.keys.CronHistory(name))
		return nil
	})
	return err == nil && gone.Val() > 0, err
}

// cronRecordOf reads one schedule; ok is false when it does not exist.
func (jq *jobQueue) cronRecordOf(ctx context.Context, name string) (cronRecord, bool, error) {
	h, err := jq.rdb.HGetAll(ctx, jq.keys.CronJob(name)).Result()
	if err != nil || len(h) == 0 {
		return cronRecord{}, false, err
	}
	return readCronRecord(wire.CronMember(name), h), true, nil
}

// cronHistory reads the history of schedule name, newest first.
func (jq *jobQueue) cronHistory(ctx context.Context, name string) ([]string, error) {
	return jq.rdb.LRange(ctx, jq.keys.CronHistory(name), 0, -1).Result()
}
