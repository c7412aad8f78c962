package testutil

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The banner reaches a parent's stderr that is a regular file (go test ./interop > out 2> err),
// and what the parent writes there afterwards goes after it, not over it.
func TestTheSkipBannerReachesAParentsStderrFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "err")
	file, err := os.Create(path)
	require.NoError(t, err)
	defer file.Close()
	parent := exec.Command("sh", "-c", "read line; echo parent-after >&2")
	parent.Stderr = file
	stdin, err := parent.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, parent.Start())

	f := stderrOf(parent.Process.Pid)
	require.NotNil(t, f)
	_, err = io.WriteString(f, "banner\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, _ = io.WriteString(stdin, "go on\n")
	require.NoError(t, parent.Wait())

	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "banner\nparent-after\n", string(got))
}

func TestTheSkipBannerNamesWhatToInstallForEachReason(t *testing.T) {
	skips.mu.Lock()
	saved := skips.reason
	skips.reason = map[string]int{"interop tests need ruby (apt-get install ruby-sidekiq)": 3}
	skips.mu.Unlock()
	defer func() {
		skips.mu.Lock()
		skips.reason = saved
		skips.mu.Unlock()
	}()
	var b strings.Builder
	reportSkips(&b)
	assert.Contains(t, b.String(), "3 TEST(S) WERE SKIPPED")
	assert.Contains(t, b.String(), "3 skipped: interop tests need ruby (apt-get install ruby-sidekiq)")
	assert.NotContains(t, b.String(), "redis-server", "ruby was missing, not Redis")
}
