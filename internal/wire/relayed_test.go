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

// An unlocks_at past year 9999 is clamped to LatestTime, never wrapped: 1e300 seconds does not
// fit an int64, and its conversion once gave a time in the past, a lock of one millisecond.
func TestReadRelayedClampsAnUnlocksAtPastYear9999(t *testing.T) {
	for _, raw := range []string{"1e300", "9.3e18", "253402300800"} {
		r, err := ReadRelayed(`{"class":"W","args":[],"queue":"q","jid":"j","unique_token":"t","unlocks_at":` + raw + `}`)
		require.NoError(t, err, raw)
		assert.True(t, r.UnlocksAt.Equal(LatestTime.Truncate(time.Second)), "%s: unlocks at %s", raw, r.UnlocksAt)
	}
}
