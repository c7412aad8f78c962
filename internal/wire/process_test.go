package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNodeInfoAcceptsThePIDAsANumberOrAString(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       int
	}{
		{"Sidekiq and exq write a number", `{"hostname":"h","pid":13122,"queues":["default"]}`, 13122},
		{"Exq writes a string", `{"hostname":"h","pid":"4242","queues":["default"]}`, 4242},
		{"a string that is no number", `{"hostname":"h","pid":"#PID<0.1.2>","queues":["default"]}`, 0},
		{"null", `{"hostname":"h","pid":null,"queues":["default"]}`, 0},
		{"missing", `{"hostname":"h","queues":["default"]}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n NodeInfo
			require.NoError(t, json.Unmarshal([]byte(tc.info), &n))
			assert.Equal(t, tc.want, n.PID)
			assert.Equal(t, "h", n.Hostname, "the other fields decode as usual")
			assert.Equal(t, []string{"default"}, n.Queues)
		})
	}
}

func TestNodeInfoEncodesTagAndLabelsAsSidekiqDoes(t *testing.T) {
	got := NodeInfo{Hostname: "h", Identity: "h:1:ab", PID: 1, Tag: "billing", Labels: []string{"exq-go"}}.Encode()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(got), &m))
	assert.Equal(t, "billing", m["tag"])
	assert.Equal(t, []any{"exq-go"}, m["labels"])
	assert.EqualValues(t, 1, m["pid"], "a number, as Sidekiq writes it")
	var back NodeInfo
	require.NoError(t, json.Unmarshal([]byte(got), &back))
	assert.Equal(t, 1, back.PID)
	assert.Equal(t, []string{"exq-go"}, back.Labels)
}
