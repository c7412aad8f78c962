package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/redact"
)

// Errors of opening a connection; the root package exports them under the same names.
var (
	// ErrInvalidOptions is wrapped when a RedisURL (or another setting) is not acceptable.
	ErrInvalidOptions = errors.New("exq: invalid options")
	// ErrRedisUnavailable is wrapped when Redis does not answer the PING of Open.
	ErrRedisUnavailable = errors.New("exq: Redis unavailable")
)

// ConnOptions name the Redis a Conn uses: the caller's Client, or one built from URL.
type ConnOptions struct {
	Client  redis.UniversalClient
	URL     string
	Timeout time.Duration // RedisTimeout
	Logger  *slog.Logger
}

// Conn is one use of a Redis client: the caller's, or one Open built from a URL, which Close
// then closes. While it is open, go-redis' own log lines about the client go to its logger.
type Conn struct {
	rdb redis.UniversalClient
	own bool
}

// Open returns the caller's client, or one built from the URL, after a PING. The error
// names the address, never the password.
func Open(ctx context.Context, o ConnOptions) (*Conn, error) {
	rdb, own, where := o.Client, false, "the given client"
	if cluster, _ := ClusterURL(o.URL); rdb == nil && cluster {
		c, err := newClusterClient(o.URL, o.Timeout)
		if err != nil {
			return nil, err
		}
		rdb, own, where = c, true, redact.URL(o.URL)
	}
	if rdb == nil {
		c, err := NewURLClient(o.URL, o.Timeout)
		if err != nil {
			return nil, err
		}
		rdb, own, where = c, true, redact.URL(o.URL)
	}
	c := &Conn{rdb: rdb, own: own}
	redisLogs.add(rdb, o.Logger) // dropped by Close; the PING's dial failures go there too
	pctx, cancel := context.WithTimeout(withRedisLogger(ctx, o.Logger), o.Timeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("%w at %s: %s", ErrRedisUnavailable, where, scrub(err, o.URL))
	}
	if n := ClientRetries(rdb); n > 0 {
		o.Logger.Warn("exq: this Redis client sends a command again when its connection breaks (MaxRetries > 0): "+
			"an enqueue whose reply was lost can then write its job twice and run it twice. exq's fetches, "+
			"outcomes and counters are safe to repeat. Set MaxRetries: -1 on the client (or max_retries=-1 in "+
			"RedisURL) for exactly one write per enqueue", "max_retries", n)
	}
	return c, nil
}

// Close ends this use of the client: its go-redis log lines stop going to this user's
// logger, and the client is closed if Open built it.
func (c *Conn) Close() error {
	redisLogs.drop(c.rdb)
	if c.own {
		return c.rdb.Close()
	}
	return nil
}

// Client is the client, for a caller that shares it (Options.Redis of another node).
func (c *Conn) Client() redis.UniversalClient { return c.rdb }

// Store returns the store of cfg on this connection, or an error wrapping ErrInvalidOptions
// when the client's read timeout would cut cfg's WAIT for replicas short: in a pipeline, the
// client's ReadTimeout bounds the WAIT reply.
func (c *Conn) Store(cfg Config) (*Store, error) {
	if cfg.WaitReplicas > 0 {
		if read := ReadTimeout(c.rdb); read > 0 && cfg.WaitTimeout >= read {
			return nil, fmt.Errorf("%w: WaitTimeout: must be shorter than the Redis client's ReadTimeout (%s), got %s",
				ErrInvalidOptions, read, cfg.WaitTimeout)
		}
	}
	return New(c.rdb, cfg), nil
}

// Time reads the Redis server's clock (TIME).
func (c *Conn) Time(ctx context.Context) (time.Time, error) { return c.rdb.Time(ctx).Result() }

