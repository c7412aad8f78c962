package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// NewJob is what an enqueue writes: exactly the fields of WIRE.md §2, in its order.
type NewJob struct {
	Class      string
	Args       json.RawMessage // a JSON array, already validated
	Queue      string
	JID        string
	EnqueuedAt time.Time
	CreatedAt  time.Time
	// Unit is how enqueued_at and created_at are written: Seconds (Exq, Sidekiq 6 and 7) or
	// Millis (Sidekiq 8). unlocks_at, Exq's own field, stays in seconds.
	Unit  TimeUnit
	Retry int
	// Unique is set for unique jobs; it adds Exq's four unique fields.
	Unique *Unique
	// Meta are extra top-level string fields (trace context such as "traceparent"), written
	// last, in order. Exq and Sidekiq keep fields they do not know.
	Meta [][2]string
	// Bid is the batch the job belongs to ("bid", Sidekiq Pro's field), "" for none.
	Bid string
	// Workflow is the workflow the job belongs to ("wfid", exq's own), "" for none; WorkflowJob
	// is its name there ("wf_job") and WorkflowParents the names and jids of the jobs it waits
	// for ("wf_parents": {"name": "jid", …}), so that it can read their results.
	Workflow, WorkflowJob string
	WorkflowParents       [][2]string
	// CallbackOf is, for a batch's callback job, the batch ("callback_bid", exq's own).
	CallbackOf string
	// ExpiresAt is when the job expires if it has not started ("expires_at", float seconds
	// as Sidekiq Pro's expiring jobs write it); zero for never.
	ExpiresAt time.Time
	// Key is the job's key ("exq_key", exq's own; docs/keys.md), "" for none.
	Key string
}

// reserved are the top-level fields Exq, Sidekiq or exq give a meaning: not metadata.
var reserved = map[string]bool{
	"class": true, "args": true, "queue": true, "jid": true, "enqueued_at": true, "created_at": true, "retry": true,
	"retry_count": true, "error_message": true, "error_class": true, "failed_at": true, "retried_at": true,
	"error_backtrace": true, "backtrace": true, "unique_for": true, "unique_until": true, "unique_token": true,
	"unlocks_at": true, "at": true, "wrapped": true, "dead": true, "retry_queue": true, "bid": true, "tags": true,
	"processor": true, "finished_at": true, "discarded_at": true, "wfid": true, "wf_job": true, "wf_parents": true,
	"callback_bid": true, "expires_at": true, KeyField: true,
}

// KeyField is the job field that holds a keyed job's key (docs/keys.md).
const KeyField = "exq_key"

// Reserved reports whether a top-level field of a job has a meaning to Exq, Sidekiq or exq.
func Reserved(field string) bool { return reserved[field] }

// Unique holds the lock settings of a unique job, as Exq writes them.
type Unique struct {
	For       time.Duration // unique_for, written in seconds
	Until     string        // unique_until: "success", "start" or "expiry"
	Token     string        // unique_token
	UnlocksAt time.Time     // unlocks_at = enqueued_at + unique_for
}

