package exq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"

	"github.com/exqgo/exq/internal/store"
)

// refPrefix starts every Ref, so that a Ref is never taken for a jid.
const refPrefix = "ref:"

// RefOf names a stored document by a digest of its exact bytes: "ref:" and 32 hex digits (the
// first 128 bits of its SHA-256). Unlike the document itself, a Ref fits in a URL, a form
// field and a terminal whatever the document holds (invalid UTF-8, NUL bytes, line breaks,
// megabytes); unlike a jid, every document has one.
func RefOf(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return refPrefix + hex.EncodeToString(sum[:16])
}

// Ref is RefOf(r.Raw). Find and FindInQueue (and so RequeueJob, and the exq command's job,
// retry and delete) take a Ref where they take a jid, so a document without a jid, or one no
// form or terminal can carry, can still be shown, moved and removed one by one.
func (r JobRecord) Ref() string { return RefOf(r.Raw) }

// SetRef is the Ref with the member's score ("ref:…@1796010415.5"): ResolveRefs then finds
// the member with one ZRANGEBYSCORE instead of a scan.
func (r JobRecord) SetRef() string { return r.Ref() + "@" + store.FormatScore(r.Score) }

// IsRef reports whether s is a Ref (with or without a score), not a jid.
func IsRef(s string) bool {
	d, _, _ := strings.Cut(strings.TrimPrefix(s, refPrefix), "@")
	if !strings.HasPrefix(s, refPrefix) || len(d) != 32 {
		return false
	}
	_, err := hex.DecodeString(d)
	return err == nil
}

// parseRefs splits refs into wanted digests (as RefOf writes them) and, for those that carry
// one, their score; what is not a Ref is left out.
func parseRefs(refs []string) (want map[string]bool, scores map[string][]string) {
	want, scores = map[string]bool{}, map[string][]string{}
	for _, r := range refs {
		if !IsRef(r) {
			continue
		}
		ref, score, ok := strings.Cut(r, "@")
		if want[ref] {
			continue
		}
		want[ref] = true
		if _, err := strconv.ParseFloat(score, 64); ok && err == nil {
			scores[score] = append(scores[score], ref)
		}
	}
	return want, scores
}

// ResolveRefs returns the exact raw members of sorted set s that refs (Ref or SetRef values)
// name, for Remove, Requeue and Kill. A ref with a score is looked up at that score; one
// without is searched for in a paged scan. Refs of members no longer there (run, moved or
// removed meanwhile) and strings that are not Refs are left out, so a stale form moves nothing.
func (a *API) ResolveRefs(ctx context.Context, s Set, refs []string) ([]string, error) {
	key, err := a.setKey(s)
	if err != nil {
		return nil, err
	}
	want, byScore := parseRefs(refs)
	var out []string
	if len(byScore) > 0 {
		scores := make([]string, 0, len(byScore))
		for score := range byScore {
			scores = append(scores, score)
		}
		at, err := a.jq.MembersAt(ctx, key, scores)
		if err != nil {
			return nil, err
		}
		scored := map[string]bool{}
		for score, refs := range byScore {
			for _, r := range refs {
				scored[r] = true
			}
			for _, m := range at[score] {
				if ref := RefOf(m); want[ref] && scored[ref] {
					out = append(out, m)
					delete(want, ref)
				}
			}
		}
		for r := range want {
			if scored[r] {
				delete(want, r) // not at its score any more: it moved
			}
		}
	}
	if len(want) == 0 {
		return out, nil
	}
	err = a.jq.ScanSet(ctx, key, "+inf", func(page []store.Member) error {
		for _, z := range page {
			m := z.Raw
			if ref := RefOf(m); want[ref] {
				out = append(out, m)
				delete(want, ref)
			}
		}
		if len(want) == 0 {
			return errScanDone
		}
		return nil
	})
	if errors.Is(err, errScanDone) {
		err = nil
	}
	return out, err
}

// ResolveQueueRefs returns the exact raw jobs waiting in queue q that refs (Ref values) name,
// for RemoveJobs, reading the list in pages until all are found; refs of jobs no longer there
// are left out.
func (a *API) ResolveQueueRefs(ctx context.Context, q string, refs []string) ([]string, error) {
	want, _ := parseRefs(refs)
	var out []string
	for start := int64(0); len(want) > 0; start += findPage {
		raws, err := a.jq.QueueRange(ctx, q, start, start+findPage-1)
		if err != nil {
			return out, err
		}
		for _, raw := range raws {
			if ref := RefOf(raw); want[ref] {
				out = append(out, raw)
				delete(want, ref)
			}
		}
		if len(raws) < findPage {
			break
		}
	}
	return out, nil
}
