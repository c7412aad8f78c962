package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// NewJob is what an enqueue writes: exactly the fields of WIRE.md §2, in its order.
type NewJob struct {
	Class      string
	Args       json.RawMessage // a JSON array, already validated
	Queue      string
	JID        string
	EnqueuedAt time.Time
	CreatedAt  time.Time
	Retry      int
	// Unique is set for unique jobs; it adds Exq's four unique fields.
	Unique *Unique
}

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
	var b strings.Builder
	b.Grow(96 + len(j.Class) + len(j.Args) + len(j.Queue) + len(j.JID))
	b.WriteString(`{"class":`)
	b.Write(Quote(j.Class))
	b.WriteString(`,"args":`)
	b.Write(j.Args)
	b.WriteString(`,"queue":`)
	b.Write(Quote(j.Queue))
	b.WriteString(`,"jid":`)
	b.Write(Quote(j.JID))
	b.WriteString(`,"enqueued_at":`)
	b.WriteString(FormatTime(j.EnqueuedAt))
	b.WriteString(`,"created_at":`)
	b.WriteString(FormatTime(j.CreatedAt))
	b.WriteString(`,"retry":`)
	b.WriteString(strconv.Itoa(j.Retry))
	if u := j.Unique; u != nil {
		b.WriteString(`,"unique_for":`)
		b.WriteString(strconv.FormatFloat(u.For.Seconds(), 'f', -1, 64))
		b.WriteString(`,"unique_until":`)
		b.Write(Quote(u.Until))
		b.WriteString(`,"unique_token":`)
		b.Write(Quote(u.Token))
		b.WriteString(`,"unlocks_at":`)
		b.WriteString(FormatTime(u.UnlocksAt))
	}
	b.WriteByte('}')
	return b.String()
}

// Quote returns s as a JSON string. Unlike json.Marshal it leaves <, > and & alone, so text
// reaches Ruby and Elixir readers exactly as the caller wrote it.
func Quote(s string) []byte {
	b, _ := Marshal(s) // a string always encodes
	return b
}

// Marshal is json.Marshal without HTML escaping and without the trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Header is the part of a job document the engine needs to run it. Args stay raw until a
// worker asks for them: decoding them for every job would cost more than the rest together.
type Header struct {
	Class        string          `json:"class"`
	Queue        string          `json:"queue"`
	JID          string          `json:"jid"`
	Args         json.RawMessage `json:"args"`
	Retry        json.RawMessage `json:"retry"`
	RetryCount   *float64        `json:"retry_count"`
	EnqueuedAt   *float64        `json:"enqueued_at"`
	CreatedAt    *float64        `json:"created_at"`
	FailedAt     *float64        `json:"failed_at"`
	RetriedAt    *float64        `json:"retried_at"`
	ErrorMessage *string         `json:"error_message"`
	ErrorClass   *string         `json:"error_class"`
	UniqueUntil  LenientString   `json:"unique_until"`
	UniqueToken  LenientString   `json:"unique_token"`
}

// LenientString reads a JSON string and ignores any other value, so that an odd optional
// field never turns a runnable job into a poison message.
type LenientString string

// UnmarshalJSON keeps strings and ignores everything else.
func (l *LenientString) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*l = LenientString(s)
	}
	return nil
}

// ErrPoison is wrapped by DecodeHeader for documents that can never run.
var ErrPoison = errors.New("undecodable job")

// DecodeHeader reads the engine's fields of a raw job. A document that is not a JSON object,
// has no class, or has args that are not a list is a poison message (ErrPoison).
func DecodeHeader(raw string) (Header, error) {
	var h Header
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return h, fmt.Errorf("%w: %v", ErrPoison, err)
	}
	if h.Class == "" {
		return h, fmt.Errorf("%w: no class", ErrPoison)
	}
	a := bytes.TrimSpace(h.Args)
	switch {
	case len(a) == 0 || string(a) == "null":
		h.Args = json.RawMessage("[]")
	case a[0] != '[':
		return h, fmt.Errorf("%w: args is not a JSON array", ErrPoison)
	}
	return h, nil
}

// MaxRetries interprets the retry field: an integer is the limit, true means nodeMax, and
// false, 0, null, a missing field or anything else means no retries (Exq).
func (h Header) MaxRetries(nodeMax int) int {
	r := bytes.TrimSpace(h.Retry)
	switch string(r) {
	case "true":
		return nodeMax
	case "", "false", "null":
		return 0
	}
	f, err := strconv.ParseFloat(string(r), 64)
	if err != nil || f < 1 || f != float64(int64(f)) {
		return 0
	}
	return int(f)
}

// Count returns the retry count (0 before the first failure).
func (h Header) Count() int {
	if h.RetryCount == nil || *h.RetryCount < 0 {
		return 0
	}
	return int(*h.RetryCount)
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

// SetString sets field k to the JSON string s.
func (o *Object) SetString(k, s string) { o.set(k, Quote(s)) }

// SetInt sets field k to n.
func (o *Object) SetInt(k string, n int) { o.set(k, json.RawMessage(strconv.Itoa(n))) }

// SetTime sets field k to t in float epoch seconds.
func (o *Object) SetTime(k string, t time.Time) { o.set(k, json.RawMessage(FormatTime(t))) }

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