// Encode renders the job as the byte-exact document of WIRE.md §2:
// {"class":…,"args":…,"queue":…,"jid":…,"enqueued_at":…,"created_at":…,"retry":…}.
func (j NewJob) Encode() string {
	b := make([]byte, 0, 160+len(j.Class)+len(j.Args)+len(j.Queue)+len(j.JID))
	b = append(b, `{"class":`...)
	b = AppendQuote(b, j.Class)
	b = append(b, `,"args":`...)
	b = append(b, j.Args...)
	b = append(b, `,"queue":`...)
	b = AppendQuote(b, j.Queue)
	b = append(b, `,"jid":`...)
	b = AppendQuote(b, j.JID)
	b = append(b, `,"enqueued_at":`...)
	b = AppendStamp(b, j.EnqueuedAt, j.Unit)
	b = append(b, `,"created_at":`...)
	b = AppendStamp(b, j.CreatedAt, j.Unit)
	b = append(b, `,"retry":`...)
	b = strconv.AppendInt(b, int64(j.Retry), 10)
	if u := j.Unique; u != nil {
		b = append(b, `,"unique_for":`...)
		b = strconv.AppendFloat(b, u.For.Seconds(), 'f', -1, 64)
		b = append(b, `,"unique_until":`...)
		b = AppendQuote(b, u.Until)
		b = append(b, `,"unique_token":`...)
		b = AppendQuote(b, u.Token)
		b = append(b, `,"unlocks_at":`...)
		b = AppendTime(b, u.UnlocksAt)
	}
	if j.Bid != "" {
		b = append(b, `,"bid":`...)
		b = AppendQuote(b, j.Bid)
	}
	if j.CallbackOf != "" {
		b = append(b, `,"callback_bid":`...)
		b = AppendQuote(b, j.CallbackOf)
	}
	if j.Key != "" {
		b = append(b, `,"exq_key":`...)
		b = AppendQuote(b, j.Key)
	}
	if j.Workflow != "" {
		b = append(b, `,"wfid":`...)
		b = AppendQuote(b, j.Workflow)
		b = append(b, `,"wf_job":`...)
		b = AppendQuote(b, j.WorkflowJob)
		if len(j.WorkflowParents) > 0 {
			b = append(b, `,"wf_parents":{`...)
			for i, p := range j.WorkflowParents {
				if i > 0 {
					b = append(b, ',')
				}
				b = AppendQuote(b, p[0])
				b = append(b, ':')
				b = AppendQuote(b, p[1])
			}
			b = append(b, '}')
		}
	}
	if !j.ExpiresAt.IsZero() {
		b = append(b, `,"expires_at":`...)
		b = AppendTime(b, j.ExpiresAt)
	}
	for _, m := range j.Meta {
		b = append(b, ',')
		b = AppendQuote(b, m[0])
		b = append(b, ':')
		b = AppendQuote(b, m[1])
	}
	b = append(b, '}')
	// b is never written again, so the string can share its bytes (as strings.Builder does):
	// a copy per enqueued job saved.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Quote returns s as a JSON string. Unlike json.Marshal it leaves <, > and & alone, so text
// reaches Ruby and Elixir readers exactly as the caller wrote it.
func Quote(s string) []byte {
	b, _ := Marshal(s) // a string always encodes
	return b
}

// encoders reuses encoders and their buffers: Marshal runs for every enqueued job.
var encoders = sync.Pool{New: func() any {
	e := &pooledEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

type pooledEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// Marshal is json.Marshal without HTML escaping and without the trailing newline.
func Marshal(v any) ([]byte, error) {
	e := encoders.Get().(*pooledEncoder)
	defer encoders.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimRight(e.buf.Bytes(), "\n")), nil
}

// Header is the part of a job document the engine needs to run it. Args stay raw until a
// worker asks for them: decoding them for every job would cost more than the rest together.
type Header struct {
	Class        string
	Queue        string
	JID          string
	Args         string // the JSON array as it stands in the document ("[]" when absent)
	Retry        string // the field's JSON text, "" when absent
	RetryCount   Number
	EnqueuedAt   Number
	CreatedAt    Number
	FailedAt     Number
	RetriedAt    Number
	ErrorMessage *string
	ErrorClass   *string
	UniqueUntil  string
	UniqueToken  string
	// Bid is the job's batch ("bid"), Workflow and WorkflowJob its workflow and name there
	// ("wfid", "wf_job"); "" when absent or not strings.
	Bid, Workflow, WorkflowJob string
	// Key is the job's key ("exq_key"; docs/keys.md), "" when absent or not a string.
	Key string
	// ExpiresAt is "expires_at", when the job expires if it has not started (Expiry reads it).
	ExpiresAt Number
}

// Expiry reads "expires_at": float seconds since the epoch, as Sidekiq Pro writes it; an
// integer past 1e11 is read as milliseconds (no seconds value is that large before year
// 5138, and a Sidekiq 8 style writer would use them). Absent, zero, negative or not finite
// gives the zero time: no expiry.
func (n Number) Expiry() time.Time {
	switch {
	case !n.OK || !(n.V > 0) || math.IsInf(n.V, 0):
		return time.Time{}
	case n.Int && n.V >= 1e11:
		return time.UnixMilli(int64(n.V))
	}
	return ParseTime(n.V)
}

// Number is a numeric field of a job: OK is false when the field is absent or not a number.
// Int is set when the literal had neither fraction nor exponent: for a timestamp, that makes it
// integer milliseconds (Sidekiq 8) rather than float seconds (StampUnitOf). (A value rather
// than a pointer: DecodeHeader runs for every job, and each pointer was an allocation.)
type Number struct {
	V   float64
	OK  bool
	Int bool
}

// Stamp reads the number as a job timestamp: integer milliseconds or float seconds, as Sidekiq
// 8 tells them apart. Absent, zero or non-finite gives the zero time.
func (n Number) Stamp() time.Time {
	switch {
	case !n.OK:
		return time.Time{}
	case n.Int && !math.IsInf(n.V, 0):
		return time.UnixMilli(int64(n.V))
	}
	return ParseTime(n.V)
}

// ErrPoison is wrapped by DecodeHeader for documents that can never run.
var ErrPoison = errors.New("undecodable job")

// DecodeHeader reads the engine's fields of a raw job. A document that is not a JSON object,
// has no string class, or has args that are not a list is a poison message (ErrPoison). Field
// names match exactly, as in Ruby and Elixir ("CLASS" is not "class"), and an optional field
// of an unexpected type is ignored rather than making the job poison. It validates and reads
// the document in one pass without reflection: it runs for every job.
func DecodeHeader(raw string) (Header, error) {
	var h Header
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		if !Valid(raw) {
			return h, syntaxPoison(raw)
		}
		return h, fmt.Errorf("%w: not a JSON object", ErrPoison)
	}
	var class, args string
	if i = skipWS(raw, i+1); i < len(raw) && raw[i] == '}' {
		i++
	} else {
		for {
			if i >= len(raw) || raw[i] != '"' {
				return h, syntaxPoison(raw)
			}
			keyEnd, escaped := scanString(raw, i)
			if keyEnd < 0 {
				return h, syntaxPoison(raw)
			}
			key := stringAt(raw[i:keyEnd], escaped)
			if i = skipWS(raw, keyEnd); i >= len(raw) || raw[i] != ':' {
				return h, syntaxPoison(raw)
			}
			i = skipWS(raw, i+1)
			var end int
			if i < len(raw) && raw[i] == '"' {
				end, escaped = scanString(raw, i)
			} else {
				end, escaped = validValue(raw, i, 1), true // not a string: stringAt gives ""
			}
			if end < 0 {
				return h, syntaxPoison(raw)
			}
			v := raw[i:end]
			switch key {
			case "class":
				class = v
			case "args":
				args = v
			case "queue":
				h.Queue = stringAt(v, escaped)
			case "jid":
				h.JID = stringAt(v, escaped)
			case "retry":
				h.Retry = v
			case "retry_count":
				h.RetryCount = countOf(v)
			case "enqueued_at":
				h.EnqueuedAt = numberOf(v)
			case "created_at":
				h.CreatedAt = numberOf(v)
			case "failed_at":
				h.FailedAt = numberOf(v)
			case "retried_at":
				h.RetriedAt = numberOf(v)
			case "error_message":
				h.ErrorMessage = stringPtrOf(v)
			case "error_class":
				h.ErrorClass = stringPtrOf(v)
			case "unique_until":
				h.UniqueUntil = stringAt(v, escaped)
			case "unique_token":
				h.UniqueToken = stringAt(v, escaped)
			case "bid":
				h.Bid = stringAt(v, escaped)
			case "wfid":
				h.Workflow = stringAt(v, escaped)
			case "wf_job":
				h.WorkflowJob = stringAt(v, escaped)
			case "expires_at":
				h.ExpiresAt = numberOf(v)
			case KeyField:
				h.Key = stringAt(v, escaped)
			}
			if i = skipWS(raw, end); i < len(raw) && raw[i] == ',' {
				i = skipWS(raw, i+1)
				continue
			}
			if i < len(raw) && raw[i] == '}' {
				i++
				break
			}
			return h, syntaxPoison(raw)
		}
	}
	if skipWS(raw, i) != len(raw) {
		return h, syntaxPoison(raw)
	}
	if class == "" || class[0] != '"' {
		return h, fmt.Errorf("%w: no class", ErrPoison)
	}
	if h.Class = unquote(class); h.Class == "" {
		return h, fmt.Errorf("%w: no class", ErrPoison)
	}
	switch {
	case args == "" || args == "null":
		h.Args = "[]"
	case args[0] != '[':
		return h, fmt.Errorf("%w: args is not a JSON array", ErrPoison)
	default:
		h.Args = args
	}
	return h, nil
}

// syntaxPoison is the error for a document that is not valid JSON, with encoding/json's
// description of what is wrong.
func syntaxPoison(raw string) error {
	var v any
	err := json.Unmarshal([]byte(raw), &v)
	return fmt.Errorf("%w: %v", ErrPoison, err)
}

// unquote decodes a JSON string literal; "" for anything else.
func unquote(v string) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if body := v[1 : len(v)-1]; strings.IndexByte(body, '\\') < 0 {
		return body
	}
	var out string
	_ = json.Unmarshal([]byte(v), &out)
	return out
}

