package flows

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// The bounds of an audit's cost: how many pending jobs it looks for, how many queues and
// backup lists it reads, how many entries it reads in one pass (it stops with an error past
// that), and the size of a page.
const (
	AuditMaxPending = 10000
	AuditMaxLists   = 10000
	AuditMaxEntries = 5000000
	auditPage       = 1000
)

// audit looks for a batch's pending jobs in the places a job can be.
type audit struct {
	st   *store.Store
	bid  string
	left map[string]bool // pending jids not found yet
	// foreign are the pending jids found on the busy list of a node that is not exq, and
	// the node.
	foreign map[string]string
	read    int // entries read in this pass
	// plain: the bid is written as is in any document's JSON (ASCII, no '/', which some
	// encoders escape), so a document without it is not of the batch.
	plain bool
}

// AuditBatch lists up to limit pending jids of batch bid, sorted: with which "foreign", those
// running on a node that is not exq (on its busy list: Sidekiq and Exq record nothing in a
// batch, so such a job stays pending when it ends), or seen running there by an exq node
// (ForeignWatch); with "unaccounted", those in no queue,
// backup list, busy list, schedule, retry or dead set: run by such a node, or lost. It looks
// for at most AuditMaxPending pending jobs and only reads, in pages. A job moves while the
// pages are read (a queue, a backup list, the retry set, a queue again), so a job not found
// is looked for a second time, and a job that succeeded meanwhile is dropped: a job is
// reported when two passes found it nowhere and it is still pending.
func AuditBatch(ctx context.Context, st *store.Store, bid, which string, limit int) ([]string, error) {
	op := "exq: api: batch " + bid + " " + which + " jobs"
	if ok, err := st.BatchExists(ctx, bid); err != nil || !ok {
		if err == nil {
			err = ErrBatchNotFound
		}
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	jids, err := st.BatchMembers(ctx, bid, "pending", AuditMaxPending)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	a := &audit{st: st, bid: bid, left: map[string]bool{}, foreign: map[string]string{},
		plain: !strings.ContainsFunc(bid, func(r rune) bool { return r > 0x7e || r == '/' })}
	for _, jid := range jids {
		if !strings.HasPrefix(jid, "batch:") { // a child batch is no job
			a.left[jid] = true
		}
	}
	for pass := 0; pass < 2 && len(a.left) > 0; pass++ {
		if err := a.pass(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if err := a.dropSettled(ctx, a.left); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	found := a.left
	if which == "foreign" {
		found = map[string]bool{}
		for jid := range a.foreign {
			found[jid] = true
		}
		marks, err := st.ForeignMarks(ctx, bid, false) // seen by a node's ForeignWatch
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		for jid := range marks {
			found[jid] = true
		}
		if err := a.dropSettled(ctx, found); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	out := make([]string, 0, len(found))
	for jid := range found {
		out = append(out, jid)
	}
	slices.Sort(out)
	return out[:min(len(out), limit)], nil
}

// dropSettled removes from jids those no longer pending (they succeeded meanwhile).
func (a *audit) dropSettled(ctx context.Context, jids map[string]bool) error {
	list := make([]string, 0, len(jids))
	for jid := range jids {
		list = append(list, jid)
	}
	for s := 0; s < len(list); s += auditPage {
		page := list[s:min(s+auditPage, len(list))]
		pending, err := a.st.StillPending(ctx, a.bid, page)
		if err != nil {
			return err
		}
		for i, p := range pending {
			if !p {
				delete(jids, page[i])
			}
		}
	}
	return nil
}

// pass strikes from a.left every job it finds: on the busy list of a node that is not exq
// (noted as foreign; an exq node's running jobs are in its backup lists), in a queue or a
// backup list, in the schedule, retry or dead set.
func (a *audit) pass(ctx context.Context) error {
	a.read = 0
	ids, infos, err := a.st.NodeInfos(ctx)
	if err != nil {
		return err
	}
	exq := map[string]bool{}
	for i, id := range ids {
		exq[id] = wire.Runtime(infos[i]["info"]) == "exq"
	}
	ids, busy, err := a.st.NodeBusy(ctx)
	if err != nil {
		return err
	}
	for i, id := range ids {
		if exq[id] {
			continue
		}
		for _, v := range busy[i] {
			if jid := a.strike(BusyPayload(v)); jid != "" {
				a.foreign[jid] = id
			}
		}
	}
	lists, err := a.st.AuditLists(ctx, AuditMaxLists)
	if err != nil {
		return err
	}
	for _, key := range lists {
		for start := int64(0); len(a.left) > 0; start += auditPage {
			docs, err := a.st.ListPage(ctx, key, start, auditPage)
			if err != nil {
				return err
			}
			if err := a.strikeAll(docs); err != nil {
				return err
			}
			if len(docs) < auditPage {
				break
			}
		}
	}
	for _, key := range a.st.AuditSets() {
		for cursor := uint64(0); len(a.left) > 0; {
			docs, next, err := a.st.SetPage(ctx, key, cursor, auditPage)
			if err != nil {
				return err
			}
			if err := a.strikeAll(docs); err != nil {
				return err
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return nil
}

func (a *audit) strikeAll(docs []string) error {
	if a.read += len(docs); a.read > AuditMaxEntries {
		return fmt.Errorf("more than %d jobs to look through", AuditMaxEntries)
	}
	for _, d := range docs {
		a.strike(d)
	}
	return nil
}

// strike removes doc's jid from a.left, and returns it, when doc is a job of the batch that
// was still to be found.
func (a *audit) strike(doc string) string {
	if a.plain && !strings.Contains(doc, a.bid) { // most documents: no need to decode them
		return ""
	}
	var j struct {
		JID string `json:"jid"`
		Bid string `json:"bid"`
	}
	if json.Unmarshal([]byte(doc), &j) != nil || j.Bid != a.bid || !a.left[j.JID] {
		return ""
	}
	delete(a.left, j.JID)
	return j.JID
}

// BusyPayload is the job document of a busy list's value (its "payload", double-encoded as
// Exq and Sidekiq write it, or an object), or "" when it has none.
func BusyPayload(v string) string {
	var w struct {
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal([]byte(v), &w) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(w.Payload, &s) == nil {
		return s
	}
	return string(w.Payload)
}
