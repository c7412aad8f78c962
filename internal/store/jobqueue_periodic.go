package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// CronRecord is a periodic job as stored in sidekiq-cron 1.x's hash (whoever wrote it).
type CronRecord struct {
	Name, Class, Spec, Description string
	Queue                          string          // from message, "default" when it names none
	Args                           json.RawMessage // the args field, else message's args, else []
	Enabled                        bool            // status "enabled", or no status (sidekiq-cron's default)
	LastEnqueue                    time.Time
	Problem                        string // what exq cannot read in it, "" when nothing
}

// readCronRecord reads a stored hash as sidekiq-cron does (job.rb: the args field wins over
// message.args, a missing status means enabled, the queue lives only in message).
func readCronRecord(member string, h map[string]string) CronRecord {
	r := CronRecord{Name: h["name"], Class: h["klass"], Spec: h["cron"], Description: h["description"], Queue: defaultQueue,
		Enabled: h["status"] == "" || h["status"] == "enabled"}
	if r.Name == "" {
		r.Name = strings.TrimPrefix(member, "cron_job:")
	}
	var msg struct {
		Queue string          `json:"queue"`
		Class string          `json:"class"`
		Args  json.RawMessage `json:"args"`
	}
	if m := h["message"]; m != "" {
		if err := json.Unmarshal([]byte(m), &msg); err != nil {
			r.Problem = "message is not JSON"
		}
	}
	if msg.Queue != "" {
		r.Queue = msg.Queue
	}
	if r.Class == "" {
		r.Class = msg.Class
	}
	r.Args = json.RawMessage("[]")
	switch a := h["args"]; {
	case a != "" && json.Valid([]byte(a)):
		r.Args = json.RawMessage(a)
	case a != "":
		// sidekiq-cron wraps a string that is not JSON in a list.
		r.Args, _ = json.Marshal([]string{a})
	case len(msg.Args) > 0:
		r.Args = msg.Args
	}
	if t, err := wire.ParseCronTime(h["last_enqueue_time"]); err != nil {
		r.Problem = err.Error()
	} else {
		r.LastEnqueue = t
	}
	if r.Class == "" && r.Problem == "" {
		r.Problem = "no klass"
	}
	return r
}

// LoadCron reads every periodic job of the namespace.
func (jq *Store) LoadCron(ctx context.Context) ([]CronRecord, error) {
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
	}); err != nil && !onlyWrongType(err, cmds) {
		return nil, err
	}
	// A member naming a key of another type reads as no periodic job: it does not hold back
	// the others (the runner's ticks, the lists).
	out := make([]CronRecord, 0, len(members))
	for i, m := range members {
		if h := cmds[i].Val(); len(h) > 0 {
			out = append(out, readCronRecord(m, h))
		}
	}
	return out, nil
}

// CronJob is a periodic job to save, already checked: Spec is its stored spec line, Args its
// JSON arguments, Prev the ticks before now that must not fire (CronTick names).
type CronJob struct {
	Name, Class, Queue, Description, Spec string
	Args                                  json.RawMessage
	Disabled                              bool
	Prev                                  []string
}

// cronFields renders p as sidekiq-cron 1.x's hash fields (without status and
// last_enqueue_time), in its order, every value a string it can read.
func cronFields(p CronJob) ([]any, error) {
	msg, err := json.Marshal(struct {
		Queue string          `json:"queue"`
		Class string          `json:"class"`
		Args  json.RawMessage `json:"args"`
	}{p.Queue, p.Class, p.Args})
	if err != nil {
		return nil, err
	}
	return []any{"name", p.Name, "klass", p.Class, "cron", p.Spec, "description", p.Description, "args", string(p.Args),
		"date_as_argument", "false", "message", string(msg), "active_job", "false", "queue_name_prefix", "",
		"queue_name_delimiter", "", "symbolize_args", "false"}, nil
}

// Modes of SaveCron.
const (
	CronUpsert = "upsert"
	CronCreate = "create"
	CronUpdate = "update"
)

