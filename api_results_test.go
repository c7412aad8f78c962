package exq

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// API.Results reads the results a workflow's steps stored, cut at the limit on a rune
// boundary with their whole size; a step that stored none has no entry, and a result key that
// holds no string is skipped without holding back the others.
func TestAPIResultsReadsTheStartOfEachStoredResult(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.start(Options{Queues: []Queue{{Name: "q"}}})
	long := strings.Repeat("é", 3000) // 6000 bytes of runes of two bytes
	require.NoError(t, e.Register("Long", TypedResult(func(context.Context, *Job, sumArgs) (string, error) { return long, nil })))
	require.NoError(t, e.Register("Small", TypedResult(func(context.Context, *Job, sumArgs) (map[string]int, error) {
		return map[string]int{"rows": 3}, nil
	})))
	require.NoError(t, e.Register("None", WorkerFunc(func(context.Context, *Job) error { return nil })))
	w, err := e.EnqueueWorkflow(context.Background(), WorkflowOptions{}, []WorkflowJob{
		{Name: "long", Queue: "q", Class: "Long", Args: []any{sumArgs{}}},
		{Name: "small", Queue: "q", Class: "Small", Args: []any{sumArgs{}}, DependsOn: []string{"long"}},
		{Name: "none", Queue: "q", Class: "None", DependsOn: []string{"small"}}})
	require.NoError(t, err)
	st := waitWorkflow(t, e, w.ID)
	jid := map[string]string{}
	var jids []string
	for _, j := range st.Jobs {
		jid[j.Name] = j.JID
		jids = append(jids, j.JID)
	}
	// A key where a result would be that holds a hash: refused by Redis for that job alone.
	require.NoError(t, v.rdb.HSet(context.Background(), v.keys.Result("hostile"), "f", "v").Err())
	jids = append([]string{"hostile"}, jids...)

	got, err := e.API().Results(context.Background(), jids, 101)
	require.NoError(t, err)
	require.Len(t, got, 2, "long and small; none stored nothing, hostile is no result")
	l := got[jid["long"]]
	assert.Equal(t, len(long)+2, l.Size, "the whole JSON string's length")
	assert.True(t, l.Truncated())
	assert.Equal(t, `"`+strings.Repeat("é", 50), l.JSON, "101 bytes cut back to a rune boundary")
	assert.True(t, utf8.ValidString(l.JSON))
	s := got[jid["small"]]
	assert.Equal(t, StoredResult{JSON: `{"rows":3}`, Size: 10}, s)
	assert.False(t, s.Truncated())

	got, err = e.API().Results(context.Background(), []string{jid["long"]}, 0)
	require.NoError(t, err)
	assert.Equal(t, `"`+strings.Repeat("é", DefaultResultShown/2-1), got[jid["long"]].JSON,
		"no limit: DefaultResultShown bytes, less the half rune at the end")
	// The node stops first: its stats flush writes keys of its own at any time (a loaded run
	// once flushed between the two listings).
	require.NoError(t, e.Stop(context.Background()))
	keys := v.rdb.Keys(context.Background(), v.ns+":*").Val()
	got, err = e.API().Results(context.Background(), []string{"nobody"}, 10)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.ElementsMatch(t, keys, v.rdb.Keys(context.Background(), v.ns+":*").Val(), "reading wrote nothing")
}
