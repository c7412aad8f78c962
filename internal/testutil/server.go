package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	t.Cleanup(s.Kill)
	for attempt := 1; ; attempt++ {
		if o.Port == 0 {
			s.Port = freeServerPort(t, o.Args)
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
		err := s.start()
		if err == nil {
			return s
		}
		// A port picked here can be taken by another process before the server binds it
		// (tests start servers in parallel, and a cluster node binds its port + 10000 too).
		if !errors.Is(err, errPortTaken) || o.Port != 0 || attempt == 5 {
			t.Fatalf("%v", err)
		}
		s.Kill()
		_ = os.Remove(s.Dir + "/redis.log")
	}
}

// answers reports whether the server on c replies to PING (any reply: +PONG, or -NOAUTH
// with a password); with tlsOnly it does not ask.
func answers(c net.Conn, tlsOnly bool) error {
	if tlsOnly {
		return nil
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	var b [1]byte
	_, err := c.Read(b[:])
	return err
}

// errPortTaken is start's error when the server could not bind a port it was given.
var errPortTaken = errors.New("address already in use")

// freeServerPort is FreePort, and for a cluster node (--cluster-enabled in args) a port whose
// cluster bus port (port + 10000) was free a moment ago too.
func freeServerPort(t testing.TB, args []string) int {
	t.Helper()
	if !slices.Contains(args, "--cluster-enabled") {
		return FreePort(t)
	}
	for {
		p := FreePort(t)
		if p+10000 > 65535 {
			continue
		}
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000)); err == nil {
			ln.Close()
			return p
		}
	}
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is redis://host:port/0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Start (re)starts the server with the same port, folder and arguments, and waits until it
// accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("%v", err)
	}
}

// start is Start, returning its error (errPortTaken when the server's log says a port it
// was to bind is in use, at once rather than after WaitTimeout).
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command("redis-server", s.args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(WaitTimeout)
	tlsOnly := slices.Contains(s.args, "--tls-port")
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), 100*time.Millisecond)
		if err == nil {
			// The port accepts as soon as it is bound, before the server has bound the rest
			// (a cluster node's bus port) and may still exit: a reply to PING says it runs.
			// (A TLS port is taken at its word.)
			err = answers(c, tlsOnly)
			c.Close()
			if err == nil {
				return nil
			}
		}
		log, _ := os.ReadFile(s.Dir + "/redis.log")
		if bytes.Contains(log, []byte("Address already in use")) {
			return fmt.Errorf("redis-server on %d: %w\n%s", s.Port, errPortTaken, log)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %d did not come up: %v\n%s", s.Port, err, log)
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

// PrivateRedis starts a redis-server of the test's own and returns a client of it (closed
// before the server is killed), its URL and a namespace. It is for tests that store records
// of megabytes: reading them holds a server for tenths of a second, which on the shared test
// server timed out other tests' calls (a node's Start with a RedisTimeout of 500 ms).
func PrivateRedis(t testing.TB) (rdb *redis.Client, url, ns string) {
	t.Helper()
	srv := StartServer(t, ServerOptions{})
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatalf("parse %s: %v", srv.URL(), err)
	}
	rdb = redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, srv.URL(), Namespace(t)
}
