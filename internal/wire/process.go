package wire

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// NodeInfo is the "info" field of a node's hash (WIRE.md §3): the union of what Exq's UI and
// Sidekiq 6's Web UI read.
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
