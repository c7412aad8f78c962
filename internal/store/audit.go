package store

import (
	"context"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"
)

// Places where a job of the namespace can be, for an audit that looks for jobs (a batch's
// pending ones) without knowing their documents: every queue and backup list, and the
// schedule, retry and dead sets. Each is read in pages; nothing is written.

// AuditLists lists the keys of every queue in the queues set and of every backup list in the
// namespace (any node's: exq's, Exq's and Sidekiq's have the same names), sorted, at most max
// (more is an error: the caller's bound on its cost).
func (jq *Store) AuditLists(ctx context.Context, max int) ([]string, error) {
	queues, err := jq.rdb.SMembers(ctx, jq.keys.Queues()).Result()
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(queues))
	for _, q := range queues {
		keys = append(keys, jq.keys.Queue(q))
	}
	var scanner redis.Cmdable = jq.rdb
	if cc, ok := jq.rdb.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, jq.keys.Queues())
		if err != nil {
			return nil, err
		}
		scanner = m
	}
	var cursor uint64
	for {
		found, next, err := scanner.ScanType(ctx, cursor, jq.keys.AnyBackupPattern(), 1000, "list").Result()
		if err != nil {
			return nil, fmt.Errorf("scan for backup lists: %w", err)
		}
		keys = append(keys, found...)
		if len(keys) > max {
			return nil, fmt.Errorf("more than %d queues and backup lists", max)
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// AuditSets are the keys of the schedule, retry and dead sets.
func (jq *Store) AuditSets() []string {
	return []string{jq.keys.Schedule(), jq.keys.Retry(), jq.keys.Dead()}
}

// ListPage reads up to count entries of list key from index start (from the left, where
// producers push: a push shifts the entries right, so a page may repeat an entry but a pop
// at the right end never makes one skip an entry).
func (jq *Store) ListPage(ctx context.Context, key string, start, count int64) ([]string, error) {
	return jq.rdb.LRange(ctx, key, start, start+count-1).Result()
}

// SetPage reads a page of the members of sorted set key from cursor (ZSCAN: a member there
// for the whole scan is returned, whatever is added or removed meanwhile) and the next
// cursor, 0 at the end.
func (jq *Store) SetPage(ctx context.Context, key string, cursor uint64, count int64) ([]string, uint64, error) {
	page, next, err := jq.rdb.ZScan(ctx, key, cursor, "", count).Result()
	if err != nil {
		return nil, 0, err
	}
	members := page[:0]
	for i := 0; i < len(page); i += 2 {
		members = append(members, page[i])
	}
	return members, next, nil
}

// StillPending reports, for each of jids, whether it is still in batch bid's pending hash.
func (jq *Store) StillPending(ctx context.Context, bid string, jids []string) ([]bool, error) {
	if len(jids) == 0 {
		return nil, nil
	}
	vals, err := jq.rdb.HMGet(ctx, jq.keys.BatchPending(bid), jids...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(vals))
	for i, v := range vals {
		out[i] = v != nil
	}
	return out, nil
}
