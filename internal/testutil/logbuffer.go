package testutil

import (
	"bytes"
	"strings"
	"sync"
)

// LogBuffer is a log destination that a test reads while goroutines write to it: give it to
// slog.NewTextHandler or slog.NewJSONHandler. The zero value is ready.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Contains reports whether what was written so far contains sub.
func (l *LogBuffer) Contains(sub string) bool { return strings.Contains(l.String(), sub) }
