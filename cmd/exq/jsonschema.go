package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/textsafe"
)

// The --json schema (docs/operating.md, "JSON output"): snake_case keys, times as RFC 3339 in UTC (absent
// when unknown), durations as milliseconds. Every command prints one of these, a list of
// them, or a small object saying what it did.

// ts is t for JSON: nil (left out) when zero, else in UTC; null when RFC 3339 cannot write it
// (a year past 9999 or before 0: one stored 1e12 must not empty the whole output).
func ts(t time.Time) *textsafe.Time { return textsafe.TimeOf(t) }

// ms is d as (fractional) milliseconds.
func ms(d time.Duration) textsafe.Float { return textsafe.Float(float64(d.Microseconds()) / 1000) }

// jobJSON is one job, wherever it is.
type jobJSON struct {
	JID          string          `json:"jid"`
	Class        string          `json:"class"`
	Queue        string          `json:"queue"`
	Args         json.RawMessage `json:"args"`
	RetryCount   int             `json:"retry_count"`
	MaxRetries   int             `json:"max_retries"`
	ErrorClass   string          `json:"error_class,omitempty"`
	ErrorMessage string          `json:"error_message,omitempty"`
	Backtrace    []string        `json:"error_backtrace,omitempty"` // exq job only
	EnqueuedAt   *textsafe.Time  `json:"enqueued_at,omitempty"`
	CreatedAt    *textsafe.Time  `json:"created_at,omitempty"`
	FailedAt     *textsafe.Time  `json:"failed_at,omitempty"`
	RetriedAt    *textsafe.Time  `json:"retried_at,omitempty"`
	// At is the job's time in a set: due (retry, schedule) or died (dead).
	At  *textsafe.Time `json:"at,omitempty"`
	Raw string         `json:"raw"`
	// RawBase64 is the stored document byte for byte when it is not valid UTF-8 (which JSON
	// strings cannot hold: raw then has U+FFFD in place of each bad byte).
	RawBase64   string `json:"raw_base64,omitempty"`
	DecodeError string `json:"decode_error,omitempty"`
	// ArgsError says why args is null although the job has some: nested deeper than JSON
	// output allows (raw holds them as they are), or, in a listing, a document larger than
	// maxListedRaw.
	ArgsError string `json:"args_error,omitempty"`
	// RawBytes is the stored document's size when a listing cut raw (and its other strings)
	// to maxListedRaw: exq job JID --json prints it whole.
	RawBytes int `json:"raw_bytes,omitempty"`
}

// maxListedRaw bounds each job a --json listing prints (jobs, retries, scheduled, dead,
// busy): a larger document is listed with raw cut to it, its strings cut to maxListedField,
// args null and raw_bytes its size; exq job JID --json prints it whole. Ten 8 MB jobs would
// otherwise make one page of a listing 160 MB.
const (
	maxListedRaw   = 64 << 10
	maxListedField = 4 << 10
)

// toListedJobJSON is r as a --json listing prints it: as toJobJSON, within maxListedRaw.
func toListedJobJSON(r exq.JobRecord) jobJSON {
	out := toJobJSON(r)
	if len(r.Raw) <= maxListedRaw {
		return out
	}
	out.RawBytes = len(r.Raw)
	out.Raw = cutBytes(r.Raw, maxListedRaw)
	if out.RawBase64 != "" {
		out.RawBase64 = base64.StdEncoding.EncodeToString([]byte(r.Raw[:maxListedRaw]))
	}
	if out.DecodeError == "" {
		out.Args = json.RawMessage("null")
		out.ArgsError = fmt.Sprintf("the job is %d bytes, more than the %d a listing prints; exq job %s --json prints it whole",
			len(r.Raw), maxListedRaw, cutBytes(out.JID, maxListedField))
	}
	for _, f := range []*string{&out.JID, &out.Class, &out.Queue, &out.ErrorClass, &out.ErrorMessage, &out.DecodeError} {
		*f = cutBytes(*f, maxListedField)
	}
	return out
}

