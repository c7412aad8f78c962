package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name the sentinels of StartSentinel monitor.
const SentinelMaster = "mymaster"

// Sentinel is a monitored pair, a master and its replica, and three sentinels (quorum 2,
// down-after 1 s, failover-timeout 5 s), every process on a free loopback port and killed
// when the test ends.
type Sentinel struct {
	t       testing.TB
	Master  *Server
	Replica *Server
	// Link is the proxy between replica and master with SentinelOptions.ReplicationLag, nil
	// without. Down on it drops what the master sent and the replica has not received, as
	// the death of the master's host does (a SIGKILLed process leaves that to its kernel).
	Link *Proxy
	// Ports of the three sentinels.
	Ports []int
}

// SentinelOptions configures StartSentinel.
type SentinelOptions struct {
	// ReplicationLag delays the replication stream from master to replica by this much per
	// chunk (the replica reaches the master through a Proxy), as a replica in another zone
	// would lag. 0: the replica is connected directly.
	ReplicationLag time.Duration
}

// StartSentinel starts the master, its replica (--replicaof, in sync before the sentinels
// start, so that they see it at once) and the sentinels (redis-server sentinel.conf
// --sentinel), and returns once every sentinel knows the replica and a quorum of its peers.
func StartSentinel(t testing.TB, o SentinelOptions) *Sentinel {
	t.Helper()
	s := &Sentinel{t: t}
	s.Master = StartServer(t, ServerOptions{})
	upstream := s.Master.Addr()
	if o.ReplicationLag > 0 {
		p := NewProxy(t, upstream)
		p.SetLatency(o.ReplicationLag)
		upstream, s.Link = p.Addr(), p
	}
	host, port, _ := net.SplitHostPort(upstream)
	s.Replica = StartServer(t, ServerOptions{Args: []string{"--replicaof", host, port}})
	replica := redis.NewClient(&redis.Options{Addr: s.Replica.Addr()})
	defer replica.Close()
	WaitFor(t, "the replica is in sync", func() bool {
		return strings.Contains(replica.Info(context.Background(), "replication").Val(), "master_link_status:up")
	})
	for i := 0; i < 3; i++ {
		s.Ports = append(s.Ports, s.startOne())
	}
	for _, p := range s.Ports {
		c := redis.NewSentinelClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(p)})
		WaitFor(t, fmt.Sprintf("sentinel :%d knows the replica and a quorum", p), func() bool {
			ctx := context.Background()
			replicas, err := c.Replicas(ctx, SentinelMaster).Result()
			if err != nil || len(replicas) != 1 {
				return false
			}
			return c.CkQuorum(ctx, SentinelMaster).Err() == nil && len(c.Sentinels(ctx, SentinelMaster).Val()) == 2
		})
		_ = c.Close()
	}
	return s
}

func (s *Sentinel) startOne() int {
	t := s.t
	t.Helper()
	port := FreePort(t)
	dir := t.TempDir()
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile sentinel.log\n"+
		"sentinel monitor %s 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds %[3]s 1000\n"+
		"sentinel failover-timeout %[3]s 5000\n"+
		"sentinel parallel-syncs %[3]s 1\n",
		port, dir, SentinelMaster, s.Master.Port)
	path := filepath.Join(dir, "sentinel.conf") // sentinels rewrite their file: one each
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatalf("write sentinel.conf: %v", err)
	}
	cmd := exec.Command("redis-server", path, "--sentinel")
	cmd.SysProcAttr = diesWithParent()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server --sentinel: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(WaitTimeout)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 100*time.Millisecond)
		if err == nil {
			c.Close()
			return port
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
			t.Fatalf("sentinel on %d did not come up: %v\n%s", port, err, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Addrs are the sentinels' host:port.
func (s *Sentinel) Addrs() []string {
	var out []string
	for _, p := range s.Ports {
		out = append(out, "127.0.0.1:"+strconv.Itoa(p))
	}
	return out
}

// URL is a RedisURL in go-redis' ParseFailoverURL form naming all three sentinels.
func (s *Sentinel) URL() string {
	a := s.Addrs()
	return fmt.Sprintf("redis://%s/0?master_name=%s&addr=%s&addr=%s", a[0], SentinelMaster, a[1], a[2])
}

// MasterAddr is the master's host:port as the first sentinel that answers reports it.
func (s *Sentinel) MasterAddr() string {
	for _, a := range s.Addrs() {
		c := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
		r, err := c.GetMasterAddrByName(context.Background(), SentinelMaster).Result()
		_ = c.Close()
		if err == nil && len(r) == 2 {
			return net.JoinHostPort(r[0], r[1])
		}
	}
	return ""
}

// WaitPromotion waits until the sentinels name the replica as master and returns when they
// were first seen to.
func (s *Sentinel) WaitPromotion() time.Time {
	s.t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for s.MasterAddr() != s.Replica.Addr() {
		if time.Now().After(deadline) {
			s.t.Fatalf("the sentinels did not promote the replica within %s (master: %s)", WaitTimeout, s.MasterAddr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Now()
}
