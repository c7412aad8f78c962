package wire

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The parts around jid and enqueued_at put back together with the same values give the
// document, whatever the fields hold (escapes, both units, unique fields, metadata).
func TestDebouncePartsSplitTheDocumentAroundJIDAndEnqueuedAt(t *testing.T) {
	at := time.Unix(1796010415, 667948000)
	for _, j := range []NewJob{
		{Class: "W", Args: json.RawMessage(`[]`), Queue: "default", JID: "j1", EnqueuedAt: at, CreatedAt: at},
		{Class: "Foo::\"Bar\"", Args: json.RawMessage(`[{"jid":"x","enqueued_at":1}]`), Queue: "q\u00e9", JID: "a\"b\\c\u2028",
			EnqueuedAt: at, CreatedAt: at, Unit: Millis, Retry: 3, Meta: [][2]string{{DebounceField, "k"}},
			Unique: &Unique{For: time.Minute, Until: "success", Token: "t", UnlocksAt: at}},
		{Class: "W", Args: json.RawMessage(`[1]`), Queue: "default", JID: "j1", EnqueuedAt: time.Unix(5, 0), CreatedAt: at},
	} {
		doc := j.Encode()
		head, tail, err := j.DebounceParts(doc)
		require.NoError(t, err)
		assert.Equal(t, doc, head+string(AppendQuote(nil, j.JID))+`,"enqueued_at":`+FormatStamp(j.EnqueuedAt, j.Unit)+tail)
		assert.True(t, json.Valid([]byte(head+`"other","enqueued_at":1`+tail)), "another jid and time make valid JSON")
	}
	_, _, err := NewJob{Class: "W", Args: json.RawMessage(`[]`), Queue: "q", JID: "j"}.DebounceParts(`{"class":"W"}`)
	assert.Error(t, err, "a document of another layout")
}
