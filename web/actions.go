package web

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/exqgo/exq"
)

// Every handler here answers a POST that ServeHTTP has already checked (not ReadOnly, CSRF
// token right, same origin), and ends in a redirect (303) to a page under the prefix.

// setAction runs now, deletes or kills the jobs ticked on a set's page (or the one job of a
// job's page): the form carries their Refs (digest and score), resolved here to the exact
// raw members, so each is moved or removed only if it is still there, byte for byte (a job
// that ran or moved meanwhile is skipped), whatever bytes it holds.
func (h *handler) setAction(s setInfo) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var n int
		var err error
		var done string
		op := r.PostFormValue("op")
		if op != "retry" && op != "delete" && (op != "kill" || !s.Kill) {
			h.errorPage(w, r, http.StatusBadRequest, "There is no such action.")
			return
		}
		refs, raws := splitRefs(r.PostForm["job"])
		found, err := h.api.ResolveRefs(r.Context(), s.Set, refs)
		raws = append(raws, found...)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		switch {
		case op == "retry":
			n, err = h.api.Requeue(r.Context(), s.Set, raws)
			done = "retried"
		case op == "delete":
			n, err = h.api.Remove(r.Context(), s.Set, raws, exq.RemoveOptions{})
			done = "deleted"
		case op == "kill" && s.Kill:
			n, err = h.api.Kill(r.Context(), s.Set, raws)
			done = "killed"
		default:
			h.errorPage(w, r, http.StatusBadRequest, "There is no such action.")
			return
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.redirect(w, r, "/"+s.Path, done, n)
	}
}

// splitRefs parts a form's job values into Refs (what the pages send) and raw documents (what
// pages of earlier versions sent, still taken byte for byte).
func splitRefs(vals []string) (refs, raws []string) {
	for _, v := range vals {
		if exq.IsRef(v) {
			refs = append(refs, v)
		} else {
			raws = append(raws, v)
		}
	}
	return refs, raws
}

// setAll runs, deletes or kills every job of a set (after the confirmation page).
func (h *handler) setAll(s setInfo) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		var n int
		var err error
		var done string
		switch op := r.PathValue("op"); {
		case op == "retry":
			n, err = h.api.RequeueAll(ctx, s.Set, nil)
			done = "retried"
		case op == "delete":
			var size int64
			if size, err = h.api.Size(ctx, s.Set); err == nil {
				err = h.api.Clear(ctx, s.Set)
			}
			n, done = int(size), "deleted"
		case op == "kill" && s.Kill:
			n, err = h.killAll(ctx, s.Set)
			done = "killed"
		default:
			h.errorPage(w, r, http.StatusNotFound, "There is no such action.")
			return
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.redirect(w, r, "/"+s.Path, done, n)
	}
}

