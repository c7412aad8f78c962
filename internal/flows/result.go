package flows

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/wire"
)

// Recheck is how often a waiting client reads the result again in case a wake-up was lost
// with a broken connection.
const Recheck = time.Second

// ParentJID reads the jid of parent from a workflow job's document ("wf_parents").
func ParentJID(raw, parent string) (string, bool) {
	obj, err := wire.ParseObject(raw)
	if err != nil {
		return "", false
	}
	v, ok := obj.Get("wf_parents")
	if !ok {
		return "", false
	}
	var parents map[string]string
	if json.Unmarshal(v, &parents) != nil {
		return "", false
	}
	jid, ok := parents[parent]
	return jid, ok && jid != ""
}

// CallbackOf reads the batch a callback job's document was enqueued for ("callback_bid").
func CallbackOf(raw string) string {
	obj, err := wire.ParseObject(raw)
	if err != nil {
		return ""
	}
	v, ok := obj.Get("callback_bid")
	var bid string
	if !ok || json.Unmarshal(v, &bid) != nil {
		return ""
	}
	return bid
}

// SetResult stores v as JSON as job jid's result for ttl, refusing more than limit bytes.
func SetResult(ctx context.Context, st *store.Store, jid string, v any, limit int, ttl time.Duration) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("exq: set result of job %s: %w", jid, err)
	}
	if len(b) > limit {
		return fmt.Errorf("exq: set result of job %s: %d bytes of JSON, more than ResultMaxBytes (%d): %w", jid, len(b), limit, ErrResultTooLarge)
	}
	if err := st.SetResult(ctx, jid, b, ttl); err != nil {
		return fmt.Errorf("exq: set result of job %s: %w", jid, err)
	}
	return nil
}

// ReadResult decodes job jid's result into dst (nil: not decoded); ErrNoResult when none is
// stored.
func ReadResult(ctx context.Context, st *store.Store, jid string, dst any) error {
	b, ok, err := st.Result(ctx, jid)
	if err != nil {
		return fmt.Errorf("exq: result of job %s: %w", jid, err)
	}
	if !ok {
		return fmt.Errorf("exq: result of job %s: %w", jid, ErrNoResult)
	}
	return decode(jid, b, dst)
}

// WaitResult waits until job jid's result is stored, or ctx ends, and decodes it into dst.
func WaitResult(ctx context.Context, st *store.Store, jid string, dst any) error {
	b, err := st.WaitResult(ctx, jid, Recheck)
	if err != nil {
		return fmt.Errorf("exq: wait for the result of job %s: %w", jid, err)
	}
	return decode(jid, b, dst)
}

func decode(jid string, b []byte, dst any) error {
	if dst == nil {
		return nil
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("exq: result of job %s: %w", jid, err)
	}
	return nil
}
