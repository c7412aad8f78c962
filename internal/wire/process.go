package wire

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// NodeInfo is the "info" field of a node's hash (WIRE.md §3): the union of what Exq's UI and
// Sidekiq 6's Web UI read. Tag and Labels are what Sidekiq's Busy page shows next to a process
// (Sidekiq writes its -g tag and its labels there).
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
}

// Encode renders the info JSON.
func (n NodeInfo) Encode() string {
	if n.Labels == nil {
		n.Labels = []string{}
	}
	if n.Queues == nil {
		n.Queues = []string{}
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
// job as a string (double-encoded, as Exq and Sidekiq 6 write it) and run_at whole seconds.
func Busy(queue, raw string, runAt time.Time, host, runID string) string {
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
	b.WriteByte('}')
	return b.String()
}
