package store

import (
	"context"
	"fmt"

	"github.com/exqgo/exq/internal/store/scripts"
)

// ackSettle is AckMany for a batch of requests some of which carry the transitions of their
// batches or workflows (AckReq.Flow): one call of ack_settle.lua records every transition (the
// successes of one batch as one item, as settleMany does) and takes every job off its backup
// list, a job's transition and its LREM in one atomic step. A job whose item was given a stale
// route stays in its backup list in that call; its transition is then recorded alone with the
// stored route (settleOne) and the job acknowledged after it (the transition first, as
// ever). failed tells which requests did not happen.
func (jq *Store) ackSettle(ctx context.Context, batch []AckReq) (failed []bool, err error) {
	// The items: a batch's successes in one item; refs[i] are request i's item numbers
	// (1-based, 0 for none); first[k] is the request that is given item k's reply.
	var items []SettleItem
	var nows []int // the request whose Now an item is written with
	byBatch := map[string]int{}
	refs := make([][2]int, len(batch))
	for i, r := range batch {
		if r.Flow == nil {
			continue
		}
		for n, it := range r.Flow.Items {
			if n > 1 {
				return nil, fmt.Errorf("ack: a job with %d batch or workflow transitions", len(r.Flow.Items))
			}
			k, ok := -1, false
			if it.Batch != "" {
				k, ok = byBatch[it.Batch]
			}
			if ok {
				items[k].Runs = append(items[k].Runs, it.Runs...)
			} else {
				k = len(items)
				if it.Batch != "" {
					byBatch[it.Batch] = k
					it.Runs = append([][2]string(nil), it.Runs...)
				}
				items = append(items, it)
				nows = append(nows, i)
			}
			refs[i][n] = k + 1
		}
		r.Flow.Replies = make([][]any, len(r.Flow.Items))
	}
	keys := make([]string, 2, 2+6*len(items)+2)
	keys[0], keys[1] = jq.keys.Heartbeats(), jq.keys.HeartbeatEpochs()
	args := make([]any, 2, 2+10*len(items)+4*len(batch))
	args[0], args[1] = jq.node, len(items)
	for k, it := range items {
		kind, ik, ia := jq.settleCall(it, batch[nows[k]].Flow.Now)
		keys = append(keys, ik...)
		args = append(args, kind, len(ik), len(ia))
		args = append(args, ia...)
	}
	// The groups, as AckMany builds them, with 'f' for the jobs with a transition; a key is
	// named by its index in KEYS (1-based).
	var lastQueue, lastEpoch string
	lastKind, count, members := byte(0), 0, 0
	closeGroup := func() {
		if count > 0 {
			args[count] = members
		}
	}
	for i, r := range batch {
		kind, member := byte('a'), r.Raw
		switch {
		case r.Lease != "":
			kind, member = 'l', r.Lease
		case refs[i][0] != 0:
			kind = 'f'
		}
		newKey := kind != lastKind || r.Queue != lastQueue
		if newKey || r.Epoch != lastEpoch {
			if newKey {
				if kind == 'l' {
					keys = append(keys, jq.keys.Leases(r.Queue))
				} else {
					keys = append(keys, jq.keys.Backup(jq.node, r.Queue))
				}
			}
			closeGroup()
			args = append(args, string(kind), len(keys), r.Epoch, 0)
			count, members = len(args)-1, 0
			lastKind, lastQueue, lastEpoch = kind, r.Queue, r.Epoch
		}
		if kind == 'f' {
			args = append(args, refs[i][0], refs[i][1])
		}
		args = append(args, member)
		members++
	}
	closeGroup()
	fail := func(err error) ([]bool, error) {
		failed = make([]bool, len(batch))
		for i := range failed {
			failed[i] = true
		}
		return failed, err
	}
	cmd, replErr := jq.evalScript(ctx, scripts.AckSettle, keys, args...)
	jq.wait.shortfall("ack", replErr)
	res, err := cmd.Slice()
	if err != nil {
		return fail(err)
	}
	if len(res) != 1+len(items) {
		return fail(fmt.Errorf("ack: %d replies for %d batch or workflow transitions", len(res)-1, len(items)))
	}
	replies := make([][]any, len(items))
	stale := make([]bool, len(items))
	for k, it := range items {
		r, _ := res[1+k].([]any)
		if len(r) == 0 {
			return fail(fmt.Errorf("ack: unexpected reply %v to a batch or workflow transition", res[1+k]))
		}
		if jq.stale(it, r) {
			stale[k] = true
			continue
		}
		replies[k] = r
	}
	// The jobs left in their backup lists for a stale route: each stale item recorded alone,
	// then its jobs acknowledged.
	var again []int
	for k, it := range items {
		if !stale[k] {
			continue
		}
		r, serr := jq.settleOne(ctx, it, batch[nows[k]].Flow.Now)
		if serr == nil {
			replies[k] = r
			continue
		}
		stale[k] = false // unrecorded: its jobs stay in their backup lists and fail
		if err == nil {
			err = fmt.Errorf("ack: a batch or workflow transition: %w", serr)
		}
		if failed == nil {
			failed = make([]bool, len(batch))
		}
		for i := range batch {
			if refs[i][0] == k+1 || refs[i][1] == k+1 {
				failed[i] = true
			}
		}
	}
	var plain []AckReq
	for i, r := range batch {
		for _, n := range refs[i] {
			if n != 0 && stale[n-1] && (failed == nil || !failed[i]) {
				again = append(again, i)
				plain = append(plain, AckReq{Queue: r.Queue, Raw: r.Raw, Epoch: r.Epoch})
				break
			}
		}
	}
	if len(plain) > 0 {
		f, err2 := jq.AckMany(ctx, plain)
		if err2 != nil {
			if failed == nil {
				failed = make([]bool, len(batch))
			}
			for j, i := range again {
				failed[i] = f[j]
			}
			err = err2
		}
	}
	// Each item's reply goes to the first request that names it.
	given := make([]bool, len(items))
	for i, r := range batch {
		for n, k := range refs[i] {
			if k != 0 && !given[k-1] {
				given[k-1] = true
				r.Flow.Replies[n] = replies[k-1]
			}
		}
	}
	if err == nil {
		return nil, nil
	}
	return failed, err
}
