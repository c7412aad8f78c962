package exq

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/wire"
)

// Group commit: concurrent one-job enqueues (Enqueue, EnqueueIn, EnqueueAt on one *Exq or
// *Client) share round trips. There is no goroutine of its own:
//
//   - A caller that finds no write in flight writes its job alone at once, with the one-job
//     script, exactly as an enqueue always did: a lone caller pays one mutex, nothing more.
//   - A caller that finds a write in flight queues its job and waits.
//   - When a write returns, its writer hands every queued job (up to maxGroup) to the first
//     of their callers, which writes them all in ONE script call (enqueueGroupScript) and
//     hands each caller its own outcome; then it hands on the jobs queued meanwhile, and so on.
//     At most one write per enqueuer is in flight.
//
// Each job of a group is written as its one-job script would write it (unique lock first, a
// conflict writes nothing and names the holder, a lock held by the job's own jid means a repeat
// and writes nothing more), in arrival order, so of two jobs with one token in a group the
// first wins. A job's own error (a key of the wrong type) fails that job only. The wake-ups go
// once per group: one per queue, and one due announcement for the scheduled jobs. With WaitReplicas the WAIT follows the group's script on its
// connection, and a shortfall is every job's ErrNotReplicated. Nothing is ever sent twice: a
// group whose reply is lost fails every job of it (as a lost reply fails a lone enqueue; the
// jobs may have been written).
//
// Contexts: a caller whose context ends while its job is queued returns ctx.Err() and its job
// is never written. Once its job is taken into a group write, the caller waits for that
// write's outcome whatever its context does: the group is written under a context that keeps
// the values of the caller that writes it but no cancellation, and has a deadline only when
// every caller of the group has one (the latest of them), so that no caller's cancellation or
// short deadline fails the others' jobs. The client's read and write timeouts still bound it.
// A group of one job is written under its caller's own context, as a lone enqueue.
//
// Events and EnqueueHooks are untouched: each caller reports its own job (enqueuer.go).
type groupCommit struct {
	mu   sync.Mutex
	busy bool // a write is in flight
	// queued are the calls waiting for the next write, in arrival order.
	queued []*groupCall
}

// maxGroup bounds the jobs of one group write (its script's arguments and run time).
const maxGroup = 500

// groupCall is one queued one-job write.
type groupCall struct {
	ctx  context.Context
	item batchItem
	// ready is closed when the outcome is in, or when this call must write group.
	ready chan struct{}
	// taken is set (under groupCommit.mu) once the call left the queue: into a group, or out
	// of it with its context's error.
	taken bool
	// group is the calls this one writes, itself first; set with taken for a group's writer.
	group []*groupCall
	// holder and err are the outcome, as jobQueue.enqueue returns them.
	holder string
	err    error
}

// write writes one job (a zero item.at: to its queue now; otherwise to the schedule) and
// returns what jobQueue.enqueue or enqueueAt would: the holder's jid on a unique conflict, an
// error wrapping ErrNotReplicated after a write too few replicas confirmed, or the error.
func (g *groupCommit) write(ctx context.Context, jq *jobQueue, item batchItem) (holder string, err error) {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		defer g.handOn()
		return jq.writeOne(ctx, item)
	}
	c := &groupCall{ctx: ctx, item: item, ready: make(chan struct{})}
	g.queued = append(g.queued, c)
	g.mu.Unlock()
	select {
	case <-c.ready:
	case <-ctx.Done():
		g.mu.Lock()
		if !c.taken {
			g.drop(c)
			c.taken = true
			g.mu.Unlock()
			return "", ctx.Err()
		}
		g.mu.Unlock()
		<-c.ready // in a group write already: its outcome is this job's
	}
	if c.group != nil {
		defer g.handOn()
		g.writeGroup(jq, c.group)
	}
	return c.holder, c.err
}

// drop removes c from the queue (under mu).
func (g *groupCommit) drop(c *groupCall) {
	for i, q := range g.queued {
		if q == c {
			g.queued = append(g.queued[:i], g.queued[i+1:]...)
			return
		}
	}
}