// stringAt is unquote for a literal scanString read: when it held no escape, its value is
// the bytes between its quotes.
func stringAt(v string, escaped bool) string {
	if !escaped && len(v) >= 2 && v[0] == '"' {
		return v[1 : len(v)-1]
	}
	return unquote(v)
}

func stringPtrOf(v string) *string {
	if len(v) == 0 || v[0] != '"' {
		return nil
	}
	s := unquote(v)
	return &s
}

func numberOf(v string) Number {
	if f, isInt, ok := plainDecimal(v); ok {
		return Number{V: f, OK: true, Int: isInt}
	}
	if len(v) == 0 || !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return Number{}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return Number{}
	}
	return Number{V: f, OK: true, Int: StampUnitOf(v) == Millis}
}

// MaxRetries interprets the retry field: an integer is the limit, true means nodeMax, and
// false, 0, null, a missing field or anything else means no retries (Exq).
func (h Header) MaxRetries(nodeMax int) int {
	r := strings.TrimSpace(h.Retry)
	switch r {
	case "true":
		return nodeMax
	case "", "false", "null":
		return 0
	}
	if n, ok := smallInt(r); ok { // the common case ("retry":25), without ParseFloat
		return n
	}
	f, err := strconv.ParseFloat(r, 64)
	if err != nil || f < 1 || f != float64(int64(f)) {
		return 0
	}
	return int(f)
}

