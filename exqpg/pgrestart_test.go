package exqpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pgCluster is a private Postgres cluster (initdb, pg_ctl) that a test may restart: the
// machine's server is shared and must not be. It runs as the postgres user (initdb refuses
// root), so the test needs root and runuser, or to be the postgres user itself.
type pgCluster struct {
	bin, dir string
	port     int
	asRoot   bool
}

func startPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) == 0 {
		skipMissing(t, "needs Postgres' server programs (/usr/lib/postgresql/*/bin) for a private cluster")
	}
	c := &pgCluster{bin: filepath.Dir(matches[len(matches)-1])}
	me, _ := user.Current()
	switch {
	case me != nil && me.Username == "postgres":
	case os.Geteuid() == 0:
		if _, err := exec.LookPath("runuser"); err != nil {
			skipMissing(t, "needs runuser to run initdb as the postgres user")
		}
		c.asRoot = true
	default:
		skipMissing(t, "needs root (runuser -u postgres) or the postgres user to run a private cluster")
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		skipMissing(t, "needs a postgres user: "+err.Error())
	}
	parent, err := os.MkdirTemp("", "exqpg-pg-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(parent, 0o755))
	c.dir = filepath.Join(parent, "data")
	require.NoError(t, os.Mkdir(c.dir, 0o700))
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	require.NoError(t, os.Chown(c.dir, uid, gid))
	c.port, err = freePort()
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.run("pg_ctl", "-D", c.dir, "-m", "immediate", "-w", "stop")
		_ = os.RemoveAll(parent)
	})
	require.NoError(t, c.run("initdb", "-D", c.dir, "-A", "trust", "-U", "postgres", "--no-sync"))
	require.NoError(t, c.start())
	return c
}

func (c *pgCluster) run(prog string, args ...string) error {
	var cmd *exec.Cmd
	if c.asRoot {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(c.bin, prog)}, args...)...)
	} else {
		cmd = exec.Command(filepath.Join(c.bin, prog), args...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %w: %s", prog, args, err, out)
	}
	return nil
}

func (c *pgCluster) start() error {
	return c.run("pg_ctl", "-D", c.dir, "-l", filepath.Join(c.dir, "log"), "-w", "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", c.port, c.dir), "start")
}

// restart stops the server the way a crash-safe restart does (fast: sessions are ended) and
// starts it again.
func (c *pgCluster) restart() error {
	if err := c.run("pg_ctl", "-D", c.dir, "-m", "fast", "-w", "stop"); err != nil {
		return err
	}
	return c.start()
}

func (c *pgCluster) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Postgres restarted while transactions enqueue and a relay relays: every committed job runs
// once, none is lost, and the relay (and the application's pool) recover without a restart.
func TestPostgresRestartedUnderLoadLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	pgc := startPGCluster(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgc.url())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	const schema = "outbox"
	require.NoError(t, Migrate(ctx, pool, schema))
	ob, _ := New(schema)
	rdb, ns := redisNS(t)
	ran := newRuns()
	startNode(t, rdb, ns, ran, "q")
	relayPool, err := pgxpool.New(ctx, pgc.url())
	require.NoError(t, err)
	t.Cleanup(relayPool.Close)
	var logs syncBuffer
	runRelay(t, relayPool, client(t, rdb, ns), RelayOptions{Schema: schema, PollInterval: 50 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond, Logger: logs.logger()})

	// The producer commits one-job transactions until it has total of them. A commit whose
	// reply is lost has an unknown outcome: its job may exist (once) or not.
	const total = 1500
	var mu sync.Mutex
	var committed, unknown []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(committed) < total {
			tx, err := pool.Begin(ctx)
			if err != nil {
				time.Sleep(10 * time.Millisecond) // the server is restarting
				continue
			}
			jid, err := ob.Enqueue(ctx, tx, "q", "W", nil)
			if err != nil {
				_ = tx.Rollback(ctx)
				continue
			}
			err = tx.Commit(ctx)
			mu.Lock()
			switch {
			case err == nil:
				committed = append(committed, jid)
			case !errors.Is(err, context.Canceled):
				unknown = append(unknown, jid)
			}
			mu.Unlock()
		}
	}()
	eventually(t, time.Minute, "a third committed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(committed) >= total/3
	})
	require.NoError(t, pgc.restart())
	<-done
	eventually(t, time.Minute, "every committed job ran", func() bool {
		runs := ran.snapshot()
		for _, jid := range committed {
			if runs[jid] == 0 {
				return false
			}
		}
		return true
	})
	eventually(t, time.Minute, "the outbox is empty", func() bool {
		var n int
		return pool.QueryRow(ctx, `SELECT count(*) FROM "outbox".exq_outbox`).Scan(&n) == nil && n == 0
	})
	runs := ran.snapshot()
	known := map[string]bool{}
	for _, jid := range committed {
		known[jid] = true
		assert.Equal(t, 1, runs[jid], "job %s", jid)
	}
	for _, jid := range unknown {
		known[jid] = true
		assert.LessOrEqual(t, runs[jid], 1, "job %s, whose commit's outcome was unknown", jid)
	}
	for jid := range runs {
		assert.True(t, known[jid], "a job no transaction wrote: %s", jid)
	}
	// The restart ends the relay's LISTEN session for sure: it was made again.
	assert.Contains(t, logs.String(), "LISTEN connection failed", "the relay saw the restart")
	t.Logf("%d jobs committed, %d commits of unknown outcome, %d jobs ran", len(committed), len(unknown), len(runs))
}
