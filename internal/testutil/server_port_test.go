package testutil

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// A redis-server that cannot bind its port is reported at once as errPortTaken (StartServer
// then tries another port), not after WaitTimeout as a server that did not come up; a cluster
// node's port is picked with its bus port (+10000) free.
func TestAServerWhosePortIsTakenIsReportedAtOnce(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		SkipMissing(t, "needs the redis-server binary on PATH")
	}
	// A cluster node whose bus port (+10000) another process holds: its own port stays
	// closed, and the log says why.
	var port int
	var ln net.Listener
	for ln == nil {
		port = FreePort(t)
		if port+10000 <= 65535 {
			ln, _ = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		}
	}
	defer ln.Close()
	s := &Server{t: t, Port: port, Dir: t.TempDir()}
	s.args = []string{"--bind", "127.0.0.1", "--save", "", "--dir", s.Dir, "--logfile", "redis.log",
		"--port", strconv.Itoa(port), "--cluster-enabled", "yes"}
	began := time.Now()
	err := s.start()
	s.Kill()
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("start on a taken port: %v, want errPortTaken", err)
	}
	if took := time.Since(began); took > WaitTimeout/2 {
		t.Fatalf("errPortTaken after %s", took)
	}

	p := freeServerPort(t, []string{"--cluster-enabled", "yes"})
	bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
	if err != nil {
		t.Fatalf("the bus port of %d is not free: %v", p, err)
	}
	bus.Close()
}
