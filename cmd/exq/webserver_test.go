package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// serveLimited serves h with limits l on a loopback port, as exq web does, until the test ends.
func serveLimited(t *testing.T, h http.Handler, l webLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newWebServer(h, l)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(limitListener(ln, l.maxConns)) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String()
}

// A body trickled a byte at a time is cut at the read timeout, not held for as long as the
// client likes; beyond the connection limit, a client waits until a connection closes.
func TestWebServerCutsSlowBodiesAndLimitsConnections(t *testing.T) {
	read := func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }
	l := webLimits{readHeader: time.Second, read: 2 * time.Second, write: 5 * time.Second, idle: 5 * time.Second, maxConns: 2, maxHeaderBytes: 4096}
	addr := serveLimited(t, http.HandlerFunc(read), l)

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n")
	require.NoError(t, err)
	start := time.Now()
	for time.Since(start) < 20*time.Second {
		if _, err = c.Write([]byte("x")); err != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.Error(t, err, "the server closed the trickling connection")
	assert.Less(t, time.Since(start), 10*time.Second, "cut near the 2 s read timeout")

	// Two connections that send nothing hold both slots: a third request is not served
	// until they are cut (read-header timeout, 1 s).
	a, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer a.Close()
	b, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer b.Close()
	time.Sleep(100 * time.Millisecond) // both accepted
	third, err := net.Dial("tcp", addr)
	require.NoError(t, err) // the kernel's backlog takes it
	defer third.Close()
	start = time.Now()
	_, err = fmt.Fprintf(third, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(third), nil)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.GreaterOrEqual(t, time.Since(start), 700*time.Millisecond, "served only once a slot was freed")
}

// exq web's own limits, and its warning when it listens beyond loopback.
func TestWebWarnsWhenItListensBeyondLoopback(t *testing.T) {
	assert.Equal(t, webLimits{readHeader: 5 * time.Second, read: 15 * time.Second, write: 60 * time.Second,
		idle: 60 * time.Second, maxConns: 64, maxHeaderBytes: 64 << 10}, defaultWebLimits)
	c := newCLIEnv(t)
	cmd := exec.Command(exqBin, "web", "--addr", "0.0.0.0:0", "--namespace", c.ns)
	cmd.Env = []string{"EXQ_REDIS_URL=" + c.url}
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testutil.WaitFor(t, "exq web says where it serves", func() bool { return strings.Contains(stderr.String(), "serving") })
	assert.Contains(t, stderr.String(), "beyond loopback, and the dashboard has no login")

	base, _, loopback := startWeb(t, c)
	assert.NotContains(t, loopback.String(), "beyond loopback")
	_ = base
}

// exq web serves the --allowed-host names, addresses and localhost, and refuses other names
// (DNS rebinding).
func TestWebServesOnlyAllowedHostNames(t *testing.T) {
	c := newCLIEnv(t)
	base, _, _ := startWeb(t, c, "--allowed-host", "dash.example:8443", "--allowed-host", "jobs.internal")
	for host, want := range map[string]int{"dash.example": 200, "jobs.internal:7070": 200, "localhost:7070": 200, "127.0.0.1": 200,
		"rebind.attacker.example": http.StatusMisdirectedRequest, "dash.example.attacker.example": http.StatusMisdirectedRequest} {
		req, err := http.NewRequest(http.MethodGet, base+"/queues", nil)
		require.NoError(t, err)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, want, res.StatusCode, host)
	}
}