// handOn ends a write: the queued calls (up to maxGroup) go to the first of them to write, or,
// with none queued, no write is in flight any more. A queued call whose context has ended is
// answered with its context's error instead, its job unwritten.
func (g *groupCommit) handOn() {
	g.mu.Lock()
	var group []*groupCall
	var gone []*groupCall
	n := 0
	for _, c := range g.queued {
		if len(group) == maxGroup {
			break
		}
		n++
		c.taken = true
		if err := c.ctx.Err(); err != nil {
			c.err = err
			gone = append(gone, c)
			continue
		}
		group = append(group, c)
	}
	if n == len(g.queued) {
		g.queued = nil
	} else {
		g.queued = append([]*groupCall(nil), g.queued[n:]...)
	}
	if len(group) == 0 {
		g.busy = false
	} else {
		group[0].group = group
	}
	g.mu.Unlock()
	for _, c := range gone {
		close(c.ready)
	}
	if len(group) > 0 {
		close(group[0].ready)
	}
}

// writeGroup writes the jobs of group in one round trip and answers every call but the
// first, whose outcome it leaves in group[0] for its caller (the writer) to return.
func (g *groupCommit) writeGroup(jq *jobQueue, group []*groupCall) {
	answered := false
	defer func() {
		if !answered { // a panic in the write: no caller may wait for ever
			for _, c := range group {
				c.holder, c.err = "", fmt.Errorf("the group write of %d jobs panicked", len(group))
			}
			for _, c := range group[1:] {
				close(c.ready)
			}
		}
	}()
	if len(group) == 1 {
		c := group[0]
		c.holder, c.err = jq.writeOne(c.ctx, c.item)
		answered = true
		return
	}
	ctx, cancel := groupContext(group)
	defer cancel()
	items := make([]batchItem, len(group))
	for i, c := range group {
		items[i] = c.item
	}
	out, replErr, err := jq.enqueueGroup(ctx, items)
	for i, c := range group {
		switch {
		case err != nil:
			c.holder, c.err = "", err
		case out[i].err != nil:
			c.holder, c.err = "", out[i].err
		default:
			c.holder, c.err = out[i].holder, replErr
		}
	}
	answered = true
	for _, c := range group[1:] {
		close(c.ready)
	}
}

// groupContext is the context a group is written under: the writer's values, no
// cancellation, and the latest deadline of the group's callers when every one has a deadline.
func groupContext(group []*groupCall) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(group[0].ctx)
	var latest time.Time
	for _, c := range group {
		d, ok := c.ctx.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(ctx, latest)
}

// writeOne writes one job with its own script, as an enqueue always did.
func (jq *jobQueue) writeOne(ctx context.Context, it batchItem) (holder string, err error) {
	if it.at.IsZero() {
		return jq.enqueue(ctx, it.queue, it.job, it.lock)
	}
	return jq.enqueueAt(ctx, it.at, it.job, it.lock)
}

// groupOutcome is what the group script did with one job: written (holder ""), refused on a
// unique conflict (holder), or failed (err, for that job alone).
type groupOutcome struct {
	holder string
	err    error
}

// scriptError is an error a command of the group script returned for one job: a Redis error
// reply, as the one-job script's failure would have been.
type scriptError string

func (e scriptError) Error() string { return string(e) }

// RedisError marks it as a Redis error reply (go-redis' redis.Error).
func (e scriptError) RedisError() {}

var _ redis.Error = scriptError("")

// enqueueGroup writes items (each as enqueue or enqueueAt would, in order) in one script call
// and returns each one's outcome. err is an error of the whole call: then nothing is known of
// any item (they may have been written). With WaitReplicas, replErr wraps ErrNotReplicated
// when too few replicas confirmed the call; the outcomes stand.
func (jq *jobQueue) enqueueGroup(ctx context.Context, items []batchItem) (out []groupOutcome, replErr, err error) {
	queueNo := map[string]int{}
	var queues []string
	locks := 0
	for _, it := range items {
		if it.at.IsZero() {
			if _, ok := queueNo[it.queue]; !ok {
				queues = append(queues, it.queue)
				queueNo[it.queue] = len(queues)
			}
		}
		if it.lock != nil {
			locks++
		}
	}
	keys := make([]string, 0, 2+len(queues)+locks)
	keys = append(keys, jq.keys.Schedule(), jq.keys.Queues())
	args := make([]any, 0, 3+len(queues)+6*len(items))
	args = append(args, jq.keys.Wake(), len(queues), len(items))
	for _, q := range queues {
		keys = append(keys, jq.keys.Queue(q))
		args = append(args, q)
	}
	lockNo := 0
	for _, it := range items {
		q, score := 0, ""
		if it.at.IsZero() {
			q = queueNo[it.queue]
		} else {
			score = wire.FormatTime(it.at)
		}
		args = append(args, q, score, it.job)
		if it.lock == nil {
			args = append(args, 0, "", 0)
			continue
		}
		keys = append(keys, it.lock.key)
		lockNo++
		args = append(args, lockNo, it.lock.jid, it.lock.ttlMillis())
	}
	cmd, replErr := jq.evalScript(ctx, enqueueGroupScript, keys, args...)
	res, err := cmd.Slice()
	if err != nil {
		return nil, nil, err
	}
	if len(res) != 2*len(items) {
		return nil, nil, fmt.Errorf("enqueue group: %d values in the reply for %d jobs", len(res), len(items))
	}
	out = make([]groupOutcome, len(items))
	for i := range items {
		code, _ := res[2*i].(int64)
		val, _ := res[2*i+1].(string)
		switch code {
		case 0:
		case 1:
			out[i].holder = val
		default:
			out[i].err = scriptError(val)
		}
	}
	return out, replErr, nil
}

