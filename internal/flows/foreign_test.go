package flows

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBusyPayloadReadsEveryRuntimesBusyValue(t *testing.T) {
	const doc = `{"class":"W","args":[],"queue":"q","jid":"j1","bid":"b1"}`
	for _, tc := range []struct{ name, value, want string }{
		{"double-encoded, as Sidekiq and Exq write it", `{"queue":"q","payload":"{\"class\":\"W\",\"args\":[],\"queue\":\"q\",\"jid\":\"j1\",\"bid\":\"b1\"}","run_at":1}`, doc},
		{"an object", `{"queue":"q","payload":` + doc + `}`, doc},
		{"no payload", `{"queue":"q"}`, ""},
		{"not JSON", `{"queue":`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, BusyPayload(tc.value)) })
	}
}

func TestFlowJobOfKeepsOnlyJobsOfABatchOrWorkflow(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      ForeignRun
		ok        bool
	}{
		{"a batch's job", `{"class":"W","queue":"q","jid":"j1","bid":"b1"}`, ForeignRun{JID: "j1", Class: "W", Queue: "q", Batch: "b1"}, true},
		{"a workflow's job", `{"class":"W","queue":"q","jid":"j2","wfid":"w1","wf_job":"a"}`, ForeignRun{JID: "j2", Class: "W", Queue: "q", Workflow: "w1"}, true},
		{"a plain job", `{"class":"W","queue":"q","jid":"j3"}`, ForeignRun{}, false},
		{"an empty bid", `{"class":"W","queue":"q","jid":"j4","bid":""}`, ForeignRun{}, false},
		{"no jid", `{"class":"W","queue":"q","bid":"b1"}`, ForeignRun{}, false},
		{"not JSON", `{"bid":`, ForeignRun{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := flowJobOf(tc.doc)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
