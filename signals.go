package exq

import (
	"encoding/json"
	"strings"
)

// handleSignal acts on one signal from the node's signals list (WIRE.md §1): TSTP quiets the
// node, TERM quiets it and asks the application to stop it (Done), CANCEL:{"jid":…} cancels
// that running job.
func (e *Exq) handleSignal(sig string) {
	switch {
	case sig == "TSTP":
		e.log.Info("exq: TSTP signal: quiet, fetching no more jobs")
		e.Quiet()
	case sig == "TERM":
		e.log.Info("exq: TERM signal: quiet, and asking the application to stop this node (Done)")
		e.Quiet()
		e.requestStop()
	case strings.HasPrefix(sig, "CANCEL:"):
		var body struct {
			JID string `json:"jid"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(sig, "CANCEL:")), &body); err != nil || body.JID == "" {
			e.log.Warn("exq: ignoring a CANCEL signal without a jid", "signal", sig)
			return
		}
		if e.mgr.cancelJID(body.JID) {
			e.log.Info("exq: CANCEL signal: cancelled a running job", "jid", body.JID)
		} else {
			e.log.Info("exq: CANCEL signal for a job not running here", "jid", body.JID)
		}
	default:
		e.log.Warn("exq: ignoring an unknown signal", "signal", sig)
	}
}

// Quiet makes the node fetch no more jobs, as Sidekiq's TSTP does; running jobs finish and
// the node reports "quiet" to the UIs. It returns once no fetch can take a job any more (it
// waits for a fetch under way). It cannot be undone; Stop the node when it is idle.
func (e *Exq) Quiet() {
	if e.mgr.goQuiet() && e.events.has() {
		e.events.emit(Event{Kind: NodeQuiet})
	}
}

// Done is closed when this node has been asked to stop: by the end of the ctx given to Start
// (which also stops it), by a TERM signal (from Sidekiq's Web UI, Exq's UI or the admin API)
// or by a call to Stop. A program waits on Done and then calls Stop, which stops the node or
// waits for the stop already under way to end:
//
//	<-e.Done()
//	return e.Stop(context.Background())
func (e *Exq) Done() <-chan struct{} { return e.done }

func (e *Exq) requestStop() { e.doneOnce.Do(func() { close(e.done) }) }
