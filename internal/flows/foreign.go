package flows

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// ForeignRun is a job of a batch or workflow seen running on a node that is not exq.
type ForeignRun struct {
	JID, Class, Queue string
	// Node is the node's identity and Runtime what runs it ("Sidekiq" or "Exq").
	Node, Runtime string
	// Batch and Workflow are the job's batch and workflow ids, "" where none.
	Batch, Workflow string
}

// The watch's memory bounds: the nodes whose runtime it remembers and the jids it has
// reported; past either, it starts again empty (a jid may then be reported once more).
const (
	maxWatchedNodes  = 10000
	maxReportedRuns  = 10000
	foreignRunNotice = "exq: a job of a batch or workflow runs on a node that is not exq: it will record nothing there, so the batch will count it pending and the workflow will not release its dependents; keep these queues to exq nodes"
)

// ForeignWatch notices, as they run, jobs of batches and workflows that Sidekiq or Exq nodes
// run (they record nothing in a batch or workflow). A node calls Check at each ping with the
// members of the processes set its ping's prune read; it reads the info of nodes it has not
// seen before (a node's runtime does not change) and the busy lists of the nodes that are not
// exq: an all-exq fleet costs nothing more. Each job found of an existing batch or workflow
// is logged once as a warning, reported once (Report), and noted in Redis with its batch or
// workflow (Store.MarkForeign), where the admin API reads it after the run has ended. A job
// that starts and ends between two pings is not seen here: the audit (AuditBatch) finds
// those.
type ForeignWatch struct {
	Store  *store.Store
	Log    *slog.Logger
	Report func(ForeignRun) // nil: no events
	// runtimes: node → runtime, of the nodes whose info was read; reported: jids reported.
	runtimes map[string]string
	reported map[string]bool
}

// Check looks once at the busy lists of the nodes that are not exq among ids (the processes
// set's members).
func (w *ForeignWatch) Check(ctx context.Context, ids []string) error {
	if w.runtimes == nil || len(w.runtimes) > maxWatchedNodes {
		w.runtimes = map[string]string{}
	}
	if w.reported == nil || len(w.reported) > maxReportedRuns {
		w.reported = map[string]bool{}
	}
	var unknown, foreign []string
	for _, id := range ids {
		if _, ok := w.runtimes[id]; !ok && id != w.Store.Node() {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		infos, err := w.Store.NodeInfoOf(ctx, unknown)
		if err != nil {
			return err
		}
		for i, info := range infos {
			if info != "" { // a node without info yet is read again at the next ping
				w.runtimes[unknown[i]] = wire.Runtime(info)
			}
		}
	}
	for _, id := range ids {
		if rt, ok := w.runtimes[id]; ok && rt != "exq" {
			foreign = append(foreign, id)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	busy, err := w.Store.BusyOf(ctx, foreign)
	if err != nil {
		return err
	}
	for i, node := range foreign {
		for _, v := range busy[i] {
			if r, ok := flowJobOf(BusyPayload(v)); ok && !w.reported[r.JID] {
				r.Node, r.Runtime = node, w.runtimes[node]
				w.reported[r.JID] = true
				w.report(ctx, r)
			}
		}
	}
	return nil
}

// report notes r with its batch and workflow and, when either is one of exq's (a Sidekiq Pro
// batch's job carries a "bid" too), warns and reports it.
func (w *ForeignWatch) report(ctx context.Context, r ForeignRun) {
	known := false
	for _, f := range []struct {
		id       string
		workflow bool
	}{{r.Batch, false}, {r.Workflow, true}} {
		if f.id == "" {
			continue
		}
		ok, err := w.Store.MarkForeign(ctx, f.id, f.workflow, r.JID, r.Node)
		if err != nil {
			w.Log.Debug("exq: could not note a foreign run", "jid", r.JID, "error", err)
			ok = true // warn anyway
		}
		known = known || ok
	}
	if !known {
		return
	}
	w.Log.Warn(foreignRunNotice, "jid", r.JID, "class", r.Class, "queue", r.Queue, "node", r.Node,
		"runtime", r.Runtime, "batch", r.Batch, "workflow", r.Workflow)
	if w.Report != nil {
		w.Report(r)
	}
}

// flowJobOf reads a job document's jid, class, queue, batch and workflow; ok is false for a
// job of neither.
func flowJobOf(doc string) (ForeignRun, bool) {
	if !strings.Contains(doc, `"bid"`) && !strings.Contains(doc, `"wfid"`) {
		return ForeignRun{}, false
	}
	var j struct {
		JID, Class, Queue string
		Bid               string `json:"bid"`
		Workflow          string `json:"wfid"`
	}
	if json.Unmarshal([]byte(doc), &j) != nil || j.JID == "" || (j.Bid == "" && j.Workflow == "") {
		return ForeignRun{}, false
	}
	return ForeignRun{JID: j.JID, Class: j.Class, Queue: j.Queue, Batch: j.Bid, Workflow: j.Workflow}, true
}
