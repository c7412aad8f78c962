package exq

import (
	"cmp"
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/exqgo/exq/internal/flows"
)

// DefaultResultShown is how many bytes of each result API.Results reads when given no limit.
const DefaultResultShown = 4 << 10

// StoredResult is the start of the result a job stored (SetResult, TypedResult), read for
// showing it: as `exq job`, `exq workflow show` and the dashboard's workflow page do.
type StoredResult struct {
	// JSON is the result as stored (JSON), cut at the limit asked for on a rune boundary. It
	// is read from Redis: escape it before showing it.
	JSON string
	// Size is the whole result's length in bytes.
	Size int
}

// Truncated reports whether JSON is only the start of the result.
func (r StoredResult) Truncated() bool { return len(r.JSON) < r.Size }

// Results reads the results that jobs jids stored, at most limit bytes of each (limit <= 0:
// DefaultResultShown), without decoding them. A job with no result stored (not yet, expired,
// or it never stores one) has no entry; nor has one whose key holds something else than a
// result, which is logged and does not keep the others from being read. It writes nothing.
// Result and WaitResult (of Client and Exq) decode a whole result.
func (a *API) Results(ctx context.Context, jids []string, limit int) (map[string]StoredResult, error) {
	if limit <= 0 {
		limit = DefaultResultShown
	}
	heads, err := a.jq.ResultHeads(ctx, jids, int64(limit))
	if err != nil {
		return nil, fmt.Errorf("exq: api: results: %w", err)
	}
	out := make(map[string]StoredResult)
	for i, h := range heads {
		switch {
		case h.Err != nil:
			a.log.Warn("exq: api: results: the result key of a job holds no result; skipped", "jid", jids[i], "error", h.Err)
		case h.Size > 0:
			head := h.Head
			if int64(len(head)) < h.Size {
				head = cutRunes(head)
			}
			out[jids[i]] = StoredResult{JSON: string(head), Size: int(h.Size)}
		}
	}
	return out, nil
}

// cutRunes drops the end of b that is the start of a rune cut off (at most utf8.UTFMax-1
// bytes).
func cutRunes(b []byte) []byte {
	for k := 0; k < utf8.UTFMax-1 && len(b) > 0; k++ {
		r, size := utf8.DecodeLastRune(b)
		if r != utf8.RuneError || size != 1 {
			return b
		}
		b = b[:len(b)-1]
	}
	return b
}

// Result decodes into dst the result job jid stored; ErrNoResult when there is none (not yet,
// or expired).
func (e *Exq) Result(ctx context.Context, jid string, dst any) error {
	return flows.ReadResult(ctx, e.jq, jid, dst)
}

// Result decodes into dst the result job jid stored; see Exq.Result.
func (c *Client) Result(ctx context.Context, jid string, dst any) error {
	return flows.ReadResult(ctx, c.enq.jq, jid, dst)
}

// WaitResult waits until job jid has stored its result and decodes it into dst, or returns
// ctx's error when ctx ends first. It is woken by pub/sub as the result is stored, on any
// node: request and response over the queue.
func (e *Exq) WaitResult(ctx context.Context, jid string, dst any) error {
	return flows.WaitResult(ctx, e.jq, jid, dst)
}

// WaitResult waits for job jid's result; see Exq.WaitResult.
func (c *Client) WaitResult(ctx context.Context, jid string, dst any) error {
	return flows.WaitResult(ctx, c.enq.jq, jid, dst)
}

// setResult stores v as the result of job jid (SetResult).
func (e *Exq) setResult(ctx context.Context, jid string, v any) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.RedisTimeout)
	defer cancel()
	return flows.SetResult(wctx, e.jq, jid, v, cmp.Or(max(e.opts.ResultMaxBytes, 0), DefaultResultMaxBytes),
		cmp.Or(e.opts.ResultTTL, DefaultResultTTL))
}

// readResult decodes the result job jid stored (ParentResult).
func (e *Exq) readResult(ctx context.Context, jid string, dst any) error {
	return flows.ReadResult(ctx, e.jq, jid, dst)
}