// cutBytes is s cut to at most n bytes, not inside a UTF-8 sequence.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// maxJSONDepth is how deep a document may nest to be embedded in --json output as JSON:
// encoding/json refuses more than 10 000 levels, and one such job made the whole output fail.
const maxJSONDepth = 1000

// embeddable returns raw when it can be embedded in the output as JSON, or null and why not.
func embeddable(raw json.RawMessage) (json.RawMessage, string) {
	if d := textsafe.Depth(raw); d > maxJSONDepth {
		return json.RawMessage("null"), fmt.Sprintf("nested %d levels deep, more than the %d that --json embeds; see raw", d, maxJSONDepth)
	}
	if !json.Valid(raw) {
		return json.RawMessage("null"), "not valid JSON; see raw"
	}
	return raw, ""
}

func toJobJSON(r exq.JobRecord) jobJSON {
	out := jobJSON{Raw: r.Raw, At: ts(r.At), Args: json.RawMessage("null")}
	if !utf8.ValidString(r.Raw) {
		out.RawBase64 = base64.StdEncoding.EncodeToString([]byte(r.Raw))
	}
	j, err := r.Job()
	if err != nil {
		out.DecodeError = err.Error()
		return out
	}
	out.JID, out.Class, out.Queue = j.JID, j.Class, j.Queue
	out.Args, out.ArgsError = embeddable(j.Args)
	out.RetryCount, out.MaxRetries = j.RetryCount, j.MaxRetries
	out.ErrorClass, out.ErrorMessage = j.ErrorClass, j.ErrorMessage
	out.EnqueuedAt, out.CreatedAt, out.FailedAt, out.RetriedAt = ts(j.EnqueuedAt), ts(j.CreatedAt), ts(j.FailedAt), ts(j.RetriedAt)
	return out
}

// backtrace reads a job's error_backtrace (a list, or Sidekiq's compressed string).
func backtrace(raw string) []string {
	var doc struct {
		Backtrace json.RawMessage `json:"error_backtrace"`
	}
	if json.Unmarshal([]byte(raw), &doc) != nil || len(doc.Backtrace) == 0 || string(doc.Backtrace) == "null" {
		return nil
	}
	lines, err := exq.DecodeBacktrace(doc.Backtrace)
	if err != nil {
		return []string{"(unreadable error_backtrace: " + err.Error() + ")"}
	}
	return lines
}

// processJSON is one live node.
type processJSON struct {
	Identity    string         `json:"identity"`
	Runtime     string         `json:"runtime"`
	Hostname    string         `json:"hostname"`
	PID         int            `json:"pid"`
	Queues      []string       `json:"queues"`
	Concurrency int            `json:"concurrency"`
	Busy        int            `json:"busy"`
	Quiet       bool           `json:"quiet"`
	StartedAt   *textsafe.Time `json:"started_at,omitempty"`
	Beat        *textsafe.Time `json:"beat,omitempty"`
	RTTMS       textsafe.Float `json:"rtt_ms"`
	RSSKB       int64          `json:"rss_kb"`
}

func toProcessJSON(p exq.Process) processJSON {
	qs := p.Queues
	if qs == nil {
		qs = []string{}
	}
	return processJSON{Identity: p.Identity, Runtime: p.Runtime, Hostname: p.Hostname, PID: p.PID, Queues: qs,
		Concurrency: p.Concurrency, Busy: p.Busy, Quiet: p.Quiet, StartedAt: ts(p.StartedAt), Beat: ts(p.Beat),
		RTTMS: ms(p.RTT), RSSKB: p.RSSKB}
}

// busyJSON is one running job.
type busyJSON struct {
	Node  string         `json:"node"`
	RunID string         `json:"run_id"`
	Queue string         `json:"queue"`
	RunAt *textsafe.Time `json:"run_at,omitempty"`
	// Progress is what the job last reported (exq.SetProgress); absent when none.
	Progress *progressJSON `json:"progress,omitempty"`
	Job      jobJSON       `json:"job"`
}

