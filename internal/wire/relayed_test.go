package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadRelayedNamesWhatAJobDocumentLacks(t *testing.T) {
	for _, tc := range []struct {
		name, doc, jid, wantErr string
	}{
		{"not JSON", `{"class":`, "", "not a job"},
		{"no jid", `{"class":"W","args":[],"queue":"q"}`, "", "no jid"},
		{"no class", `{"args":[],"queue":"q","jid":"j"}`, "", "no class"},
		{"unique without unlocks_at", `{"class":"W","args":[],"queue":"q","jid":"j","unique_token":"t"}`, "j", "no unlocks_at"},
		{"unlocks_at not a number", `{"class":"W","args":[],"queue":"q","jid":"j","unique_token":"t","unlocks_at":"soon"}`, "j", "not a positive number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ReadRelayed(tc.doc)
			require.ErrorContains(t, err, tc.wantErr)
			assert.Equal(t, tc.jid, r.JID, "the jid as soon as it is read")
		})
	}
}

func TestReadRelayedReadsAUniqueJobsLock(t *testing.T) {
	r, err := ReadRelayed(`{"class":"W","args":[1],"queue":"mail","jid":"j","unique_token":"t","unlocks_at":1896010415.5}`)
	require.NoError(t, err)
	assert.Equal(t, Relayed{JID: "j", Class: "W", Queue: "mail", UniqueToken: "t", UnlocksAt: r.UnlocksAt}, r)
	assert.True(t, r.UnlocksAt.Equal(time.Unix(1896010415, 500000000)), "unlocks at %s", r.UnlocksAt)
}