// enqueueGroupScript writes a group of one-job enqueues (see groupCommit), each job exactly as
// enqueue.lua (now) or enqueue_at.lua (scheduled) would, but for the wake-ups, sent once at the
// end: one PUBLISH per queue that got a job, and, as enqueue_all.lua does, one ":due:<score>"
// for the group's earliest scheduled job when it is due before every job the schedule held. A
// command's error fails its job only (redis.pcall).
const enqueueGroupSrc = `
-- KEYS[1] P schedule   KEYS[2] P queues   KEYS[2+q] P queue:<queue q>, for q = 1..Q
-- KEYS[2+Q+u] P unique:<token of unique job u>, for u = 1..U (a token may repeat)
-- ARGV[1] wake channel   ARGV[2] Q   ARGV[3] N (jobs)   ARGV[3+q] queue name q
-- then six values per job: queue number (0: scheduled), score ("" = now), JSON,
-- unique job number u (0: not unique), jid, lock TTL in ms.
-- Returns two values per job: 0, "" when written (or when its lock is held by its own jid:
-- a repeat that wrote it); 1, holder jid on a unique conflict; 2, error text on an error.
local Q, N = tonumber(ARGV[2]), tonumber(ARGV[3])
local jobs0 = 3 + Q
local out, woken = {}, {}
-- head: the schedule's first score before the group's first ZADD (false: none); earliest: the
-- group's earliest scheduled score, and earliestAt its text.
local head, earliest, earliestAt = nil, nil, nil
local function failed(r)
  return type(r) == 'table' and r.err
end
for i = 1, N do
  local b = jobs0 + 6 * (i - 1)
  local q, score, job, u = tonumber(ARGV[b + 1]), ARGV[b + 2], ARGV[b + 3], tonumber(ARGV[b + 4])
  local code, val, write = 0, '', true
  if u > 0 then
    local key, jid = KEYS[2 + Q + u], ARGV[b + 5]
    local r = redis.pcall('SET', key, jid, 'PX', ARGV[b + 6], 'NX')
    if failed(r) then
      code, val, write = 2, r.err, false
    elseif not r then
      write = false
      local holder = redis.pcall('GET', key)
      if failed(holder) then
        code, val = 2, holder.err
      elseif holder ~= jid then
        code, val = 1, holder or ''
      end
    end
  end
  if write then
    local r
    if q > 0 then
      r = redis.pcall('SADD', KEYS[2], ARGV[3 + q])
      if not failed(r) then
        r = redis.pcall('LPUSH', KEYS[2 + q], job)
        if not failed(r) then woken[q] = true end
      end
    else
      if head == nil then
        local h = redis.pcall('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
        head = (not failed(h) and tonumber(h[2] or '')) or false
      end
      r = redis.pcall('ZADD', KEYS[1], score, job)
      if not failed(r) and (not earliest or tonumber(score) < earliest) then
        earliest, earliestAt = tonumber(score), score
      end
    end
    if failed(r) then code, val = 2, r.err end
  end
  out[#out + 1] = code
  out[#out + 1] = val
end
for q = 1, Q do
  if woken[q] then redis.pcall('PUBLISH', ARGV[1], ARGV[3 + q]) end
end
if earliest and (not head or earliest < head) then
  redis.pcall('PUBLISH', ARGV[1], ':due:' .. earliestAt)
end
return out
`

var enqueueGroupScript = redis.NewScript(enqueueGroupSrc)
