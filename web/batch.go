package web

import (
	"net/http"
	"sort"

	"github.com/exqgo/exq"
)

// flowsShown bounds the batches and workflows the list page shows.
const flowsShown = 50

func (h *handler) batches(w http.ResponseWriter, r *http.Request) {
	bs, err := h.api.Batches(r.Context(), exq.ListOptions{Size: flowsShown})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "batches.html", "batches", "Batches", bs)
}

// pendingShown bounds the pending jids the batch page lists.
const pendingShown = 100

type batchData struct {
	B       exq.BatchStatus
	Pending []string
	Dead    []string
	// With ?audit=1: the pending jobs run (or seen running) by Sidekiq or Exq nodes, and those
	// found nowhere. Audited says it ran: the audit reads every queue and set, so a page load
	// does not run it unasked.
	Audited              bool
	Foreign, Unaccounted []string
}

func (h *handler) batch(w http.ResponseWriter, r *http.Request) {
	bid := pathName(r, "bid")
	b, err := h.api.Batch(r.Context(), bid)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pending, err := h.api.BatchJobs(r.Context(), bid, "pending", pendingShown)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	dead, err := h.api.BatchJobs(r.Context(), bid, "dead", pendingShown)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sort.Strings(pending)
	sort.Strings(dead)
	data := batchData{B: b, Pending: pending, Dead: dead, Audited: r.URL.Query().Get("audit") == "1"}
	if data.Audited {
		if data.Foreign, err = h.api.BatchJobs(r.Context(), bid, "foreign", pendingShown); err == nil {
			data.Unaccounted, err = h.api.BatchJobs(r.Context(), bid, "unaccounted", pendingShown)
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.render(w, r, http.StatusOK, "batch.html", "batches", "Batch "+bid, data)
}
