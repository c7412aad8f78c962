package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Sidekiq 8 tells the two forms of a job timestamp apart by the type Ruby's JSON parser gives
// the number (api.rb 8.1.7:29 calculate_latency and 577 time_from_timestamp, job_retry.rb
// 8.1.7:211 time_for: `is_a?(Float)` = old float seconds, else integer milliseconds).
func TestJobTimestampsAreReadInTheUnitTheirFormSays(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 26, 55, 667000000, time.UTC)
	for _, tc := range []struct {
		literal string
		unit    TimeUnit
		want    time.Time
	}{
		{"1796164015.667", Seconds, at},                                // Sidekiq 7 (Time.now.to_f)
		{"1796164015.667948", Seconds, at.Add(948 * time.Microsecond)}, // exq, Exq
		{"1796164015667", Millis, at},                                  // Sidekiq 8 now_in_millis (job_util.rb 8.1.7:65-66)
		{"1796164015.0", Seconds, at.Truncate(time.Second)},            // Ruby renders a whole Float with ".0"
		{"1.796164015667e9", Seconds, at},                              // Jason (Exq) may use an exponent
		{"1796164015667.0", Seconds, time.Unix(1796164015667, 0)},      // a Float is seconds, whatever its size
	} {
		got, unit, ok := ParseStamp(tc.literal)
		require.True(t, ok, tc.literal)
		assert.Equal(t, tc.unit, unit, tc.literal)
		assert.True(t, tc.want.Equal(got), "%s: got %s, want %s", tc.literal, got, tc.want)
		h, err := DecodeHeader(`{"class":"C","args":[],"enqueued_at":` + tc.literal + `}`)
		require.NoError(t, err)
		assert.True(t, tc.want.Equal(h.EnqueuedAt.Stamp()), "%s in a header", tc.literal)
	}
	for _, bad := range []string{"", `"1796164015.667"`, "null", "true", "0", "0.0"} {
		_, _, ok := ParseStamp(bad)
		assert.False(t, ok, "%q", bad)
	}
}

func TestStampsAreWrittenInTheUnitAsked(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 26, 55, 667948000, time.UTC)
	assert.Equal(t, "1796164015.667948", FormatStamp(at, Seconds))
	assert.Equal(t, "1796164015667", FormatStamp(at, Millis))
	j := NewJob{Class: "C", Args: []byte("[]"), Queue: "q", JID: "j", EnqueuedAt: at, CreatedAt: at, Unit: Millis}
	assert.Equal(t, `{"class":"C","args":[],"queue":"q","jid":"j","enqueued_at":1796164015667,"created_at":1796164015667,"retry":0}`, j.Encode())
}

// A rewrite takes the unit of the document's own timestamps, so one job never mixes units.
func TestStampUnitIsTheDocumentsOwn(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		def  TimeUnit
		want TimeUnit
	}{
		{`{"class":"C","created_at":1796164015667,"enqueued_at":1796164015668}`, Seconds, Millis},
		{`{"class":"C","created_at":1796164015.667,"enqueued_at":1796164015.668}`, Millis, Seconds},
		{`{"class":"C","created_at":1796164015.667,"enqueued_at":1796164016000,"failed_at":1796164015900}`, Seconds, Millis},
		{`{"class":"C","enqueued_at":null,"created_at":1796164015667}`, Seconds, Millis},
		{`{"class":"C"}`, Millis, Millis},
		{`{"class":"C"}`, Seconds, Seconds},
	} {
		o, err := ParseObject(tc.doc)
		require.NoError(t, err)
		assert.Equal(t, tc.want, o.StampUnit(tc.def), tc.doc)
	}
}
