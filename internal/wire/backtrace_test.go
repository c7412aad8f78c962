package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBacktraceLimitReadsTheFieldAsSidekiqDoes(t *testing.T) {
	for raw, want := range map[string]struct {
		limit int
		ok    bool
	}{
		"": {0, false}, "false": {0, false}, "null": {0, false},
		"true": {-1, true}, "5": {5, true}, "0": {0, true}, `"7"`: {7, true}, `"x"`: {0, true}, `{}`: {-1, true},
	} {
		limit, ok := BacktraceLimit(json.RawMessage(raw))
		assert.Equal(t, want.ok, ok, "backtrace %s", raw)
		assert.Equal(t, want.limit, limit, "backtrace %s", raw)
	}
}

func TestCompressBacktraceRoundTrips(t *testing.T) {
	lines := []string{"/app/w.go:12:in `main.work'", "/app/main.go:3:in `main.main'"}
	enc := CompressBacktrace(lines)
	got, err := DecompressBacktrace(Quote(enc))
	require.NoError(t, err)
	assert.Equal(t, lines, got)
	// Ruby's Base64.encode64 breaks lines every 60 characters; such values read back too.
	var wrapped string
	for i := 0; i < len(enc); i += 60 {
		wrapped += enc[i:min(i+60, len(enc))] + "\n"
	}
	got, err = DecompressBacktrace(Quote(wrapped))
	require.NoError(t, err)
	assert.Equal(t, lines, got)
}
