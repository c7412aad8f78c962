package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/exqgo/exq/internal/store/scripts"
	"github.com/exqgo/exq/internal/wire"
)

// Debounced is one debounced enqueue: a job that joins the burst of its Key while that burst's
// job waits in the schedule set, or starts a new one (debounce.lua).
type Debounced struct {
	Key           string
	Wait, MaxWait time.Duration
	// JID is this call's jid: the job's when the call starts a burst.
	JID string
	// Head and Tail are the job's document around its jid and enqueued_at values
	// (wire.NewJob.DebounceParts); the script writes the burst's jid and due time between them.
	Head, Tail string
	// Unit is that of the document's timestamps, which enqueued_at (the due time) keeps.
	Unit wire.TimeUnit
}

// How a debounced enqueue found its key's burst.
const (
	DebounceStarted = 0 // no burst waited: this call started one
	DebounceJoined  = 1 // it replaced the job of the burst that waited
	DebounceRepeat  = 2 // it was the burst's last call again: nothing was written
)

// DebounceRes is where a debounced enqueue left its key's burst.
type DebounceRes struct {
	JID string    // the burst's jid
	At  time.Time // when the burst's job is due, by the Redis server's clock
	How int       // DebounceStarted, DebounceJoined or DebounceRepeat
}

// DebounceStateMargin is how long a burst's state outlives its due time: long enough that an
// enqueue sent again after a lost reply still finds the call it repeats, and harmless since the
// script never lets an enqueue join a burst whose job is due.
const DebounceStateMargin = time.Minute

// Debounce writes d's job into the schedule set in one script call. With WaitReplicas, an error
// wrapping ErrNotReplicated comes with the result: the script ran.
func (jq *Store) Debounce(ctx context.Context, d Debounced) (DebounceRes, error) {
	unit := "s"
	if d.Unit == wire.Millis {
		unit = "ms"
	}
	cmd, replErr := jq.evalScript(ctx, scripts.Debounce, []string{jq.keys.Schedule(), jq.keys.Debounce(d.Key)},
		d.Wait.Microseconds(), d.MaxWait.Microseconds(), d.JID, string(wire.AppendQuote(nil, d.JID)),
		d.Head, d.Tail, unit, jq.keys.Wake(), DebounceStateMargin.Milliseconds())
	res, err := cmd.Slice()
	if err != nil {
		return DebounceRes{}, err
	}
	if len(res) != 3 {
		return DebounceRes{}, fmt.Errorf("debounce: unexpected reply %v", res)
	}
	jid, _ := res[0].(string)
	score, _ := res[1].(string)
	how, _ := res[2].(int64)
	at, perr := parseScore(score)
	if jid == "" || perr != nil {
		return DebounceRes{}, fmt.Errorf("debounce: unexpected reply %v", res)
	}
	return DebounceRes{JID: jid, At: at, How: int(how)}, replErr
}

// parseScore reads a score the scripts format as "<seconds>.<six digits>" exactly.
func parseScore(s string) (time.Time, error) {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok {
		return time.Time{}, fmt.Errorf("score %q", s)
	}
	whole, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || len(frac) != 6 {
		return time.Time{}, fmt.Errorf("score %q", s)
	}
	return time.Unix(whole, us*1000), nil
}
