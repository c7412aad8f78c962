package reliability_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// childEnv makes the test binary run runChild instead of the tests.
const childEnv = "EXQ_RELIABILITY_CHILD"

// doneKey is the hash, outside the namespace, where workers count each jid's completed runs.
func doneKey(ns string) string { return ns + "-done" }

// runChild is a worker node in a process of its own. Class "Sleep" sleeps args[0] ms and then
// counts the run in the done hash; a Redis error there fails the run, so it is retried. It
// prints "node <id>" once started and stops cleanly on SIGTERM.
func runChild() {
	url, ns := os.Getenv("CHILD_REDIS_URL"), os.Getenv("CHILD_NAMESPACE")
	concurrency, _ := strconv.Atoi(os.Getenv("CHILD_CONCURRENCY"))
	hb, _ := time.ParseDuration(os.Getenv("CHILD_HEARTBEAT"))
	opts, err := redis.ParseURL(url)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	counter := redis.NewClient(opts)
	sleep := exq.WorkerFunc(func(ctx context.Context, job *exq.Job) error {
		var ms int
		if err := job.Bind(&ms); err != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		return counter.HIncrBy(ctx, doneKey(ns), job.JID, 1).Err()
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	e, err := exq.Start(ctx, exq.Options{
		RedisURL: url, Namespace: ns, RedisTimeout: 2 * time.Second,
		Queues:               []exq.Queue{{Name: "chaos", Concurrency: concurrency}},
		Workers:              map[string]exq.Worker{"Sleep": sleep},
		HeartbeatInterval:    hb,
		Backoff:              func(int, *exq.Job) time.Duration { return 100 * time.Millisecond },
		SchedulerPollTimeout: 50 * time.Millisecond,
		Logger:               slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("node", e.NodeID())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = e.Stop(sctx)
	_ = counter.Close()
}

// child is a running worker process.
type child struct {
	cmd  *exec.Cmd
	node string
}

// startChild starts a worker process and waits until its node runs.
func startChild(t *testing.T, url, ns string, concurrency int, heartbeat time.Duration) *child {
	t.Helper()
	cmd := testutil.ChildNode()
	cmd.Env = append(os.Environ(), childEnv+"=1", "CHILD_REDIS_URL="+url, "CHILD_NAMESPACE="+ns,
		"CHILD_CONCURRENCY="+strconv.Itoa(concurrency), "CHILD_HEARTBEAT="+heartbeat.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd}
	t.Cleanup(func() { c.kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 2 || f[0] != "node" {
		t.Fatalf("child node did not start: %q %v", line, err)
	}
	c.node = f[1]
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return c
}

// kill ends the process with SIGKILL.
func (c *child) kill() {
	if c.cmd.ProcessState == nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
}

// stop ends the process with SIGTERM (a clean Stop) and waits.
func (c *child) stop() {
	if c.cmd.ProcessState == nil {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		_ = c.cmd.Wait()
	}
}
