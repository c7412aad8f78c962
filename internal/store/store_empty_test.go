package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Calls given nothing to do answer with nothing and write nothing.
func TestEmptyInputsWriteNothing(t *testing.T) {
	v := newEnv(t)
	jq := v.store("n1")
	c := ctx(t)
	now := time.Unix(1796010415, 0)
	for name, call := range map[string]func() (any, error){
		"EnqueueAll":      func() (any, error) { return jq.EnqueueAll(c, nil) },
		"EnqueueGroup":    func() (any, error) { out, _, err := jq.EnqueueGroup(c, nil); return out, err },
		"Fetch":           func() (any, error) { r, err := jq.Fetch(c, nil, time.Minute, 0); return r.Jobs, err },
		"PushRelayed":     func() (any, error) { return jq.PushRelayed(c, time.Minute, nil) },
		"AckMany":         func() (any, error) { return jq.AckMany(c, nil) },
		"Requeue":         func() (any, error) { return jq.Requeue(c, "q", nil) },
		"QueueSizes":      func() (any, error) { return jq.QueueSizes(c, nil) },
		"OldestJobs":      func() (any, error) { return jq.OldestJobs(c, nil) },
		"MembersAt":       func() (any, error) { return jq.MembersAt(c, DeadSet, nil) },
		"RemoveFromQueue": func() (any, error) { return jq.RemoveFromQueue(c, "q", true, nil) },
		"KillSet":         func() (any, error) { return jq.KillSet(c, RetrySet, now, time.Hour, 1, nil) },
		"RequeueSet":      func() (any, error) { return jq.RequeueSet(c, RetrySet, nil) },
		"MoveDue":         func() (any, error) { return jq.MoveDue(c, RetrySet, now, 10) },
		"QueueUses":       func() (any, error) { return jq.QueueUses(c, nil, nil) },
		"PublishLimits":   func() (any, error) { return jq.PublishLimits(c, nil) },
		"BatchMembers":    func() (any, error) { return jq.BatchMembers(c, "b", "jobs", 10) },
		"LoadCron":        func() (any, error) { return jq.LoadCron(c) },
		"LiveNodes":       func() (any, error) { return jq.LiveNodes(c) },
		"UndeclaredBeats": func() (any, error) { return jq.UndeclaredBeats(c) },
		"StaleNodes":      func() (any, error) { s, _, err := jq.StaleNodes(c, time.Minute, time.Minute, 0); return s, err },
		"FlushStats":      func() (any, error) { return nil, jq.FlushStats(c, "b", time.Minute, nil, nil, now) },
		"StopWaiting":     func() (any, error) { return nil, jq.StopWaiting(c, nil) },
		"TrimIndex":       func() (any, error) { _, n, err := jq.TrimIndex(c, BatchIndex, 0, 10); return n, err },
		"GoneNodes":       func() (any, error) { g, _, err := jq.GoneNodes(c, 0, 10); return g, err },
	} {
		out, err := call()
		assert.NoError(t, err, name)
		assert.Empty(t, out, name)
	}
	assert.Equal(t, map[string]string{"stat_flush:n1": "string"}, v.layout(), "only the marker of the empty flush")
}
