package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterEnv, set to 1, runs the tests that take their Redis from UniversalRedis on a private
// 3-master Redis Cluster instead of a single server, each in a namespace with a hash tag.
const ClusterEnv = "EXQ_TEST_CLUSTER"

// OnCluster reports whether ClusterEnv asks for the cluster.
func OnCluster() bool { return os.Getenv(ClusterEnv) == "1" }

// ClusterOptions configures StartCluster.
type ClusterOptions struct {
	// Masters is the number of masters; at least 3 (redis-cli's minimum). Default 3.
	Masters int
	// Replicas is the number of replicas of each master (0 or 1 in practice).
	Replicas int
	// NodeTimeout is cluster-node-timeout: how long a master may be unreachable before its
	// replica takes over. Default 1 s (Redis' own default, 15 s, makes failover tests slow).
	NodeTimeout time.Duration
}

// Cluster is a Redis Cluster of private redis-server processes on loopback ports, killed by
// pid when the test ends.
type Cluster struct {
	t       testing.TB
	Servers []*Server
	// Client is a go-redis cluster client for it (slot map reloaded every second), closed
	// when the test ends.
	Client *redis.ClusterClient
}

// StartCluster starts o.Masters × (1 + o.Replicas) cluster-mode servers, joins them with
// `redis-cli --cluster create`, and waits until every node reports cluster_state:ok and every
// replica's link to its master is up. Without redis-server or redis-cli the test is skipped
// and counted (failed under CI=true).
func StartCluster(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		SkipMissing(t, "needs the redis-cli binary on PATH (apt-get install redis-tools)")
	}
	if o.Masters == 0 {
		o.Masters = 3
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = time.Second
	}
	c := &Cluster{t: t}
	var addrs []string
	for range o.Masters * (1 + o.Replicas) {
		s := StartServer(t, ServerOptions{Args: clusterArgs(o.NodeTimeout)})
		c.Servers = append(c.Servers, s)
		addrs = append(addrs, s.Addr())
	}
	if err := createCluster(addrs, o.Replicas); err != nil {
		t.Fatal(err)
	}
	// Gossip spreads the replicas a little after their links are up: wait until every node
	// lists a full set of replicas for every slot range, so the test can pick one.
	for _, a := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		WaitFor(t, "node "+a+" knows every replica", func() bool {
			shards, err := rdb.ClusterShards(context.Background()).Result()
			if err != nil || len(shards) != o.Masters {
				return false
			}
			for _, s := range shards {
				online := 0
				for _, n := range s.Nodes {
					if n.Health == "online" {
						online++
					}
				}
				if online != 1+o.Replicas {
					return false
				}
			}
			return true
		})
		_ = rdb.Close()
	}
	c.Client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ClusterStateReloadInterval: time.Second,
		MaxRetries: -1})
	t.Cleanup(func() { _ = c.Client.Close() })
	return c
}

func clusterArgs(nodeTimeout time.Duration) []string {
	return []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10)}
}

// Addrs lists the addresses of every node.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.Addr())
	}
	return out
}

// URL is a RedisURL that asks exq for a cluster client over every node.
func (c *Cluster) URL() string {
	a := c.Addrs()
	u := "redis://" + a[0] + "?cluster=true"
	for _, x := range a[1:] {
		u += "&addr=" + x
	}
	return u
}

// Server returns the server listening on addr.
func (c *Cluster) Server(addr string) *Server {
	for _, s := range c.Servers {
		if s.Addr() == addr {
			return s
		}
	}
	c.t.Fatalf("no cluster node at %s", addr)
	return nil
}

// MasterAndReplicaOf returns the addresses of the master that holds key's slot and of one of
// its replicas ("" without one), as the node at ask (any live node) sees them now.
func (c *Cluster) MasterAndReplicaOf(ctx context.Context, ask, key string) (master, replica string, err error) {
	rdb := redis.NewClient(&redis.Options{Addr: ask, MaxRetries: -1})
	defer rdb.Close()
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return "", "", err
	}
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		return "", "", err
	}
	for _, s := range shards {
		for _, r := range s.Slots {
			if r.Start > slot || slot > r.End {
				continue
			}
			for _, n := range s.Nodes {
				addr := fmt.Sprintf("%s:%d", n.IP, n.Port)
				switch {
				case n.Health != "online":
				case n.Role == "master":
					master = addr
				case replica == "":
					replica = addr
				}
			}
			return master, replica, nil
		}
	}
	return "", "", fmt.Errorf("slot %d of %q is not served", slot, key)
}

// createCluster joins the servers at addrs into one cluster and waits until it is usable.
func createCluster(addrs []string, replicas int) error {
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, a := range addrs {
		if err := waitNode(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// waitNode waits until the node at addr says cluster_state:ok and, if it is a replica, that
// its link to its master is up (4 to 6 s after create), so that a failover can be asked of it.
func waitNode(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	var last string
	for {
		info, err := rdb.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			repl, err := rdb.Info(ctx, "replication").Result()
			if err == nil && (strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up")) {
				return nil
			}
			last = repl
		} else {
			last = fmt.Sprint(info, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster node %s not ready: %s", addr, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// privateCluster is the 3-master cluster a test binary starts for itself when ClusterEnv is
// set: one per process, started by the first test that asks for it, stopped by Main.
var privateCluster struct {
	once  sync.Once
	addrs []string
	err   error

	mu   sync.Mutex
	cmds []*exec.Cmd
	dir  string
}

// ClusterAddrs returns the addresses of the private test cluster, starting it on first use.
func ClusterAddrs(t testing.TB) []string {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		SkipMissing(t, "needs the redis-cli binary on PATH (apt-get install redis-tools)")
	}
	privateCluster.once.Do(func() {
		privateCluster.addrs, privateCluster.err = startPrivateCluster()
	})
	if errorsIsNoServer(privateCluster.err) {
		SkipMissing(t, "needs the redis-server binary on PATH")
	}
	if privateCluster.err != nil {
		t.Fatalf("the private test cluster did not start: %v", privateCluster.err)
	}
	return privateCluster.addrs
}

func errorsIsNoServer(err error) bool { return err == errNoRedisServer }

func startPrivateCluster() ([]string, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, errNoRedisServer
	}
	dir, err := os.MkdirTemp("", "exq-test-cluster-")
	if err != nil {
		return nil, err
	}
	privateCluster.mu.Lock()
	privateCluster.dir = dir
	privateCluster.mu.Unlock()
	var addrs []string
	for i := range 3 {
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		sub := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(sub, 0o700); err != nil {
			return nil, err
		}
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", sub, "--logfile", "redis.log"}, clusterArgs(5*time.Second)...)
		cmd := exec.Command("redis-server", args...)
		cmd.SysProcAttr = diesWithParent()
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start redis-server: %w", err)
		}
		privateCluster.mu.Lock()
		privateCluster.cmds = append(privateCluster.cmds, cmd)
		privateCluster.mu.Unlock()
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if err := waitPing(addr, 10*time.Second); err != nil {
			return nil, fmt.Errorf("cluster node %s: %w", addr, err)
		}
		addrs = append(addrs, addr)
	}
	return addrs, createCluster(addrs, 0)
}

// stopPrivateCluster kills the private cluster's servers by pid and removes their folder.
func stopPrivateCluster() {
	privateCluster.mu.Lock()
	defer privateCluster.mu.Unlock()
	for _, cmd := range privateCluster.cmds {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	privateCluster.cmds = nil
	if privateCluster.dir != "" {
		_ = os.RemoveAll(privateCluster.dir)
		privateCluster.dir = ""
	}
}
