// Package store is every Redis command exq sends: the queues, backup lists and job sets of
// the engine, node state, counters, the admin API's reads and moves, periodic schedules,
// batches, workflows and results, the Lua scripts (package scripts below it) and WAIT for
// replicas. Its methods take queue names, set kinds, node ids and days and build the keys
// themselves (through wire.Keys); they return plain Go values and the small types of this
// package, never go-redis types. It must not import the root package: where the engine has
// richer types, it converts to these.
package store

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/wire"
)

// Store is every Redis operation on queues, backup lists and job sets. It is the only code
// that knows key names (through wire.Keys) and runs scripts.
type Store struct {
	rdb  redis.UniversalClient
	keys wire.Keys
	node string
	// wait, when set (Config.WaitReplicas), makes enqueues and outcome writes WAIT for
	// replicas on their own connection (replication.go).
	wait *replicaWait
	// epoch is the token of this node's current incarnation in the heartbeats (see
	// wire.Keys.HeartbeatEpochs), nil for a node without heartbeats, which checks none.
	epoch atomic.Pointer[string]
	// flows caches the queues of batches and workflows (batch.go); settles groups their
	// jobs' concurrent outcomes into shared round trips (settle_group.go).
	flows   flowQueues
	settles settleGroup
	// fetches counts keyed fetches: with one slot, a keyed queue's own list gets every other.
	fetches atomic.Uint64
}

// Config is what a Store is built from besides its client.
type Config struct {
	// Namespace is the key prefix without its colon ("" for none).
	Namespace string
	// Node is this node's identity ("" for a client or an API, which fetch nothing).
	Node string
	// WaitReplicas, when above 0, makes enqueues and outcome writes WAIT for that many
	// replicas, at most WaitTimeout; Logger gets the warnings of a shortfall.
	WaitReplicas int
	WaitTimeout  time.Duration
	Logger       *slog.Logger
}

// New returns the store of namespace c.Namespace on rdb.
func New(rdb redis.UniversalClient, c Config) *Store {
	return &Store{rdb: rdb, keys: wire.NewKeys(c.Namespace), node: c.Node,
		wait: newReplicaWait(c.WaitReplicas, c.WaitTimeout, c.Logger)}
}

// Node is the node id the store fetches and acknowledges as.
func (jq *Store) Node() string { return jq.node }

// Namespace is the store's key prefix without its colon.
func (jq *Store) Namespace() string { return strings.TrimSuffix(jq.keys.Prefix, ":") }

// WakeChannel is the name of the channel enqueues publish on to wake idle nodes, for logs.
func (jq *Store) WakeChannel() string { return jq.keys.Wake() }

// SetEpoch sets the token of this node's current incarnation in the heartbeats.
func (jq *Store) SetEpoch(epoch string) { jq.epoch.Store(&epoch) }

// Epoch is the token of this node's current incarnation, "" before it joined.
func (jq *Store) Epoch() string { return jq.incarnation() }

// Errors the store's methods wrap; the root package exports them under its own names.
var (
	// ErrNotReplicated: the write ran and fewer replicas than asked confirmed it.
	ErrNotReplicated = errors.New("exq: not replicated")
	// ErrOOM: Redis refused a write for want of memory.
	ErrOOM = errors.New("exq: Redis out of memory")
	// ErrBuried: this node's incarnation was taken for dead and its in-flight jobs rescued.
	ErrBuried = errors.New("exq: this node was taken for dead and its in-flight jobs were rescued")
)

// redisOOMError is a Redis error reply saying that Redis is out of memory. It keeps Redis's
// text and matches ErrOOM.
type redisOOMError struct{ err error }

func (e *redisOOMError) Error() string        { return e.err.Error() }
func (e *redisOOMError) Unwrap() error        { return e.err }
func (e *redisOOMError) Is(target error) bool { return target == ErrOOM }

// MarkOOM makes err match ErrOOM when it is Redis refusing a write for want of memory:
// "OOM command not allowed when used memory > 'maxmemory'", as a reply of its own (a command,
// Redis 7's scripts) or inside a script's error (Redis 6: "ERR Error running script … -OOM …").
func MarkOOM(err error) error {
	var reply redis.Error
	if err == nil || errors.Is(err, ErrOOM) || !errors.As(err, &reply) {
		return err
	}
	if msg := reply.Error(); strings.HasPrefix(msg, "OOM ") || strings.Contains(msg, "OOM command not allowed") {
		return &redisOOMError{err}
	}
	return err
}

// MoveBatch bounds the raw jobs sent in one script call (and read in one page of a set scan),
// so no call blocks Redis for long.
const MoveBatch = 500

// NodeTTL is how long a node's hash (and busy list) outlives its last ping: after that
// readers treat the node as gone.
const NodeTTL = 60 * time.Second

// defaultQueue is the queue of a stored schedule whose message names none.
const defaultQueue = "default"
