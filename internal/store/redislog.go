package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// go-redis has one logger for the whole process (redis.SetLogger), which by default prints
// its own lines ("redis: pool.go:762: … failed to dial …") to stderr, whatever Options.Logger
// says. exq installs, when the package is initialised, a logger that sends those lines, at
// Warn, to the Loggers of the exq nodes, clients and APIs that are open (while none is, to
// the Logger of the one closed last, or slog.Default() before the first). Because it is set at init, a program that calls redis.SetLogger itself (in main,
// a TestMain) keeps its own: the last call wins.
func init() { redis.SetLogger(redisLogs) }

// redisLogs routes go-redis' lines; every client exq uses counts once per user of it.
var redisLogs = &redisLogRouter{users: map[redis.UniversalClient]*redisLogUser{}}

type redisLogRouter struct {
	mu    sync.Mutex
	users map[redis.UniversalClient]*redisLogUser
	// last is the logger of the client whose last use ended most recently: a closed
	// client's pool may still log a dial it had under way, and the lines of a program whose
	// exq clients are all closed go there rather than to slog.Default().
	last *slog.Logger
}

type redisLogUser struct {
	log   *slog.Logger
	uses  int
	addrs []string // the client's server addresses, which go-redis' dial lines name
}

// clientAddrs lists the addresses rdb dials, where they can be read.
func clientAddrs(rdb redis.UniversalClient) []string {
	switch c := rdb.(type) {
	case *redis.Client:
		return []string{c.Options().Addr}
	case *redis.ClusterClient:
		return c.Options().Addrs
	}
	return nil
}

// add routes go-redis' lines to log while rdb is in use (until drop).
func (r *redisLogRouter) add(rdb redis.UniversalClient, log *slog.Logger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[rdb]
	if u == nil {
		u = &redisLogUser{log: log, addrs: clientAddrs(rdb)}
		r.users[rdb] = u
	}
	u.uses++
}

// drop ends one use of rdb.
func (r *redisLogRouter) drop(rdb redis.UniversalClient) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u := r.users[rdb]; u != nil {
		if u.uses--; u.uses <= 0 {
			delete(r.users, rdb)
			r.last = u.log
		}
	}
}

// redisLogKey carries, in the context of a command exq sends, the logger its go-redis lines
// go to (go-redis passes the command's context to its logger, as with a failed dial).
type redisLogKey struct{}

// withRedisLogger makes the go-redis lines of the commands sent with ctx go to log alone.
func withRedisLogger(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, redisLogKey{}, log)
}

// Printf is go-redis' internal.Logging. A line of a command whose context names a logger
// (withRedisLogger) goes to that logger. Any other (go-redis dials in the background, with a
// context of its own) goes to the loggers of the open clients whose address it names, or, if
// it names none, to each distinct logger of the open clients, once.
func (r *redisLogRouter) Printf(ctx context.Context, format string, v ...any) {
	msg := "exq: go-redis: " + strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	level := levelOf(msg)
	if ctx != nil {
		if l, ok := ctx.Value(redisLogKey{}).(*slog.Logger); ok && l != nil {
			l.Log(ctx, level, msg)
			return
		}
	}
	r.mu.Lock()
	logs := make([]*slog.Logger, 0, len(r.users))
	users := make([]*redisLogUser, 0, len(r.users))
	for _, u := range r.users {
		for _, a := range u.addrs {
			if a != "" && strings.Contains(msg, a) {
				users = append(users, u)
				break
			}
		}
	}
	if len(users) == 0 {
		for _, u := range r.users {
			users = append(users, u)
		}
	}
	for _, u := range users {
		dup := false
		for _, l := range logs {
			dup = dup || l == u.log
		}
		if !dup {
			logs = append(logs, u.log)
		}
	}
	last := r.last
	r.mu.Unlock()
	switch {
	case len(logs) > 0:
	case last != nil:
		logs = append(logs, last)
	default:
		logs = append(logs, slog.Default())
	}
	for _, l := range logs {
		l.Log(ctx, level, msg)
	}
}

// levelOf is Warn for go-redis' lines but one: "state changed by hook to CLOSED", which its
// pool writes when a command ends on a client closed meanwhile, as exq's blocking idle wait
// does at every Stop (it closes its client to end the BLMOVE); that is Debug. The line names
// no client, so at Warn it reached every open client's Logger.
func levelOf(msg string) slog.Level {
	if strings.Contains(msg, "state changed by hook to CLOSED") {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}
