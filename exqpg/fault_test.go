package exqpg

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

var long = flag.Bool("long", false, "run the full fault test (20 000 rows) instead of the short one")

// The environment of a child relay process (runChild).
const (
	childEnv       = "EXQPG_CHILD_RELAY"
	childPGEnv     = "EXQPG_CHILD_PG"
	childSchemaEnv = "EXQPG_CHILD_SCHEMA"
	childRedisEnv  = "EXQPG_CHILD_REDIS"
	childNSEnv     = "EXQPG_CHILD_NS"
)

// runChild is a relay in a process of its own, which the fault test SIGKILLs at any point.
func runChild() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child relay:", err)
		os.Exit(2)
	}
	pool, err := pgxpool.New(ctx, os.Getenv(childPGEnv))
	if err != nil {
		fail(err)
	}
	defer pool.Close()
	c, err := exq.NewClient(ctx, exq.ClientOptions{RedisURL: os.Getenv(childRedisEnv), Namespace: os.Getenv(childNSEnv),
		RedisTimeout: time.Second})
	if err != nil {
		fail(err)
	}
	defer c.Close()
	r, err := NewRelay(pool, c, RelayOptions{Schema: os.Getenv(childSchemaEnv), BatchSize: 100,
		PollInterval: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fail(err)
	}
	// Widen the window between push and delete, so that the kills land in it often.
	r.afterPush = func() { time.Sleep(30 * time.Millisecond) }
	_ = r.Run(ctx)
}

// childLog collects what the child relays log, to count the rounds that found rows a killed
// relay had pushed.
type childLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *childLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *childLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

type childRelay struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startChild(t *testing.T, env []string, log *childLog) *childRelay {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	c := &childRelay{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.done) }()
	return c
}

func (c *childRelay) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// Rows are relayed by three relay processes while one of them is SIGKILLed every 500 ms (and
// started again) and Redis is restarted once: every jid is pushed once and runs once, none is
// missing.
func TestKilledRelaysAndARedisRestartPushEveryJobOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	pool, schema := pgPool(t)
	srv, err := startRedis(t.TempDir(), true)
	if err != nil {
		skipMissing(t, fmt.Sprintf("needs redis-server for a private, restartable Redis: %v", err))
	}
	t.Cleanup(func() { srv.stop(); srv.remove() })
	total := 3000
	if *long {
		total = 20000
	}
	ns := "exqpg-fault"
	env := []string{childEnv + "=1", childPGEnv + "=" + testDBURL, childSchemaEnv + "=" + schema,
		childRedisEnv + "=" + srv.url(), childNSEnv + "=" + ns}
	var log childLog
	children := []*childRelay{startChild(t, env, &log), startChild(t, env, &log), startChild(t, env, &log)}
	defer func() {
		for _, c := range children {
			c.kill()
		}
	}()

	// The producer: transactions of 50 rows, as an application's.
	ob, _ := New(schema)
	ctx := context.Background()
	var mu sync.Mutex
	var jids []string
	produced := make(chan error, 1)
	pace := 8 * time.Second / time.Duration(total/50) // rows arrive over about 8 s
	go func() {
		defer close(produced)
		for n := 0; n < total; n += 50 {
			tx, err := pool.Begin(ctx)
			if err != nil {
				produced <- err
				return
			}
			specs := make([]exq.JobSpec, 50)
			for i := range specs {
				specs[i] = exq.JobSpec{Queue: "q", Class: "W", Args: []any{n + i}}
			}
			got, err := ob.EnqueueAll(ctx, tx, specs)
			if err == nil {
				err = tx.Commit(ctx)
			}
			if err != nil {
				_ = tx.Rollback(ctx)
				produced <- err
				return
			}
			mu.Lock()
			jids = append(jids, got...)
			mu.Unlock()
			time.Sleep(pace) // spread the rows over many kills
		}
	}()

	kills, restarted := 0, false
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(3 * time.Minute)
	if *long {
		deadline = time.Now().Add(10 * time.Minute)
	}
	producing := true
	for {
		<-tick.C
		if producing {
			select {
			case err, ok := <-produced:
				require.NoError(t, err)
				producing = ok
			default:
			}
		}
		if !producing && restarted && rows(t, pool, schema) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "rows still waiting at the deadline: %d", rows(t, pool, schema))
		i := kills % len(children)
		children[i].kill()
		children[i] = startChild(t, env, &log)
		kills++
		if !restarted && kills == 4 {
			srv.stop()
			require.NoError(t, srv.start())
			restarted = true
		}
	}
	require.True(t, restarted)

	rdb := redis.NewClient(&redis.Options{Addr: srv.url()[len("redis://") : len(srv.url())-2]})
	t.Cleanup(func() { _ = rdb.Close() }) // after the node's Stop (cleanups run last first)
	docs, err := rdb.LRange(ctx, ns+":queue:q", 0, -1).Result()
	require.NoError(t, err)
	pushed := map[string]int{}
	for _, d := range docs {
		var j struct {
			JID string `json:"jid"`
		}
		require.NoError(t, json.Unmarshal([]byte(d), &j))
		pushed[j.JID]++
	}
	mu.Lock()
	want := append([]string(nil), jids...)
	mu.Unlock()
	require.Len(t, want, total)
	missing, twice := 0, 0
	for _, jid := range want {
		switch pushed[jid] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	t.Logf("%d rows, %d relay kills, 1 Redis restart: %d jobs in Redis, %d distinct, %d missing, %d pushed more than once; "+
		"%d rounds took over rows a killed relay had pushed",
		total, kills, len(docs), len(pushed), missing, twice, log.count("rows already pushed"))
	assert.Zero(t, missing, "jobs missing")
	assert.Zero(t, twice, "jobs pushed more than once")
	assert.Len(t, docs, total)

	// Every job runs once.
	ran := newRuns()
	startNode(t, rdb, ns, ran, "q")
	eventually(t, 2*time.Minute, "every job runs", func() bool { return len(ran.snapshot()) == total })
	eventually(t, 30*time.Second, "the queue is empty", func() bool {
		return rdb.LLen(ctx, ns+":queue:q").Val() == 0
	})
	runs := ran.snapshot()
	more := 0
	for _, jid := range want {
		if runs[jid] != 1 {
			more++
		}
	}
	assert.Zero(t, more, "jobs that did not run exactly once")
}
