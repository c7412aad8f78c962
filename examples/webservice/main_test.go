package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// The example under SIGTERM in the middle of a burst of requests: every request the service
// accepted (202 and a jid) has its job in Redis or run, exactly once; none got a 500
// ("exq: stopped"); and some of them were in flight when the signal came.
func TestSIGTERMMidBurstLosesNoEnqueue(t *testing.T) {
	rdb, ns := testutil.Redis(t)
	bin := filepath.Join(t.TempDir(), "webservice")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "go build")

	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "REDIS_URL="+testutil.RedisURL(t), "EXQ_NAMESPACE="+ns, "ADDR=127.0.0.1:0",
		"REQUEST_DELAY=300ms", "ADMIN_PASSWORD=secret")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var base string
	for base == "" {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the service ended before listening: %s", stderr.String())
			if a, found := strings.CutPrefix(l, "listening on "); found {
				base = a
			}
		case <-time.After(testutil.WaitTimeout):
			t.Fatal("the service did not start listening")
		}
	}

	// The dashboard is behind basic auth.
	resp, err := http.Get(base + "/admin/exq/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	req, _ := http.NewRequest(http.MethodGet, base+"/admin/exq/", nil)
	req.SetBasicAuth("admin", "secret")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	// The burst: clients send requests until the service stops accepting them.
	var (
		mu          sync.Mutex
		accepted    []string
		serverError []string
		signalled   atomic.Bool
		inFlightOK  atomic.Int32 // accepted requests sent before the signal, answered after it
		sent        atomic.Int32
		wg          sync.WaitGroup
	)
	client := &http.Client{Timeout: testutil.WaitTimeout}
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				before := !signalled.Load()
				sent.Add(1)
				resp, err := client.Post(fmt.Sprintf("%s/signup?user=%d", base, c*1000+i), "text/plain", nil)
				if err != nil {
					return // refused: the service stopped accepting, and the client knows it
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				mu.Lock()
				switch resp.StatusCode {
				case http.StatusAccepted:
					accepted = append(accepted, strings.TrimSpace(string(body)))
					if before && signalled.Load() {
						inFlightOK.Add(1)
					}
				default:
					serverError = append(serverError, fmt.Sprintf("%d %s", resp.StatusCode, body))
				}
				mu.Unlock()
				if signalled.Load() {
					return
				}
			}
		}()
	}
	testutil.WaitFor(t, "the burst is under way", func() bool { return sent.Load() >= 24 })
	signalled.Store(true)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	wg.Wait()

	var ran []string
	re := regexp.MustCompile(`^welcome sent jid=(\S+) `)
	for l := range lines {
		if m := re.FindStringSubmatch(l); m != nil {
			ran = append(ran, m[1])
		}
	}
	require.NoError(t, cmd.Wait(), "the service exits 0; stderr: %s", stderr.String())

	assert.Empty(t, serverError, "no request failed")
	assert.Positive(t, inFlightOK.Load(), "requests in flight at SIGTERM enqueued")
	ctx := context.Background()
	queued, err := rdb.LRange(ctx, ns+":queue:default", 0, -1).Result()
	require.NoError(t, err)
	where := map[string]int{}
	for _, jid := range ran {
		where[jid]++
	}
	for _, raw := range queued {
		var j struct {
			JID string `json:"jid"`
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &j))
		where[j.JID]++
	}
	for _, jid := range accepted {
		assert.Equal(t, 1, where[jid], "jid %s: run or queued exactly once", jid)
	}
	assert.Len(t, where, len(accepted), "no job but the accepted ones")
	for _, set := range []string{"retry", "dead", "schedule"} {
		n, err := rdb.ZCard(ctx, ns+":"+set).Result()
		require.NoError(t, err)
		assert.Zero(t, n, set)
	}
	t.Logf("accepted %d (of which %d in flight at SIGTERM), ran %d, left queued %d", len(accepted), inFlightOK.Load(), len(ran), len(queued))
}
