package wire

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// NodeInfo is the "info" field of a node's hash (WIRE.md §3): the union of what Exq's UI and
// Sidekiq 6, 7 and 8's Web UIs read. Tag and Labels are what Sidekiq's Busy page shows next to a
// process (Sidekiq writes its -g tag and its labels there). Version, Weights and Embedded are
// what Sidekiq 7 and 8 add (launcher.rb to_data); Sidekiq 8.1.2 and later no longer write
// concurrency here but in the node hash's own "concurrency" field.
type NodeInfo struct {
	Hostname    string   `json:"hostname"`
	Identity    string   `json:"identity"`
	StartedAt   float64  `json:"started_at"`
	PID         int      `json:"pid"`
	Tag         string   `json:"tag"`
	Labels      []string `json:"labels"`
	Queues      []string `json:"queues"`
	Concurrency int      `json:"concurrency"`
	Busy        int      `json:"busy"`
	Quiet       bool     `json:"quiet"`
	Version     string   `json:"version"`
	// Weights is Sidekiq 7's list of capsule weights, one {"queue": weight} object per capsule
	// (weight 0: strict order); Encode writes one capsule, WeightsOf(Queues).
	Weights  json.RawMessage `json:"weights,omitempty"`
	Embedded bool            `json:"embedded"`
	// Capsules is Sidekiq 8's {"name": {"concurrency": n, "mode": …, "weights": {…}}}; exq
	// reads it (a Sidekiq 8.0 or 8.1 node's concurrency) and writes none.
	Capsules map[string]Capsule `json:"capsules,omitempty"`
}

// Capsule is one of a Sidekiq 8 process' capsules, as its info field lists them.
type Capsule struct {
	Concurrency int `json:"concurrency"`
}

// WeightsOf renders Sidekiq 7's weights for one capsule serving queues in this order, each
// with weight 0 (no weighting; exq gives each queue its own concurrency instead):
// [{"critical":0,"default":0}]. Sidekiq's Busy page lists them as the process' queues.
func WeightsOf(queues []string) json.RawMessage {
	b := []byte("[{")
	for i, q := range queues {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendQuote(b, q)
		b = append(b, ":0"...)
	}
	return append(b, "}]"...)
}

// TotalConcurrency is the process' concurrency from its info alone: the info's concurrency,
// or for a Sidekiq 8 node, which writes none there, the sum over its capsules.
func (n NodeInfo) TotalConcurrency() int {
	if n.Concurrency > 0 || len(n.Capsules) == 0 {
		return n.Concurrency
	}
	total := 0
	for _, c := range n.Capsules {
		total += c.Concurrency
	}
	return total
}

// Encode renders the info JSON.
func (n NodeInfo) Encode() string {
	if n.Labels == nil {
		n.Labels = []string{}
	}
	if n.Queues == nil {
		n.Queues = []string{}
	}
	if n.Weights == nil {
		n.Weights = WeightsOf(n.Queues)
	}
	b, _ := json.Marshal(n) // strings, numbers and bools always encode
	return string(b)
}

// UnmarshalJSON reads an info field written by any runtime. Exq writes pid as a string (the OS
// pid, "12345"), Sidekiq and exq as a number: both are accepted. A pid that is neither (or not
// an integer) leaves PID 0 without failing the rest.
func (n *NodeInfo) UnmarshalJSON(b []byte) error {
	type plain NodeInfo // without this method, so the fields decode as usual
	aux := struct {
		*plain
		PID json.RawMessage `json:"pid"`
	}{plain: (*plain)(n)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	n.PID = 0
	pid := strings.TrimSpace(string(aux.PID))
	if len(pid) >= 2 && pid[0] == '"' {
		var s string
		if json.Unmarshal(aux.PID, &s) != nil {
			return nil
		}
		pid = strings.TrimSpace(s)
	}
	if v, err := strconv.Atoi(pid); err == nil {
		n.PID = v
	}
	return nil
}

// Busy renders one running job for a node's workers hash (WIRE.md §4): the payload is the raw
// job as a string (double-encoded, as Exq and Sidekiq 6 write it) and run_at whole seconds;
// with the job's progress when p is not nil.
func Busy(queue, raw string, runAt time.Time, host, runID string, p *Progress) string {
	var b strings.Builder
	b.WriteString(`{"queue":`)
	b.Write(Quote(queue))
	b.WriteString(`,"payload":`)
	b.Write(Quote(raw))
	b.WriteString(`,"run_at":`)
	b.WriteString(strconv.FormatInt(runAt.Unix(), 10))
	b.WriteString(`,"host":`)
	b.Write(Quote(host))
	b.WriteString(`,"pid":`)
	b.Write(Quote(runID))
	if p != nil {
		appendProgress(&b, p)
	}
	b.WriteByte('}')
	return b.String()
}

// Runtime tells which runtime wrote a node's info field: "exq" (this library), "Exq" or
// "Sidekiq". exq and Exq write busy and quiet into it (Sidekiq does not); Exq writes its pid
// as a JSON string, exq as a number.
func Runtime(info string) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(info), &fields) != nil {
		return "Sidekiq"
	}
	_, busy := fields["busy"]
	_, quiet := fields["quiet"]
	switch pid := fields["pid"]; {
	case !busy || !quiet:
		return "Sidekiq"
	case len(pid) > 0 && pid[0] == '"':
		return "Exq"
	}
	return "exq"
}
