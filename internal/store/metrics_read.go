package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/wire"
)

// MinuteFields are the raw fields of one minute's metrics hash, "<class>|p" and so on →
// the stored value, unparsed (anything may be stored there).
type MinuteFields map[string]string

// MetricsMinutes reads the per-class run metrics of each minute of minutes under Sidekiq 7's
// (v7) and Sidekiq 8's (v8) names, in one pipeline. Each hash is read with one HSCAN of at
// most about maxFields fields, so a hash grown huge costs a bounded read; truncated reports
// that some hash had more. A key of another type (WRONGTYPE) reads as empty: one bad key does
// not hide the others. Nothing is written.
func (jq *Store) MetricsMinutes(ctx context.Context, minutes []time.Time, maxFields int64) (v7, v8 []MinuteFields, truncated bool, err error) {
	cmds := make([]*redis.ScanCmd, 2*len(minutes))
	_, err = jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range minutes {
			cmds[2*i] = p.HScan(ctx, jq.keys.Metrics7(m), 0, "", maxFields)
			cmds[2*i+1] = p.HScan(ctx, jq.keys.Metrics8(m), 0, "", maxFields)
		}
		return nil
	})
	if err != nil && !wrongType(err) {
		return nil, nil, false, err
	}
	v7, v8 = make([]MinuteFields, len(minutes)), make([]MinuteFields, len(minutes))
	for i, c := range cmds {
		if c.Err() != nil {
			if !wrongType(c.Err()) {
				return nil, nil, false, c.Err()
			}
			continue
		}
		kv, cursor := c.Val()
		if cursor != 0 {
			truncated = true
		}
		f := make(MinuteFields, len(kv)/2)
		for k := 0; k+1 < len(kv); k += 2 {
			f[kv[k]] = kv[k+1]
		}
		if i%2 == 0 {
			v7[i/2] = f
		} else {
			v8[i/2] = f
		}
	}
	return v7, v8, truncated, nil
}

// MetricsHistograms reads class's run-time histogram of each minute of minutes under
// Sidekiq 7's (v7) and Sidekiq 8's (v8) names, in one pipeline of BITFIELD GETs (read-only:
// BITFIELD_RO, which a read-only ACL user may run). A missing key, or one of another type
// (WRONGTYPE), reads as all zeros.
func (jq *Store) MetricsHistograms(ctx context.Context, class string, minutes []time.Time) (v7, v8 [][wire.MetricBuckets]int64, err error) {
	args := make([]any, 0, 2*wire.MetricBuckets) // GET u16 #b, for each bucket b
	for b := range wire.MetricBuckets {
		args = append(args, "u16", "#"+strconv.Itoa(b))
	}
	cmds := make([]*redis.IntSliceCmd, 2*len(minutes))
	_, err = jq.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range minutes {
			cmds[2*i] = p.BitFieldRO(ctx, jq.keys.Histogram7(class, m), args...)
			cmds[2*i+1] = p.BitFieldRO(ctx, jq.keys.Histogram8(class, m), args...)
		}
		return nil
	})
	if err != nil && !wrongType(err) {
		return nil, nil, err
	}
	v7, v8 = make([][wire.MetricBuckets]int64, len(minutes)), make([][wire.MetricBuckets]int64, len(minutes))
	for i, c := range cmds {
		if c.Err() != nil {
			if !wrongType(c.Err()) {
				return nil, nil, c.Err()
			}
			continue
		}
		dst := &v7[i/2]
		if i%2 == 1 {
			dst = &v8[i/2]
		}
		for b, n := range c.Val() {
			if b < wire.MetricBuckets {
				dst[b] = n
			}
		}
	}
	return v7, v8, nil
}

// wrongType reports whether err is Redis refusing a command for the key's type.
func wrongType(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "WRONGTYPE")
}