// SaveCron writes p in mode and reports what cron_save.lua returned (1 created, 0 updated,
// -1 not found, -2 exists).
func (jq *Store) SaveCron(ctx context.Context, p CronJob, mode string, now time.Time) (int64, error) {
	fields, err := cronFields(p)
	if err != nil {
		return 0, err
	}
	status := "enabled"
	if p.Disabled {
		status = "disabled"
	}
	args := append([]any{wire.CronMember(p.Name), mode, status, strings.Join(p.Prev, " "), float64(now.UnixMicro()) / 1e6}, fields...)
	return scripts.CronSave.Run(ctx, jq.rdb, []string{jq.keys.CronJob(p.Name), jq.keys.CronJobs(), jq.keys.CronEnqueued(p.Name)}, args...).Int64()
}

// CronClaim is one periodic enqueue of a tick. Sent again after a lost reply, the same claim
// learns whether the tick is its own (cron_enqueue.lua).
type CronClaim struct {
	ID    string        // random; names the claim's marker key
	TTL   time.Duration // how long the marker lives
	Check bool          // only ask whether this claim was made, writing nothing
}

// CronEnqueue pushes doc, the job of schedule name for tick (zero: now, unclaimed), as
// cron_enqueue.lua does, and reports whether it did (or an earlier call with the same claim).
func (jq *Store) CronEnqueue(ctx context.Context, name, queue, jid, doc string, tick, now time.Time, claim CronClaim) (bool, error) {
	member, score := "", 0.0
	keys := []string{jq.keys.CronJob(name), jq.keys.CronEnqueued(name), jq.keys.Queue(queue), jq.keys.Queues(), jq.keys.CronHistory(name)}
	if !tick.IsZero() {
		member, score = wire.CronTick(tick), float64(tick.Unix())
		keys = append(keys, jq.keys.CronClaim(claim.ID))
	}
	at := now.UTC().Format(wire.CronTimeLayout)
	entry, err := json.Marshal(struct {
		JID      string `json:"jid"`
		Enqueued string `json:"enqueued"`
	}{jid, at})
	if err != nil {
		return false, err
	}
	mode := ""
	if claim.Check {
		mode = "check"
	}
	n, err := scripts.CronEnqueue.Run(ctx, jq.rdb, keys, member, score, doc, queue, at, string(entry),
		now.Add(-24*time.Hour).Unix(), jq.keys.Wake(), max(claim.TTL.Milliseconds(), 1), mode).Int64()
	return n == 1, err
}

// SetCronStatus sets the status of schedule name ("enabled" or "disabled") and reports
// whether the schedule exists.
func (jq *Store) SetCronStatus(ctx context.Context, name, status string) (bool, error) {
	n, err := scripts.CronStatus.Run(ctx, jq.rdb, []string{jq.keys.CronJob(name)}, status).Int64()
	return n == 1, err
}

// DeleteCron removes schedule name with its enqueued ticks and history, as sidekiq-cron's
// destroy does, and reports whether it existed.
func (jq *Store) DeleteCron(ctx context.Context, name string) (bool, error) {
	var gone *redis.IntCmd
	_, err := jq.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SRem(ctx, jq.keys.CronJobs(), wire.CronMember(name))
		gone = p.Del(ctx, jq.keys.CronJob(name))
		p.Del(ctx, jq.keys.CronEnqueued(name), jq.keys.CronHistory(name))
		return nil
	})
	return err == nil && gone.Val() > 0, err
}

// CronRecordOf reads one schedule; ok is false when it does not exist.
func (jq *Store) CronRecordOf(ctx context.Context, name string) (CronRecord, bool, error) {
	h, err := jq.rdb.HGetAll(ctx, jq.keys.CronJob(name)).Result()
	if err != nil || len(h) == 0 {
		return CronRecord{}, false, err
	}
	return readCronRecord(wire.CronMember(name), h), true, nil
}

// CronHistory reads the history of schedule name, newest first.
func (jq *Store) CronHistory(ctx context.Context, name string) ([]string, error) {
	return jq.rdb.LRange(ctx, jq.keys.CronHistory(name), 0, -1).Result()
}