// killAll moves every job that is in set s when it starts to the dead set, a page at a time
// from the soonest: jobs that enter the set later, after the last one seen at the start, stay.
func (h *handler) killAll(ctx context.Context, s exq.Set) (int, error) {
	list := h.api.Retries
	if s == exq.ScheduledSet {
		list = h.api.Scheduled
	}
	last, err := list(ctx, exq.ListOptions{Size: 1, Reverse: true})
	if err != nil || len(last) == 0 {
		return 0, err
	}
	limit := last[0].Score
	total := 0
	for {
		page, err := list(ctx, exq.ListOptions{Size: 500})
		if err != nil {
			return total, err
		}
		var raws []string
		for _, rec := range page {
			if rec.Score <= limit {
				raws = append(raws, rec.Raw)
			}
		}
		if len(raws) == 0 {
			return total, nil
		}
		n, err := h.api.Kill(ctx, s, raws)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// queueControl pauses or resumes a queue on every exq node.
func (h *handler) queueControl(w http.ResponseWriter, r *http.Request) {
	name := pathName(r, "name")
	var err error
	done := "paused"
	if strings.HasSuffix(r.URL.Path, "/resume") {
		err, done = h.api.ResumeQueue(r.Context(), name), "resumed"
	} else {
		err = h.api.PauseQueue(r.Context(), name)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.redirect(w, r, "/queues", done, 0)
}

// queueDelete deletes a queue and its waiting jobs (after the confirmation page).
func (h *handler) queueDelete(w http.ResponseWriter, r *http.Request) {
	if err := h.api.RemoveQueue(r.Context(), pathName(r, "name")); err != nil {
		h.fail(w, r, err)
		return
	}
	h.redirect(w, r, "/queues", "qdeleted", 0)
}

// queueJobsDelete deletes the waiting jobs ticked on a queue's page, by their Refs.
func (h *handler) queueJobsDelete(w http.ResponseWriter, r *http.Request) {
	name := pathName(r, "name")
	if r.PostFormValue("op") != "delete" {
		h.errorPage(w, r, http.StatusBadRequest, "There is no such action.")
		return
	}
	refs, raws := splitRefs(r.PostForm["job"])
	found, err := h.api.ResolveQueueRefs(r.Context(), name, refs)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	raws = append(raws, found...)
	n, err := h.api.RemoveJobs(r.Context(), name, raws, exq.RemoveOptions{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.redirect(w, r, "/queues/"+pathSeg(name), "deleted", n)
}

// nodeSignal sends quiet (TSTP) or stop (TERM) to one node, or to every live node with
// node "*", as Sidekiq Web's Quiet All and Stop All do.
func (h *handler) nodeSignal(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sig, done := "", ""
	switch r.PostFormValue("signal") {
	case "quiet":
		sig, done = "TSTP", "quieted"
	case "stop":
		sig, done = "TERM", "stopped"
	default:
		h.errorPage(w, r, http.StatusBadRequest, "There is no such signal.")
		return
	}
	nodes := []string{r.PostFormValue("node")}
	if b64 := r.PostFormValue("node64"); b64 != "" {
		// The identity's exact bytes: one that is not valid UTF-8 would not survive a form.
		b, err := base64.RawURLEncoding.DecodeString(b64)
		if err != nil {
			h.errorPage(w, r, http.StatusBadRequest, "The node field is not valid.")
			return
		}
		nodes[0] = string(b)
	}
	if nodes[0] == "*" {
		procs, err := h.api.Processes(ctx)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		nodes = nodes[:0]
		for _, p := range procs {
			nodes = append(nodes, p.Identity)
		}
	}
	for _, n := range nodes {
		if err := h.api.SendSignal(ctx, n, sig); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.redirect(w, r, "/busy", done, len(nodes))
}

// cancelJob asks the node running a job to cancel it.
func (h *handler) cancelJob(w http.ResponseWriter, r *http.Request) {
	jid := r.PostFormValue("jid")
	if b64 := r.PostFormValue("jid64"); b64 != "" {
		b, err := base64.RawURLEncoding.DecodeString(b64)
		if err != nil {
			h.errorPage(w, r, http.StatusBadRequest, "The jid field is not valid.")
			return
		}
		jid = string(b)
	}
	if _, err := h.api.CancelJob(r.Context(), jid); err != nil {
		h.fail(w, r, err)
		return
	}
	h.redirect(w, r, "/busy", "cancelled", 1)
}

// periodicAction enqueues a periodic job now, enables, disables or deletes it.
func (h *handler) periodicAction(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := pathName(r, "name")
	var err error
	var done string
	switch r.PathValue("op") {
	case "enqueue":
		_, err = h.api.EnqueuePeriodicNow(ctx, name)
		done = "enqueued"
	case "enable":
		err, done = h.api.EnablePeriodic(ctx, name), "enabled"
	case "disable":
		err, done = h.api.DisablePeriodic(ctx, name), "disabled"
	case "delete":
		err, done = h.api.DeletePeriodic(ctx, name), "pdeleted"
	default:
		h.errorPage(w, r, http.StatusNotFound, "There is no such action.")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	back := "/periodic/" + pathSeg(name)
	if done == "pdeleted" {
		back = "/periodic"
		r.PostForm.Del("back") // its page is gone
	}
	h.redirect(w, r, back, done, 0)
}
