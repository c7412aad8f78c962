package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// FlowJob is one job a batch add or a workflow creation pushes: its jid, queue, class and
// document.
type FlowJob struct {
	JID, Queue, Class, Doc string
	Done                   []func(string, error) // the EnqueueHooks' functions, for the caller
}

// flowQueues caches, per batch and per workflow, the route of its settle script: the queues
// it may push to (a batch's and its ancestors' callback queues, a workflow's job queues) and,
// for a nested batch, its ancestors. The script must be given those keys (Redis Cluster and
// ACL key patterns need every key declared), and they never change once the batch or workflow
// is written. The script checks what it is given against what is stored, so a stale entry
// costs one more call, never a wrong push.
type flowQueues struct {
	mu sync.Mutex
	m  map[string]flowRoute
}

// flowRoute is what the settle script of one batch or workflow needs declared.
type flowRoute struct{ queues, parents string }

// maxFlowQueues bounds the cache: past it, it starts again empty.
const maxFlowQueues = 4096

func (c *flowQueues) get(id string) flowRoute {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

func (c *flowQueues) put(id string, r flowRoute) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxFlowQueues {
		c.m = map[string]flowRoute{}
	}
	c.m[id] = r
}

// splitQueues is the list of a stored "queues" field ("\n"-joined; "" for none).
func splitQueues(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// flowQueueNumbers numbers the distinct queues of jobs from 1, in order of first use.
func flowQueueNumbers(jobs []FlowJob) (names []string, no map[string]int) {
	no = map[string]int{}
	for _, j := range jobs {
		if _, ok := no[j.Queue]; !ok {
			names = append(names, j.Queue)
			no[j.Queue] = len(names)
		}
	}
	return names, no
}

// Replies of batch_add.lua.
const (
	BatchOK          = "ok"
	BatchReplay      = "replay"
	BatchExistsReply = "exists"
	BatchGone        = "gone"
	BatchNotMember   = "not_member"
	BatchDone        = "done"
	BatchNoParent    = "parent_gone"
	BatchClosed      = "closed"
)

// OpenMember is the member of an open batch's pending hash that keeps its success and
// complete callbacks from firing until it is closed (batch_add.lua's "open" mode); closing
// records its success. No jid of a job added to a batch may be it, and no child batch's member
// ("batch:<id>") can, since ids hold no ':'.
const OpenMember = "batch::open"

// BatchWrite creates batch bid (mode "create", by the call with token who) with the hash fields
// given and jobs, as a child of batch parent when it is not "" (created by the parent's running
// job adder, or "" outside one), or adds jobs to it (mode "add", who being the adding job's
// jid). It returns batch_add.lua's status and how many jobs were new to the batch.
func (jq *Store) BatchWrite(ctx context.Context, bid, mode, who, parent, adder string, now time.Time, live time.Duration, fields [][2]string, jobs []FlowJob) (string, int, error) {
	queues, no := flowQueueNumbers(jobs)
	keys := make([]string, 0, 9+len(queues))
	keys = append(keys, jq.keys.Batch(bid), jq.keys.BatchJobs(bid), jq.keys.BatchPending(bid), jq.keys.BatchDead(bid),
		jq.keys.Batches(), jq.keys.Queues())
	if parent != "" {
		keys = append(keys, jq.keys.Batch(parent), jq.keys.BatchPending(parent), jq.keys.BatchJobs(parent))
	}
	args := make([]any, 0, 11+len(queues)+2*len(fields)+3*len(jobs))
	args = append(args, bid, mode, who, wire.FormatTime(now), max(int64(live/time.Second), 1), jq.keys.Wake(),
		len(queues), len(jobs), len(fields), parent, adder)
	for _, q := range queues {
		keys = append(keys, jq.keys.Queue(q))
		args = append(args, q)
	}
	for _, f := range fields {
		args = append(args, f[0], f[1])
	}
	for _, j := range jobs {
		args = append(args, j.JID, no[j.Queue], j.Doc)
	}
	cmd, replErr := jq.evalScript(ctx, scripts.BatchAdd, keys, args...)
	res, err := cmd.Slice()
	if err != nil {
		return "", 0, err
	}
	if len(res) != 2 {
		return "", 0, fmt.Errorf("batch add: unexpected reply %v", res)
	}
	status, _ := res[0].(string)
	added, _ := res[1].(int64)
	return status, int(added), replErr
}

// Outcomes of a run of a batch's job, as batch_settle.lua names them.
const (
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunDied      = "died"
)

// BatchSettle records how a run of job jid of batch bid ended (RunSucceeded, RunFailed or
// RunDied) and enqueues the callbacks whose condition first holds. changed is false when the
// call changed nothing (an outcome already recorded, or a batch that no longer exists).
func (jq *Store) BatchSettle(ctx context.Context, bid, jid, out string, now time.Time) (changed bool, fired []string, err error) {
	res, err := jq.settleOne(ctx, SettleItem{Batch: bid, Runs: [][2]string{{jid, out}}}, now)
	if err != nil {
		return false, nil, err
	}
	return BatchSettled(res)
}

// batchSettleCall is batch_settle.lua's keys and arguments for the outcomes runs (jid,
// outcome) of jobs of batch bid.
func (jq *Store) batchSettleCall(bid string, runs [][2]string, now time.Time) (keys []string, args []any) {
	route := jq.flows.get("b:" + bid)
	names := splitQueues(route.queues)
	parents := splitQueues(route.parents)
	keys = make([]string, 0, 5+4*len(parents)+len(names))
	for _, b := range append([]string{bid}, parents...) {
		keys = append(keys, jq.keys.Batch(b), jq.keys.BatchPending(b), jq.keys.BatchDead(b), jq.keys.BatchJobs(b))
	}
	keys = append(keys, jq.keys.Queues())
	args = make([]any, 0, 6+len(names)+2*len(runs))
	args = append(args, wire.FormatTime(now), jq.keys.Wake(), route.queues, route.parents, len(parents), len(names))
	for _, q := range names {
		keys = append(keys, jq.keys.Queue(q))
		args = append(args, q)
	}
	for _, r := range runs {
		args = append(args, r[0], r[1])
	}
	return keys, args
}

// BatchSettled reads batch_settle.lua's reply (not the {-1, queues} one).
func BatchSettled(res []any) (changed bool, fired []string, err error) {
	if len(res) == 0 {
		return false, nil, fmt.Errorf("batch outcome: unexpected reply %v", res)
	}
	for _, f := range res[1:] {
		s, _ := f.(string)
		fired = append(fired, s)
	}
	n, _ := res[0].(int64)
	return n > 0, fired, nil
}

// BatchState is what Redis holds about one batch: its hash and the sizes of its sets.
// Pending does not count OpenMember; Open says whether it is there.
type BatchState struct {
	Fields               map[string]string
	Total, Pending, Dead int64
	Open                 bool
}

// BatchRead reads batch bid; a zero fields map means there is no such batch. A key of
// another type reads as empty (a hash: no such batch; a set: no members), so that one bad key
// (a listed id such as "b1:jobs", naming another batch's set) spoils its own batch, never the
// listing.
func (jq *Store) BatchRead(ctx context.Context, bid string) (BatchState, error) {
	p := jq.rdb.Pipeline()
	h := p.HGetAll(ctx, jq.keys.Batch(bid))
	total := p.SCard(ctx, jq.keys.BatchJobs(bid))
	pending := p.HLen(ctx, jq.keys.BatchPending(bid))
	dead := p.SCard(ctx, jq.keys.BatchDead(bid))
	open := p.HExists(ctx, jq.keys.BatchPending(bid), OpenMember)
	if sent, err := p.Exec(ctx); err != nil && !onlyWrongType(err, sent) {
		return BatchState{}, err
	}
	st := BatchState{Fields: h.Val(), Total: total.Val(), Pending: pending.Val(), Dead: dead.Val(), Open: open.Val()}
	if st.Open {
		st.Pending--
	}
	return st, nil
}

// BatchIDs lists up to count batch ids, newest first, from offset.
func (jq *Store) BatchIDs(ctx context.Context, offset, count int64) ([]string, error) {
	return jq.rdb.ZRevRange(ctx, jq.keys.Batches(), offset, offset+count-1).Result()
}

// BatchMembers reads up to limit jids of batch bid of one set: "pending", "dead" or "jobs"
// (none when that key is of another type).
func (jq *Store) BatchMembers(ctx context.Context, bid, set string, limit int64) ([]string, error) {
	key := jq.keys.BatchJobs(bid)
	if set == "dead" {
		key = jq.keys.BatchDead(bid)
	}
	var out []string
	var cursor uint64
	for {
		var page []string
		var next uint64
		var err error
		if set == "pending" {
			page, next, err = jq.rdb.HScan(ctx, jq.keys.BatchPending(bid), cursor, "", 100).Result()
			n := 0
			for i := 0; i < len(page); i += 2 {
				if page[i] != OpenMember {
					page[n] = page[i]
					n++
				}
			}
			page = page[:n]
		} else {
			page, next, err = jq.rdb.SScan(ctx, key, cursor, "", 100).Result()
		}
		if wrongType(err) {
			return out, nil // a set of another type holds no jid: the batch's other fields still show
		}
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if int64(len(out)) >= limit {
			return out[:limit], nil
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

// SecondsField reads a stored "<seconds>" field as a time; zero when absent or not a number.
func SecondsField(m map[string]string, f string) time.Time {
	v, err := strconv.ParseFloat(m[f], 64)
	if err != nil || v <= 0 {
		return time.Time{}
	}
	return wire.ParseTime(v)
}

// BatchExists reports whether batch bid's data is in this namespace.
func (jq *Store) BatchExists(ctx context.Context, bid string) (bool, error) {
	n, err := jq.rdb.Exists(ctx, jq.keys.Batch(bid)).Result()
	return n == 1, err
}