// progressJSON is a running job's progress: the fraction done (0 to 1) and its message.
type progressJSON struct {
	Fraction textsafe.Float `json:"fraction"`
	Message  string         `json:"message"`
}

func toProgressJSON(p *exq.Progress) *progressJSON {
	if p == nil {
		return nil
	}
	return &progressJSON{Fraction: textsafe.Float(p.Fraction), Message: p.Message}
}

// statsJSON is the overview.
type statsJSON struct {
	Processed int64 `json:"processed"`
	Failed    int64 `json:"failed"`
	Busy      int   `json:"busy"`
	Processes int   `json:"processes"`
	Enqueued  int64 `json:"enqueued"`
	Retries   int64 `json:"retries"`
	Scheduled int64 `json:"scheduled"`
	Dead      int64 `json:"dead"`
}

// queueJSON is one queue's state.
type queueJSON struct {
	Queue       string `json:"queue"`
	Size        int64  `json:"size"`
	Paused      bool   `json:"paused"`
	GlobalLimit int    `json:"global_limit"`
	InUse       int64  `json:"in_use"`
	Rate        int    `json:"rate"`
	RatePerMS   int64  `json:"rate_per_ms"`
	Started     int64  `json:"started"`
}

// periodicJSON is one periodic job.
type periodicJSON struct {
	Name         string          `json:"name"`
	Spec         string          `json:"spec"`
	Queue        string          `json:"queue"`
	Class        string          `json:"class"`
	Args         json.RawMessage `json:"args"`
	Description  string          `json:"description,omitempty"`
	Enabled      bool            `json:"enabled"`
	LastEnqueued *textsafe.Time  `json:"last_enqueued,omitempty"`
	Next         *textsafe.Time  `json:"next,omitempty"`
	Problem      string          `json:"problem,omitempty"`
}

func toPeriodicJSON(s exq.PeriodicState) periodicJSON {
	args, why := embeddable(s.Args)
	if len(s.Args) > maxListedRaw {
		args, why = json.RawMessage("null"), fmt.Sprintf("are %d bytes, more than the %d --json prints", len(s.Args), maxListedRaw)
	}
	if why != "" && s.Problem == "" {
		s.Problem = "args " + why
	}
	return periodicJSON{Name: s.Name, Spec: s.Spec, Queue: s.Queue, Class: s.Class, Args: args, Description: s.Description,
		Enabled: s.Enabled, LastEnqueued: ts(s.LastEnqueued), Next: ts(s.Next), Problem: s.Problem}
}

// runJSON is one enqueue of a periodic job.
type runJSON struct {
	JID      string         `json:"jid"`
	Enqueued *textsafe.Time `json:"enqueued_at,omitempty"`
}

// outboxJSON is `exq outbox status --json`: what the outbox relays (module exqpg) last
// reported. The age is the oldest row's at the report: both times are on the Redis clock.
type outboxJSON struct {
	Reported    bool           `json:"reported"`
	Backlog     int64          `json:"backlog"`
	Failed      int64          `json:"failed"`
	OldestAt    *textsafe.Time `json:"oldest_at,omitempty"`
	OldestAgeMS textsafe.Float `json:"oldest_age_ms"`
	UpdatedAt   *textsafe.Time `json:"updated_at,omitempty"`
	Stale       bool           `json:"stale"`
	// Invalid names each stored field that could not be read (left out of the others).
	Invalid []string `json:"invalid,omitempty"`
}

func toOutboxJSON(s exq.OutboxStatus, stale bool) outboxJSON {
	out := outboxJSON{Reported: s.Reported, Backlog: s.Backlog, Failed: s.Failed,
		OldestAt: ts(s.OldestAt), UpdatedAt: ts(s.UpdatedAt), Stale: stale, Invalid: s.Invalid}
	if !s.OldestAt.IsZero() && !s.UpdatedAt.IsZero() {
		out.OldestAgeMS = ms(max(s.UpdatedAt.Sub(s.OldestAt), 0))
	}
	return out
}
