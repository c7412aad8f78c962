package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPushRelayedWritesEachJIDOnceAndReportsDuplicatesAndHolders(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	at := time.Unix(1896010415, 250000000)
	items := []RelayItem{
		{JID: "a", Queue: "mail", Job: job("mail", "a")},
		{JID: "b", Queue: "mail", At: at, Job: job("mail", "b")},
		{JID: "c", Queue: "sms", Job: job("sms", "c"), Lock: &Lock{Token: "tok", JID: "c", TTL: time.Hour}},
	}
	st, err := jq.PushRelayed(ctx(t), time.Minute, items)
	require.NoError(t, err)
	assert.Equal(t, []RelayStatus{{}, {}, {}}, st)
	assert.Equal(t, []string{job("mail", "a")}, v.list(v.keys.Queue("mail")))
	assert.Equal(t, []string{job("sms", "c")}, v.list(v.keys.Queue("sms")))
	sched := v.zset(v.keys.Schedule())
	require.Len(t, sched, 1)
	assert.Equal(t, job("mail", "b"), sched[0].Member)
	assert.InDelta(t, 1896010415.25, sched[0].Score, 1e-6)
	ttl := v.rdb.PTTL(ctx(t), v.keys.Relayed("a")).Val()
	assert.InDelta(t, time.Minute.Seconds(), ttl.Seconds(), 5, "the mark keeps markTTL")

	st, err = jq.PushRelayed(ctx(t), time.Minute, items)
	require.NoError(t, err)
	assert.Equal(t, []RelayStatus{{Duplicate: true}, {Duplicate: true}, {Duplicate: true}}, st, "a repeat writes nothing")
	assert.Len(t, v.list(v.keys.Queue("mail")), 1)

	other := []RelayItem{{JID: "d", Queue: "sms", Job: job("sms", "d"), Lock: &Lock{Token: "tok", JID: "d", TTL: time.Hour}}}
	st, err = jq.PushRelayed(ctx(t), time.Minute, other)
	require.NoError(t, err)
	assert.Equal(t, []RelayStatus{{Holder: "c"}}, st, "another jid meets the lock's holder")
	assert.Len(t, v.list(v.keys.Queue("sms")), 1)
}

func TestOutboxReadsTheLastReportAndRefusesFieldsThatAreNotNumbers(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	s, err := jq.Outbox(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, OutboxStatus{}, s, "no report yet")

	now := time.Unix(1896010415, 0)
	require.NoError(t, jq.ReportOutbox(ctx(t), 12, 1, time.Minute, now))
	s, err = jq.Outbox(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, OutboxStatus{Reported: true, Backlog: 12, Failed: 1}, OutboxStatus{Reported: s.Reported, Backlog: s.Backlog, Failed: s.Failed})
	assert.True(t, s.OldestAt.Equal(now.Add(-time.Minute)), "oldest at %s", s.OldestAt)
	assert.True(t, s.UpdatedAt.Equal(now), "updated at %s", s.UpdatedAt)

	require.NoError(t, jq.ReportOutbox(ctx(t), 0, 0, time.Hour, now), "an empty backlog has no oldest row")
	s, err = jq.Outbox(ctx(t))
	require.NoError(t, err)
	assert.True(t, s.OldestAt.IsZero())

	require.ErrorContains(t, jq.ReportOutbox(ctx(t), -1, 0, 0, now), "negative")
	// A field that is not a count or a time is left zero and named in Invalid; the others are
	// read (one bad field once failed the whole report).
	for _, tc := range []struct{ field, value string }{
		{"backlog", "<script>"},
		{"failed", "-3"},
		{"updated_at", "yesterday"},
		{"updated_at", "1e12"},
		{"oldest_at", "NaN"},
	} {
		require.NoError(t, jq.ReportOutbox(ctx(t), 5, 2, time.Second, now))
		require.NoError(t, v.rdb.HSet(ctx(t), v.keys.Outbox(), tc.field, tc.value).Err())
		s, err := jq.Outbox(ctx(t))
		require.NoError(t, err, tc.field)
		require.Len(t, s.Invalid, 1, tc.field)
		assert.Contains(t, s.Invalid[0], "field "+tc.field, tc.field)
		assert.True(t, s.Reported, tc.field)
		want := OutboxStatus{Reported: true, Backlog: 5, Failed: 2, OldestAt: now.Add(-time.Second), UpdatedAt: now}
		switch tc.field {
		case "backlog":
			want.Backlog = 0
		case "failed":
			want.Failed = 0
		case "updated_at":
			want.UpdatedAt = time.Time{}
		case "oldest_at":
			want.OldestAt = time.Time{}
		}
		assert.Equal(t, want.Backlog, s.Backlog, tc.field)
		assert.Equal(t, want.Failed, s.Failed, tc.field)
		assert.True(t, want.OldestAt.Equal(s.OldestAt), "%s: oldest %s", tc.field, s.OldestAt)
		assert.True(t, want.UpdatedAt.Equal(s.UpdatedAt), "%s: updated %s", tc.field, s.UpdatedAt)
	}
}

func TestPushRelayedChecksEveryKeyBeforeWritingAny(t *testing.T) {
	v := newEnv(t)
	jq := v.store("")
	require.NoError(t, v.rdb.LPush(ctx(t), v.p("relayed:b"), "not a string").Err())
	_, err := jq.PushRelayed(ctx(t), time.Minute, []RelayItem{
		{JID: "a", Queue: "q", Job: job("q", "a")},
		{JID: "b", Queue: "q", Job: job("q", "b")},
	})
	assert.ErrorContains(t, err, "WRONGTYPE")
	assert.Equal(t, map[string]string{"relayed:b": "list"}, v.layout(), "no mark, no job written")
}
