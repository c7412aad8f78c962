package exq

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A periodic job whose stored times RFC 3339 cannot write encodes with those times null, not
// as an error: an application serving the API's values as JSON keeps working.
func TestPeriodicStateAndRunEncodeFarTimesAsNull(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	b, err := json.Marshal(PeriodicState{Name: "n", Args: json.RawMessage(`[]`), LastEnqueued: time.Unix(1e12, 0), Next: at})
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"n","spec":"","queue":"","class":"","args":[],"enabled":false,"last_enqueued":null,"next":"2024-01-02T03:04:05Z"}`, string(b))
	b, err = json.Marshal([]PeriodicRun{{JID: "a", Enqueued: time.Unix(-1e12, 0)}, {JID: "b", Enqueued: at}})
	require.NoError(t, err)
	assert.JSONEq(t, `[{"jid":"a","enqueued":null},{"jid":"b","enqueued":"2024-01-02T03:04:05Z"}]`, string(b))
}
