package exq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestStatsSplitRunsAtSecondAndDayBoundaries(t *testing.T) {
	st := newStats(nil, 0, nil, nil, false, false) // record and the fold touch only the in-memory counters
	last := time.Date(2026, 11, 30, 23, 59, 59, 900e6, time.UTC)
	next := last.Add(200 * time.Millisecond) // 2026-12-01 00:00:00.1
	st.Record(true, last)
	st.Record(false, last)
	st.Record(true, next.In(time.FixedZone("UTC+9", 9*3600))) // the zone of the clock does not matter
	st.Record(true, next)
	st.mu.Lock()
	st.foldLocked()
	got := st.pending
	st.mu.Unlock()
	day1 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).Unix()
	day2 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Unix()
	assert.Equal(t, map[statKey]int64{
		{"processed", 't', 0}:           3,
		{"failed", 't', 0}:              1,
		{"processed", 'd', day1}:        1,
		{"failed", 'd', day1}:           1,
		{"processed", 'd', day2}:        2,
		{"processed", 's', last.Unix()}: 1,
		{"failed", 's', last.Unix()}:    1,
		{"processed", 's', next.Unix()}: 2,
	}, got)
}
