package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exq job shows the durable steps a job saved, escaped (a name or value written by another
// hand may hold a terminal escape or a line break), cut, and in --json.
func TestJobShowsTheStepsTheJobSaved(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t)
	ctx := context.Background()
	jid := "stepped"
	doc := `{"class":"Shop.Checkout","args":[1],"queue":"q","jid":"stepped","retry":0,"retry_count":1,"error_message":"boom","error_class":"E","failed_at":1700000000.0}`
	require.NoError(t, c.rdb.ZAdd(ctx, c.ns+":dead", redis.Z{Score: 1700000000, Member: doc}).Err())
	long := `"` + strings.Repeat("x", 5000) + `"`
	require.NoError(t, c.rdb.HSet(ctx, c.ns+":steps:"+jid, "charge", `"ch_1001"`, "evil\nname", "\"\x1b[31mred\"", "long", long).Err())

	code, out, errOut := c.run("job", jid)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "STEPS      3 steps saved\n")
	assert.Contains(t, out, "  charge = \"ch_1001\"\n")
	assert.Contains(t, out, `  evil\x0aname = "\x1b[31mred"`+"\n", "escaped")
	assert.NotContains(t, out, "\x1b")
	assert.Regexp(t, `(?m)^  long = "x+… \(cut: 5002 bytes\)$`, out)

	var shown struct {
		Steps []struct {
			Name      string `json:"name"`
			Result    string `json:"result"`
			Bytes     int    `json:"bytes"`
			Truncated bool   `json:"truncated"`
		} `json:"steps"`
		StepsTotal int `json:"steps_total"`
	}
	c.json(&shown, "job", jid)
	require.Len(t, shown.Steps, 3)
	assert.Equal(t, 3, shown.StepsTotal)
	assert.Equal(t, "charge", shown.Steps[0].Name)
	assert.Equal(t, `"ch_1001"`, shown.Steps[0].Result)
	assert.Equal(t, "long", shown.Steps[2].Name)
	assert.True(t, shown.Steps[2].Truncated)
	assert.Equal(t, 5002, shown.Steps[2].Bytes)
	assert.Len(t, shown.Steps[2].Result, maxShownStep)
	var v any
	c.json(&v, "job", jid)
	checkSchema(t, "job", v)

	// A job that saved none has no steps keys.
	require.NoError(t, c.rdb.Del(ctx, c.ns+":steps:"+jid).Err())
	_, out, _ = c.run("job", jid, "--json")
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	assert.NotContains(t, m, "steps")
	assert.NotContains(t, m, "steps_total")
}
