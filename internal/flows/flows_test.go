package flows

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
)

func jobs(deps ...string) []Job {
	var out []Job
	for _, d := range deps {
		name, parents, _ := strings.Cut(d, "<")
		j := Job{Name: name}
		if parents != "" {
			j.DependsOn = strings.Split(parents, ",")
		}
		out = append(out, j)
	}
	return out
}

func TestOrderPutsParentsFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		graph []Job
		want  []int
	}{
		{"a chain given backwards", jobs("c<b", "b<a", "a"), []int{2, 1, 0}},
		{"a diamond", jobs("a", "b<a", "c<a", "d<b,c"), []int{0, 1, 2, 3}},
		{"two roots", jobs("x", "y", "z<x,y"), []int{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order, index, err := Order("op", tc.graph)
			require.NoError(t, err)
			assert.Equal(t, tc.want, order)
			for i, j := range tc.graph {
				assert.Equal(t, i, index[j.Name])
			}
		})
	}
}

func TestOrderRefusesBadGraphsNamingTheJobs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		graph []Job
		want  string
	}{
		{"a cycle, named in run order from the first job", jobs("a<c", "b<a", "c<b"), `cycle: "a" → "b" → "c" → "a"`},
		{"a cycle behind a root", jobs("r", "x<r,y", "y<x"), `cycle: "x" → "y" → "x"`},
		{"an unknown parent", jobs("a<nope"), `job "a" depends on "nope", which is not a job of the workflow`},
		{"a job depending on itself", jobs("a<a"), `job "a" depends on itself`},
		{"a parent named twice", jobs("a", "b<a,a"), `job "b" names "a" twice in DependsOn`},
		{"a name used twice", jobs("a", "a"), `job name "a" is used twice`},
		{"an empty name", jobs(""), "job 0: name is empty"},
		{"a control character", jobs("a\nb"), `job 0: name "a\nb" holds a control character`},
		{"a long name", jobs(strings.Repeat("n", 201)), "is longer than 200 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Order("enqueue workflow", tc.graph)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalidWorkflow), "%v wraps ErrInvalidWorkflow", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestCheckIDRefusesIDsThatWouldMakeKeysAmbiguous(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"batch-1_a.b", true},
		{"a:b", false}, {"a b", false}, {"a*", false}, {"a?", false}, {"[a]", false}, {`a\b`, false},
		{"a\x7f", false}, {strings.Repeat("x", 200), true}, {strings.Repeat("x", 201), false},
		{"{a}", false}, {"a{b", false}, {"a}", false}, // a Cluster hash tag would move the keys' slot
		{"a\u0085", false}, {"a\u202eb", false}, {"a\u200b", false}, {"a\u00a0b", false}, // C1 control, bidi override, zero width, no-break space
		{"a\xff", false}, {"日本-1", true}, {"Ünïcode_ok.1", true},
	} {
		assert.Equal(t, tc.ok, CheckID(tc.id) == nil, "%q", tc.id)
	}
}

func TestItemsRecordBatchRunsAndWorkflowEndsOnly(t *testing.T) {
	batch := store.SettleItem{Batch: "b", Runs: [][2]string{{"j", store.RunFailed}}}
	for _, tc := range []struct {
		name         string
		bid, wf, out string
		want         []store.SettleItem
	}{
		{"a plain job", "", "", store.RunSucceeded, nil},
		{"a batch job's failure", "b", "", store.RunFailed, []store.SettleItem{batch}},
		{"a workflow job's failure is no end", "", "w", store.RunFailed, nil},
		{"a workflow job's death", "", "w", store.RunDied,
			[]store.SettleItem{{Workflow: "w", WorkflowJob: "n", Out: store.RunDied}}},
		{"a job of both", "b", "w", store.RunFailed, []store.SettleItem{batch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Items(tc.bid, tc.wf, "n", "j", tc.out))
		})
	}
}

func TestOutcomesLeaveOutWhatDidNothing(t *testing.T) {
	items := []store.SettleItem{{Batch: "b"}, {Batch: "b2"}, {Workflow: "w"}, {Workflow: "w2"}, {Workflow: "w3"}}
	replies := [][]any{
		{int64(1), "success", "complete"}, // fired two callbacks
		{int64(1)},                        // changed, fired nothing
		{int64(1), int64(2), int64(1), int64(1)},
		{int64(0), int64(0), int64(0), int64(0)}, // sent again: nothing
		nil,                                      // another caller of the group reports it
	}
	assert.Equal(t, []Outcome{
		{Batch: true, Fired: []string{"success", "complete"}},
		{Released: 2, Canceled: 1, Callback: "finished"},
	}, Outcomes(items, replies))
}

func TestParentJIDAndCallbackOfReadTheDocument(t *testing.T) {
	doc := `{"jid":"c","wf_parents":{"a":"ja","b":""},"callback_bid":"B"}`
	jid, ok := ParentJID(doc, "a")
	assert.True(t, ok)
	assert.Equal(t, "ja", jid)
	for _, p := range []string{"b", "zz"} {
		_, ok := ParentJID(doc, p)
		assert.False(t, ok, p)
	}
	_, ok = ParentJID(`not json`, "a")
	assert.False(t, ok)
	assert.Equal(t, "B", CallbackOf(doc))
	assert.Equal(t, "", CallbackOf(`{"callback_bid":3}`))
}