// smallInt reads a number of at most nine decimal digits (no sign, point or exponent) as
// MaxRetries would through ParseFloat, without it: 0 means no retries.
func smallInt(r string) (int, bool) {
	if len(r) == 0 || len(r) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(r); i++ {
		if r[i] < '0' || r[i] > '9' {
			return 0, false
		}
		n = n*10 + int(r[i]-'0')
	}
	return n, true
}

// countOf reads retry_count as numberOf does, except that a number too large for a float64
// (1e400) is +Inf rather than absent: it is a count, and a huge one.
func countOf(v string) Number {
	if len(v) == 0 || !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return Number{}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !math.IsInf(f, 0) {
		return Number{}
	}
	return Number{V: f, OK: true, Int: StampUnitOf(v) == Millis}
}

// MaxCount is the largest retry count Count reports: one more failure still fits in an int.
const MaxCount = math.MaxInt - 1

// Count returns the retry count (0 before the first failure). A retry_count written by someone
// else is read as: a non-negative integer is the failures so far, capped at MaxCount (a count
// beyond any retry limit: the next failure is the last); a negative, fractional or non-numeric
// one, or null, is 0. Converting a float beyond the int range would give an arbitrary int
// (often the most negative), so the cap is applied first.
func (h Header) Count() int {
	if !h.RetryCount.OK {
		return 0
	}
	f := h.RetryCount.V
	switch {
	case math.IsNaN(f) || f < 0 || f != math.Trunc(f):
		return 0
	case f >= float64(MaxCount): // float64(MaxCount) rounds up to 2^63, the first float beyond int64
		return MaxCount
	}
	return int(f)
}

// Object is a job document parsed for a rewrite: fields keep their order and their exact bytes,
// so a retry or a death changes only the fields it sets, and Sidekiq's own fields (bid, tags,
// wrapped…) survive untouched.
type Object struct {
	keys []string
	vals map[string]json.RawMessage
}

// ParseObject parses a top-level JSON object, keeping field order and raw values.
func ParseObject(raw string) (*Object, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPoison, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrPoison)
	}
	o := &Object{vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPoison, err)
		}
		key, _ := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPoison, err)
		}
		o.set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPoison, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrPoison)
	}
	return o, nil
}

func (o *Object) set(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// Has reports whether field k is present and not null.
func (o *Object) Has(k string) bool {
	v, ok := o.vals[k]
	return ok && string(v) != "null"
}

// Get returns field k's raw value.
func (o *Object) Get(k string) (json.RawMessage, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// Delete removes field k (a stale error_backtrace).
func (o *Object) Delete(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

// SetString sets field k to the JSON string s.
func (o *Object) SetString(k, s string) { o.set(k, Quote(s)) }

// SetInt sets field k to n.
func (o *Object) SetInt(k string, n int) { o.set(k, json.RawMessage(strconv.Itoa(n))) }

// SetTime sets field k to t in float epoch seconds.
func (o *Object) SetTime(k string, t time.Time) { o.set(k, json.RawMessage(FormatTime(t))) }

// SetStamp sets job timestamp field k to t in unit u.
func (o *Object) SetStamp(k string, t time.Time, u TimeUnit) {
	o.set(k, json.RawMessage(FormatStamp(t, u)))
}

// stampFields are the job timestamps, in the order StampUnit consults them.
var stampFields = [...]string{"enqueued_at", "created_at", "failed_at", "retried_at"}

// StampUnit is the unit the document's timestamps are written in, so that a rewrite adds
// failed_at and retried_at in that unit and never gives one job mixed units: that of the first
// numeric field among enqueued_at, created_at, failed_at and retried_at (the enqueue times
// first: a Sidekiq 8 node that retried a Sidekiq 7 job wrote its enqueued_at anew in
// milliseconds). def when the document has none.
func (o *Object) StampUnit(def TimeUnit) TimeUnit {
	for _, k := range stampFields {
		if v, ok := o.vals[k]; ok {
			if _, u, ok := ParseStamp(string(v)); ok {
				return u
			}
		}
	}
	return def
}

// String renders the object with its fields in their original order, new fields last.
func (o *Object) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(Quote(k))
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.String()
}
