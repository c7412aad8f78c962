package exq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/names"
	"github.com/exqgo/exq/internal/wire"
)

// ErrInvalidKey is wrapped by the API calls that take a job's key (KeyJobs, PauseKey,
// ResumeKey) when it is not one Key accepts; Redis is left unchanged.
var ErrInvalidKey = errors.New("exq: invalid key")

// The states of a key (KeyState.State).
const (
	// KeyReady: the key has jobs waiting and may start one at its turn.
	KeyReady = "ready"
	// KeyBlocked: a limit of its policy (Concurrency, Rate) holds it back until BlockedUntil.
	KeyBlocked = "blocked"
	// KeyHeld: a failed job of its Sequence waits for its retry; none of its other jobs starts.
	KeyHeld = "held"
	// KeyPaused: API.PauseKey paused it; none of its jobs starts until ResumeKey.
	KeyPaused = "paused"
	// KeyIdle: none of the above (nothing waiting, or only delayed jobs).
	KeyIdle = "idle"
)

// KeyState is one key of a queue as API.Keys reads it (docs/keys.md).
type KeyState struct {
	Key string `json:"key"`
	// Waiting is the number of jobs in the key's list (they start at its turns).
	Waiting int64 `json:"waiting"`
	// Running is the number of its live leases: its running jobs when the policy has a
	// Concurrency or is a Sequence (0 otherwise: a policy without leases does not count them).
	Running int64 `json:"running"`
	// Delayed is the number of its jobs due later (scheduled, or retrying) among the queue's
	// first KeySample delayed jobs by due time.
	Delayed int64 `json:"delayed"`
	// State is KeyReady, KeyBlocked, KeyHeld, KeyPaused or KeyIdle (paused wins, then held,
	// blocked, ready).
	State string `json:"state"`
	// BlockedUntil is when its limit frees it (the Redis server's clock), set when blocked.
	BlockedUntil *time.Time `json:"blocked_until,omitempty"`
}

// KeysOptions bound API.Keys.
type KeysOptions struct {
	// Limit is the number of keys returned, the top by Waiting; 0 means 50, at most 1000.
	Limit int
}

// MaxKeysLimit is the largest KeysOptions.Limit.
const MaxKeysLimit = 1000

// KeysReport is a queue's keys with the most jobs waiting (API.Keys).
type KeysReport struct {
	Queue string `json:"queue"`
	// Keys are the top keys by Waiting (ties by key), at most KeysOptions.Limit.
	Keys []KeyState `json:"keys"`
	// ReadyKeys, BlockedKeys, HeldKeys and PausedKeys count the keys in each state's set, and
	// DelayedJobs the queue's keyed jobs due later: whole counts, not sampled.
	ReadyKeys   int64 `json:"ready_keys"`
	BlockedKeys int64 `json:"blocked_keys"`
	HeldKeys    int64 `json:"held_keys"`
	PausedKeys  int64 `json:"paused_keys"`
	DelayedJobs int64 `json:"delayed_jobs"`
	// Sampled reports that a set had more than KeySample members: Keys are the top among the
	// first KeySample ready keys by turn, blocked keys by time, held and paused keys, and the
	// keys of the first KeySample delayed jobs by due time, not among all of the queue's keys.
	Sampled bool `json:"sampled"`
}

// KeySample is how many members API.Keys reads at most from each of a queue's key sets.
const KeySample = 1000

// Keys reports queue q's keys with the most jobs waiting, with their running and delayed jobs
// and their state (docs/keys.md). It reads a bounded page of each of the queue's key sets
// (KeySample members: ready, blocked, held, paused, and the delayed jobs), in three round
// trips whatever the number of keys; Sampled says whether that page was all of them. A key
// with nothing waiting, held or paused (say one whose last job runs) is not listed. It only
// reads.
func (a *API) Keys(ctx context.Context, q string, o KeysOptions) (KeysReport, error) {
	if err := names.CheckQueue(q); err != nil {
		return KeysReport{}, fmt.Errorf("%w: keys: %w", ErrInvalidQueue, err)
	}
	limit := o.Limit
	switch {
	case limit < 0 || limit > MaxKeysLimit:
		return KeysReport{}, fmt.Errorf("exq: api: keys: Limit must be 0 to %d, got %d", MaxKeysLimit, limit)
	case limit == 0:
		limit = 50
	}
	r, err := a.jq.KeysOf(ctx, q, KeySample, limit)
	if err != nil {
		return KeysReport{}, fmt.Errorf("exq: keys of %q: %w", q, err)
	}
	out := KeysReport{Queue: q, Keys: make([]KeyState, len(r.Rows)), ReadyKeys: r.Ready, BlockedKeys: r.Blocked,
		HeldKeys: r.Held, PausedKeys: r.Paused, DelayedJobs: r.Delayed, Sampled: r.Sampled}
	for i, row := range r.Rows {
		s := KeyState{Key: row.Key, Waiting: row.Waiting, Running: row.Running, Delayed: row.Delayed}
		switch {
		case row.Paused:
			s.State = KeyPaused
		case row.Held:
			s.State = KeyHeld
		case !row.Blocked.IsZero():
			s.State = KeyBlocked
			t := row.Blocked
			s.BlockedUntil = &t
		case row.Ready:
			s.State = KeyReady
		default:
			s.State = KeyIdle
		}
		out.Keys[i] = s
	}
	return out, nil
}