// IsCluster reports whether rdb is a Redis Cluster client.
func IsCluster(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// ClientRetries is how often rdb sends a failed command again (go-redis' MaxRetries, after
// its defaults: 0 means never), or 0 for a client type exq cannot inspect.
func ClientRetries(rdb redis.UniversalClient) int {
	switch c := rdb.(type) {
	case interface{ Options() *redis.Options }:
		return c.Options().MaxRetries
	case interface{ Options() *redis.ClusterOptions }:
		return c.Options().MaxRetries
	case interface{ Options() *redis.RingOptions }:
		return c.Options().MaxRetries
	}
	return 0
}

// NewURLClient builds the client for a RedisURL: a Sentinel FailoverClient when the URL
// names a master_name, a plain client otherwise. The error never carries the password.
func NewURLClient(rawURL string, timeout time.Duration) (*redis.Client, error) {
	if u, err := url.Parse(rawURL); err == nil && u.Query().Has("master_name") {
		return newFailoverClient(rawURL, timeout)
	}
	if _, err := url.Parse(rawURL); err != nil {
		// url.Parse's error quotes the whole URL, and where it fails (a '#' or '/' in the
		// password, say) the password cannot be told apart from the rest: say nothing of it.
		return nil, fmt.Errorf("%w: RedisURL: %s is not a valid URL (special characters in a password must be %%-escaped)",
			ErrInvalidOptions, redact.URL(rawURL))
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: RedisURL: %s: %v", ErrInvalidOptions, redact.URL(rawURL), scrub(err, rawURL))
	}
	if !strings.Contains(rawURL, "read_timeout") {
		opts.ReadTimeout = timeout
	}
	if !strings.Contains(rawURL, "write_timeout") {
		opts.WriteTimeout = timeout
	}
	if !strings.Contains(rawURL, "dial_timeout") {
		opts.DialTimeout = timeout
	}
	// Let the caller's context deadline end a slow command, not only RedisTimeout.
	opts.ContextTimeoutEnabled = true
	if !strings.Contains(rawURL, "max_retries") {
		// go-redis sends a command again when the connection broke after Redis may have run
		// it: a fetch would take a second batch, an enqueue write its job twice. exq retries
		// by itself where a repeat is safe.
		opts.MaxRetries = -1
	}
	return redis.NewClient(opts), nil
}

// scrub removes the URL's passwords from an error message that might quote them.
func scrub(err error, rawURL string) string { return redact.Scrub(err.Error(), rawURL) }

// CheckURL refuses a RedisURL that does not parse as what it claims: a scheme other than
// redis, rediss or unix, or a redis URL without "//" and a host. go-redis would read
// "redis:pw@host:6702" as no host at all and connect to localhost:6379, another server than
// the one named. The error shows the URL with its passwords masked.
func CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error quotes the whole URL, and where it fails (a '#' or '/' in the
		// password, say) the password cannot be told apart from the rest: say nothing of it.
		return fmt.Errorf("%w: RedisURL: %s is not a valid URL (special characters in a password must be %%-escaped)",
			ErrInvalidOptions, redact.URL(rawURL))
	}
	switch u.Scheme {
	case "redis", "rediss":
		if u.Opaque != "" || u.Host == "" {
			return fmt.Errorf("%w: RedisURL: %s names no host: write %s://[user:password@]host:port/db",
				ErrInvalidOptions, redact.URL(rawURL), u.Scheme)
		}
	case "unix":
		if u.Path == "" {
			return fmt.Errorf("%w: RedisURL: %s names no socket: write unix:///path/to/redis.sock",
				ErrInvalidOptions, redact.URL(rawURL))
		}
	default:
		return fmt.Errorf("%w: RedisURL: %s: the scheme must be redis://, rediss:// or unix://",
			ErrInvalidOptions, redact.URL(rawURL))
	}
	return nil
}

// ClusterURL reports whether RedisURL asks for a Redis Cluster client (cluster=true).
func ClusterURL(rawURL string) (bool, error) {
	u, err := url.Parse(rawURL)
	if err != nil || !u.Query().Has("cluster") {
		return false, nil // an unparseable URL is reported where the client is built
	}
	if v := u.Query().Get("cluster"); v != "true" {
		return false, fmt.Errorf("%w: RedisURL: cluster=%q: the only value is true (leave it out for a single Redis)", ErrInvalidOptions, v)
	}
	return true, nil
}

