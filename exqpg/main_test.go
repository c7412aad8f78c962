package exqpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/exqgo/exq"
)

// The tests need a real Postgres and a real Redis:
//   - EXQPG_TEST_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres) is a server on
//     which the test binary creates a database of its own, exqpg_test_<random>, and drops it
//     at the end;
//   - EXQ_TEST_REDIS_URL, or else a private redis-server this binary starts.
//
// Without them the tests skip, loudly; under CI=true they fail.
const (
	pgURLEnv    = "EXQPG_TEST_PG_URL"
	redisURLEnv = "EXQ_TEST_REDIS_URL"
	defaultPG   = "postgres://postgres@127.0.0.1:5432/postgres"
)

var (
	testDBURL  string // the test database, "" when Postgres is unreachable
	pgProblem  string
	redisOnce  sync.Once
	redisURL   string
	redisErr   error
	privateRDS *redisServer
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		runChild() // this process is a relay the fault test kills
		return
	}
	base := os.Getenv(pgURLEnv)
	if base == "" {
		base = defaultPG
	}
	var drop func() error
	if fuzzing() {
		pgProblem = "a fuzzing run makes no test database" // FuzzReadRow needs none
	} else if name, d, err := createTestDB(base); err != nil {
		pgProblem = fmt.Sprintf("needs Postgres at %s (%s): %v", base, pgURLEnv, err)
	} else {
		testDBURL, drop = withDB(base, name), d
	}
	skipServerExamples()
	code := m.Run()
	if drop != nil {
		if err := drop(); err != nil {
			fmt.Fprintf(os.Stderr, "exqpg tests: drop the test database: %v\n", err)
			code = 1
		}
	}
	if privateRDS != nil {
		privateRDS.stop()
		privateRDS.remove()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// fuzzing is true in a fuzzing run's coordinator and workers (go test -fuzz).
func fuzzing() bool {
	flag.Parse()
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

func randomName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// withDB is the URL base with its database name replaced.
func withDB(base, db string) string {
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		return base
	}
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", cfg.User, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), db)
}

func createTestDB(base string) (string, func() error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(context.Background())
	name := "exqpg_test_" + randomName()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		_, err = c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)")
		return err
	}
	return name, drop, nil
}

// skipMissing skips a test for want of a server, or fails it under CI=true.
func skipMissing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %s", why)
	}
	t.Skipf("SKIPPED: %s", why)
}

// pgPool gives the test a pool on the test database and a schema of its own with the outbox
// migrated into it.
func pgPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	if testDBURL == "" {
		skipMissing(t, pgProblem)
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testDBURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	schema := "t_" + randomName()
	require.NoError(t, Migrate(ctx, pool, schema))
	return pool, schema
}

// testRedisURL is EXQ_TEST_REDIS_URL, or a private redis-server started on the first call.
func testRedisURL(t testing.TB) string {
	t.Helper()
	u, err := sharedRedisURL()
	if err != nil {
		skipMissing(t, err.Error())
	}
	return u
}

// sharedRedisURL is EXQ_TEST_REDIS_URL, or a private redis-server started on the first call.
func sharedRedisURL() (string, error) {
	if u := os.Getenv(redisURLEnv); u != "" {
		return u, nil
	}
	redisOnce.Do(func() {
		privateRDS, redisErr = startRedis(os.TempDir(), false)
		if redisErr == nil {
			redisURL = privateRDS.url()
		}
	})
	if redisErr != nil {
		return "", fmt.Errorf("needs Redis: %s is unset and no redis-server started: %w", redisURLEnv, redisErr)
	}
	return redisURL, nil
}

// serverExamples matches the runnable examples (package exqpg_test) that need Postgres and
// Redis: without them they are skipped (-test.skip), loudly, as the tests are; under CI=true
// they run and fail.
const serverExamples = "^Example$"

// skipServerExamples adds serverExamples to -test.skip when Postgres is missing, outside CI.
func skipServerExamples() {
	if testDBURL != "" || os.Getenv("CI") == "true" {
		return
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	skip := serverExamples
	if cur := flag.Lookup("test.skip").Value.String(); cur != "" {
		skip = cur + "|" + skip
	}
	if err := flag.Set("test.skip", skip); err != nil {
		panic(err)
	}
	fmt.Fprintf(os.Stderr, "SKIPPED: examples %s: %s\n", serverExamples, pgProblem)
}

// ServersForExamples gives the runnable examples of package exqpg_test the test database
// and Redis: a pool on the database, a new schema name (not yet migrated), the Redis URL and a
// new namespace; stop closes the pool and deletes the namespace's keys. It is in a _test.go
// file: only this package's tests see it.
func ServersForExamples() (db *pgxpool.Pool, schema, redisURL, namespace string, stop func(), err error) {
	if testDBURL == "" {
		return nil, "", "", "", nil, errors.New(pgProblem)
	}
	if redisURL, err = sharedRedisURL(); err != nil {
		return nil, "", "", "", nil, err
	}
	ctx := context.Background()
	if db, err = pgxpool.New(ctx, testDBURL); err != nil {
		return nil, "", "", "", nil, err
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		db.Close()
		return nil, "", "", "", nil, err
	}
	schema, namespace = "ex_"+randomName(), "exqpg-ex-"+randomName()
	stop = func() {
		db.Close()
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		iter := rdb.Scan(ctx, 0, namespace+":*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	}
	return db, schema, redisURL, namespace, stop, nil
}

// redisNS gives the test a Redis client and a namespace of its own, deleted at the end.
func redisNS(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(testRedisURL(t))
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	ns := "exqpg-" + randomName()
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, ns+":*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
	})
	return rdb, ns
}

// client is an exq.Client on rdb's server (through addr when not "") in namespace ns.
func client(t testing.TB, rdb *redis.Client, ns string) *exq.Client {
	t.Helper()
	c, err := exq.NewClient(context.Background(), exq.ClientOptions{Redis: rdb, Namespace: ns})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// redisServer is a redis-server process of the test's own, for tests that stop and restart
// it. With persist, it writes every command to its append-only file before replying, so a
// restart keeps everything.
type redisServer struct {
	port    int
	dir     string
	persist bool
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startRedis(parent string, persist bool) (*redisServer, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "exqpg-redis-")
	if err != nil {
		return nil, err
	}
	s := &redisServer{port: port, dir: dir, persist: persist}
	return s, s.start()
}

func (s *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

func (s *redisServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir, "--save", ""}
	if s.persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.port)})
		err := c.Ping(context.Background()).Err()
		_ = c.Close()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on port %d did not answer within 10s", s.port)
}

// stop ends the server (SIGTERM: it finishes writing its file) and waits for it.
func (s *redisServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

func (s *redisServer) remove() { _ = os.RemoveAll(filepath.Clean(s.dir)) }