// KeyJobs lists the jobs of key waiting in queue q, the next to run first (Reverse: last
// first), paged as Jobs is. Jobs of the key that run, or wait in the delayed set, are not
// listed.
func (a *API) KeyJobs(ctx context.Context, q, key string, o ListOptions) ([]JobRecord, error) {
	if err := checkQueueKey("key jobs", q, key); err != nil {
		return nil, err
	}
	start, stop, err := o.bounds()
	if err != nil {
		return nil, err
	}
	if o.Reverse {
		start, stop = -stop-1, -start-1
	}
	raws, err := a.jq.KeyJobsRange(ctx, q, key, start, stop)
	if err != nil {
		return nil, fmt.Errorf("exq: jobs of key %q of %q: %w", key, q, err)
	}
	if o.Reverse {
		for i, j := 0, len(raws)-1; i < j; i, j = i+1, j-1 {
			raws[i], raws[j] = raws[j], raws[i]
		}
	}
	out := make([]JobRecord, len(raws))
	for i, raw := range raws {
		out[i] = record(raw, 0, q)
	}
	return out, nil
}

// PauseKey pauses key of queue q on every exq node of the namespace: once it returns, none of
// its jobs starts (the scripts that ready a key leave a paused one out, so there is no
// window); its running jobs end as usual, its new jobs wait, and the queue's other keys go
// on. The state lives in Redis (<ns>:key_paused:<q>) until ResumeKey; the key need not have
// jobs yet.
func (a *API) PauseKey(ctx context.Context, q, key string) error {
	if err := checkQueueKey("pause key", q, key); err != nil {
		return err
	}
	if _, err := a.jq.PauseKey(ctx, q, key, true); err != nil {
		return fmt.Errorf("exq: pause key %q of %q: %w", key, q, err)
	}
	return nil
}

// ResumeKey lets key of queue q run again: its waiting jobs start at its next turn (within
// its policy's limits), and idle nodes are woken. Resuming a key that is not paused does
// nothing.
func (a *API) ResumeKey(ctx context.Context, q, key string) error {
	if err := checkQueueKey("resume key", q, key); err != nil {
		return err
	}
	if _, err := a.jq.PauseKey(ctx, q, key, false); err != nil {
		return fmt.Errorf("exq: resume key %q of %q: %w", key, q, err)
	}
	return nil
}

// checkQueueKey validates a queue name and a key an API call takes.
func checkQueueKey(op, q, key string) error {
	if err := names.CheckQueue(q); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidQueue, op, err)
	}
	if err := checkKey(key); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidKey, op, err)
	}
	return nil
}

// KeySize is the number of jobs of key waiting in queue q.
func (a *API) KeySize(ctx context.Context, q, key string) (int64, error) {
	if err := checkQueueKey("key size", q, key); err != nil {
		return 0, err
	}
	n, err := a.jq.KeyJobsLen(ctx, q, key)
	if err != nil {
		return 0, fmt.Errorf("exq: jobs of key %q of %q: %w", key, q, err)
	}
	return n, nil
}

// keyedScanKeys is how many keys' lists cancelKeyed reads per round trip.
const keyedScanKeys = 200

// cancelKeyed buries job jid if it waits as a keyed job of queue q (CancelJob): in the queue's
// delayed set (a keyed retry or a job due later), then in its key's list, the order in which
// keyed jobs move by themselves. found is false when it is in neither.
func (a *API) cancelKeyed(ctx context.Context, q, jid string, now time.Time) (found bool, err error) {
	kill := func(raw string) (bool, error) {
		h, err := wire.DecodeHeader(raw)
		if err != nil || h.Key == "" {
			return false, nil // not a keyed job: nothing of ours
		}
		return a.jq.KillKeyed(ctx, q, h.Key, jid, raw, now, DefaultDeadTimeout, DefaultDeadMaxJobs)
	}
	// scan buries the job of raws that has jid, if any (done: buried, or an error).
	scan := func(raws []string) (done bool, err error) {
		for _, raw := range raws {
			if hasJID(raw, jid) {
				if ok, err := kill(raw); ok || err != nil {
					return ok, err
				}
			}
		}
		return false, nil
	}
	for start := int64(0); ; start += findPage {
		raws, err := a.jq.KeyDelayedRange(ctx, q, start, start+findPage-1)
		if err != nil {
			return false, err
		}
		if done, err := scan(raws); done || err != nil {
			return done, err
		}
		if len(raws) < findPage {
			break
		}
	}
	keys, err := a.jq.KeysWithJobs(ctx, q)
	if err != nil {
		return false, err
	}
	for len(keys) > 0 {
		batch := keys[:min(keyedScanKeys, len(keys))]
		keys = keys[len(batch):]
		firsts, err := a.jq.KeyJobsFirst(ctx, q, batch, findPage)
		if err != nil {
			return false, err
		}
		for i, raws := range firsts {
			for start := int64(0); ; {
				if done, err := scan(raws); done || err != nil {
					return done, err
				}
				if len(raws) < findPage {
					break
				}
				start += findPage
				if raws, err = a.jq.KeyJobsRange(ctx, q, batch[i], start, start+findPage-1); err != nil {
					return false, err
				}
			}
		}
	}
	return false, nil
}