// newFailoverClient builds a Sentinel client for a RedisURL in go-redis' ParseFailoverURL
// form: redis://[user:password@]sentinel:port/db?master_name=mymaster&addr=sentinel2:port&…,
// where the user info is the sentinels' and ?password= (and ?username=) the master's. It gets
// exq's settings, as NewURLClient: RedisTimeout, the ctx deadline ending a command, and no
// resends (MaxRetries -1) unless the URL sets them. go-redis follows the sentinels' switch of
// master and drops connections that answer READONLY, so a failover needs no restart.
func newFailoverClient(rawURL string, timeout time.Duration) (*redis.Client, error) {
	opts, err := redis.ParseFailoverURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: RedisURL: %s: %v", ErrInvalidOptions, redact.URL(rawURL), scrub(err, rawURL))
	}
	if opts.MasterName == "" {
		return nil, fmt.Errorf("%w: RedisURL: %s: master_name is empty", ErrInvalidOptions, redact.URL(rawURL))
	}
	q, _ := url.ParseQuery(rawURL[strings.IndexByte(rawURL, '?')+1:])
	for name, d := range map[string]*time.Duration{"read_timeout": &opts.ReadTimeout, "write_timeout": &opts.WriteTimeout,
		"dial_timeout": &opts.DialTimeout} {
		if !q.Has(name) {
			*d = timeout
		}
	}
	if !q.Has("max_retries") {
		opts.MaxRetries = -1 // as NewURLClient: an enqueue is written once
	}
	opts.ContextTimeoutEnabled = true
	return redis.NewFailoverClient(opts), nil
}

// newClusterClient builds the Redis Cluster client for a RedisURL with cluster=true, in
// go-redis' ParseClusterURL form (redis://host:port?cluster=true&addr=host2:port&addr=…),
// with exq's settings: RedisTimeout, the ctx deadline ending a command, no resends by the node
// clients (MaxRetries -1), and a slot map that follows a failover within seconds.
func newClusterClient(rawURL string, timeout time.Duration) (*redis.ClusterClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: RedisURL: %s is not a valid URL (special characters in a password must be %%-escaped)",
			ErrInvalidOptions, redact.URL(rawURL))
	}
	q := u.Query()
	q.Del("cluster")
	u.RawQuery = q.Encode()
	opts, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: RedisURL: %s: %v", ErrInvalidOptions, redact.URL(rawURL), scrub(err, rawURL))
	}
	for name, d := range map[string]*time.Duration{"read_timeout": &opts.ReadTimeout, "write_timeout": &opts.WriteTimeout, "dial_timeout": &opts.DialTimeout} {
		if !q.Has(name) {
			*d = timeout
		}
	}
	if !q.Has("max_retries") {
		opts.MaxRetries = -1 // as NewURLClient: an enqueue is written once
	}
	opts.ContextTimeoutEnabled = true
	opts.ClusterStateReloadInterval = clusterReloadInterval
	c := redis.NewClusterClient(opts)
	c.AddHook(reloadOnConnError{c})
	return c, nil
}

// clusterReloadInterval is how often a cluster client exq builds reloads the slot map while it
// is used. go-redis' default, 60 s, keeps writing to a dead master for up to a minute after a
// failover; a reload costs one CLUSTER SLOTS.
const clusterReloadInterval = time.Second

// reloadOnConnError asks a cluster client for a new slot map when a command fails for want of
// a connection (a dead master refuses them), instead of waiting for the next periodic reload.
// go-redis reloads by itself on MOVED and READONLY replies only.
type reloadOnConnError struct{ c *redis.ClusterClient }

func (reloadOnConnError) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnConnError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(err)
		return err
	}
}

func (h reloadOnConnError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(err)
		return err
	}
}

func (h reloadOnConnError) check(err error) {
	var nerr net.Error
	if errors.As(err, &nerr) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) {
		h.c.ReloadState(context.Background())
	}
}
