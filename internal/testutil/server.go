package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a private redis-server process for tests that stop, kill, restart or
// reconfigure Redis. It listens on a free loopback port and keeps its files in a temporary
// folder; it is killed when the test ends.
type Server struct {
	t    testing.TB
	Port int
	Dir  string
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// ServerOptions configures StartServer.
type ServerOptions struct {
	// AOF turns on the append-only file with fsync on every write, so a restart keeps every
	// acknowledged write.
	AOF bool
	// Args are more redis-server arguments ("--requirepass", "pw", …).
	Args []string
	// NoPort leaves the plain TCP port off (for a TLS-only server; give --tls-port in Args
	// and set Port yourself with FreePort).
	NoPort bool
	// Port to use; 0 picks a free one.
	Port int
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// StartServer starts a redis-server. Without the binary the test is skipped and counted (see
// SkipMissing), except under CI=true, where it fails.
func StartServer(t testing.TB, o ServerOptions) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		SkipMissing(t, "needs the redis-server binary on PATH (apt-get install redis-server)")
	}
	s := &Server{t: t, Port: o.Port, Dir: t.TempDir()}
	if s.Port == 0 {
		s.Port = FreePort(t)
	}
	s.args = []string{"--bind", "127.0.0.1", "--save", "", "--dir", s.Dir, "--logfile", "redis.log"}
	if o.NoPort {
		s.args = append(s.args, "--port", "0")
	} else {
		s.args = append(s.args, "--port", strconv.Itoa(s.Port))
	}
	if o.AOF {
		s.args = append(s.args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		s.args = append(s.args, "--appendonly", "no")
	}
	s.args = append(s.args, o.Args...)
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is redis://host:port/0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Start (re)starts the server with the same port, folder and arguments, and waits until it
// accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command("redis-server", s.args...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(WaitTimeout)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(s.Dir + "/redis.log")
			s.t.Fatalf("redis-server on %d did not come up: %v\n%s", s.Port, err, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop shuts the server down with SIGTERM (it writes its AOF) and waits for it to exit.
func (s *Server) Stop() { s.signal(syscall.SIGTERM) }

// Kill kills the server with SIGKILL and waits for it to exit.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// String names the server for messages.
func (s *Server) String() string { return fmt.Sprintf("redis-server :%d", s.Port) }
