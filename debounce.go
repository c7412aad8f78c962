package exq

import (
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/exqgo/exq/internal/wire"
)

// MaxDebounceKeyBytes is the longest debounce key Debounce accepts. The key is part of a Redis
// key name and is shown by the dashboard and the exq command.
const MaxDebounceKeyBytes = 256

// Debounce makes an Enqueue debounced by key: the job does not go to its queue now but waits in
// the schedule set until d has passed without another enqueue of the same key, or until maxWait
// after the first enqueue of the burst, whichever comes first; it then runs once, with the args
// of the last enqueue. In detail, by the Redis server's clock, in one script per call:
//
//   - An enqueue that finds no job of key waiting (none yet, or the last one due or gone: moved
//     to its queue by any scheduler, or deleted) starts a burst: its job is written to the
//     schedule set, due at now + d, and Enqueue returns its jid.
//   - An enqueue that finds the burst's job still waiting and not yet due replaces it (last
//     args win, as BullMQ's debounce with replace; nothing is merged): the new job keeps the
//     burst's jid, which Enqueue returns, and is due at now + d, but never later than the
//     burst's first enqueue + maxWait. So a burst runs once, at most maxWait after it began,
//     and a steady stream of enqueues runs about once every maxWait.
//   - An enqueue that comes after the burst's job left (even a moment after, racing the
//     scheduler) starts a new burst: the job that left runs, and the new one waits.
//   - An enqueue with the jid of the burst's last call (exq.JID) is taken for that call sent
//     again (after a lost reply) and writes nothing: it returns the burst's jid. So give each
//     call its own jid, or none.
//
// d must be at least a millisecond and maxWait at least d. key must be non-empty valid UTF-8
// without control or format characters, at most MaxDebounceKeyBytes. Calls with one key should
// pass the same d and maxWait (each call applies its own). Debounce is for Enqueue (and
// EnqueueArgs) of a node, a Client or a sharded node or client (which routes a key to one shard):
// EnqueueIn, EnqueueAt and EnqueueAll refuse it, as do batches and workflows, and it cannot be
// combined with Unique or Key; each refusal is an ErrInvalidJob and writes nothing.
//
// EnqueueHooks see the call's own job (its jid, At zero: the due time is decided in Redis);
// their done function gets the jid Enqueue returns, the burst's, and a JobEnqueued event carries
// the burst's jid and due time.
//
// The job is an ordinary scheduled job (Exq and Sidekiq nodes move and run it, their UIs show
// it) with one field of exq's own, "debounce_key". The burst's state is exq's own hash
// "<ns>:debounce:<key>", which expires a minute after the job is due.
func Debounce(key string, d, maxWait time.Duration) EnqueueOption {
	return optionFunc{fmt.Sprintf("Debounce(%q, %s, %s)", key, d, maxWait), func(c *enqueueConfig) error {
		if err := checkDebounceKey(key); err != nil {
			return err
		}
		if d < time.Millisecond {
			return fmt.Errorf("Debounce: d must be at least 1ms, got %s", d)
		}
		if maxWait < d {
			return fmt.Errorf("Debounce: maxWait (%s) must be at least d (%s)", maxWait, d)
		}
		c.debounce = &debounceOpts{key: key, d: d, maxWait: maxWait}
		return nil
	}}
}

func checkDebounceKey(key string) error {
	switch {
	case key == "":
		return errors.New("Debounce: the key is empty")
	case len(key) > MaxDebounceKeyBytes:
		return fmt.Errorf("Debounce: the key is %d bytes, more than MaxDebounceKeyBytes (%d)", len(key), MaxDebounceKeyBytes)
	case !utf8.ValidString(key):
		return fmt.Errorf("Debounce: the key %q is not valid UTF-8", key)
	}
	for _, r := range key {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			// Format characters too: a bidi override would make the key read otherwise in a UI.
			return fmt.Errorf("Debounce: the key %q holds the control or format character %U", key, r)
		}
	}
	return nil
}

// refuse says why a debounced job cannot be built with the rest of cfg ("" when it can). at is
// the time the call asked for: non-zero for EnqueueIn, EnqueueAt and a JobSpec's At or In.
func (o *debounceOpts) refuse(cfg *enqueueConfig, at time.Time) string {
	switch {
	case !at.IsZero():
		return "Debounce sets the run time itself (now + d, at most the burst's first enqueue + maxWait): use Enqueue, not EnqueueIn, EnqueueAt, or a JobSpec's At or In"
	case cfg.unique != nil:
		return "Debounce and Unique cannot be combined: a debounced job replaces the waiting job of its key instead of conflicting with it"
	case cfg.flow != nil:
		return "Debounce is not for a job of a batch or a workflow"
	case cfg.key != "":
		return "Debounce and Key cannot be combined: a debounced job waits in the shared schedule set, where a foreign node could run a keyed job in breach of its key's policy"
	}
	return ""
}

// DebounceKey is the debounce key the job was enqueued with (Debounce), "" for none.
func (j *Job) DebounceKey() string {
	key, _ := j.Meta(wire.DebounceField)
	return key
}
