package web

import (
	"net/http"
	"time"

	"github.com/exqgo/exq"
)

// keysData is a queue's keys page: its top keys by jobs waiting (exq.API.Keys).
type keysData struct {
	Name   string
	Report exq.KeysReport
	Rows   []keyRow
	Sample int // how many members of each key set one read takes
}

// keyRow is one key of the page.
type keyRow struct {
	Key                       string
	Waiting, Running, Delayed int64
	State                     string
	Until                     time.Time // when its limit frees it (blocked)
}

// keys shows the keys of a queue with the most jobs waiting, with pause and resume buttons.
func (h *handler) keys(w http.ResponseWriter, r *http.Request) {
	name := pathName(r, "name")
	rep, err := h.api.Keys(r.Context(), name, exq.KeysOptions{Limit: 100})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := keysData{Name: name, Report: rep, Sample: exq.KeySample}
	for _, k := range rep.Keys {
		row := keyRow{Key: k.Key, Waiting: k.Waiting, Running: k.Running, Delayed: k.Delayed, State: k.State}
		if k.BlockedUntil != nil {
			row.Until = *k.BlockedUntil
		}
		d.Rows = append(d.Rows, row)
	}
	h.render(w, r, http.StatusOK, "keys.html", "queues", "Keys of "+name, d)
}

// keyControl pauses or resumes the key named by the form's "key" field (a key may hold any
// character, so it is not put in the path).
func (h *handler) keyControl(w http.ResponseWriter, r *http.Request) {
	name, key := pathName(r, "name"), r.PostFormValue("key")
	var err error
	done := "kpaused"
	if r.PathValue("op") == "resume" {
		err, done = h.api.ResumeKey(r.Context(), name, key), "kresumed"
	} else if r.PathValue("op") == "pause" {
		err = h.api.PauseKey(r.Context(), name, key)
	} else {
		h.errorPage(w, r, http.StatusBadRequest, "There is no such action.")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.redirect(w, r, "/queues/"+pathSeg(name)+"/keys", done, 0)
}
