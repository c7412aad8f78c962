package relay

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

func doc(jid string) string {
	return `{"class":"W","args":[],"queue":"q","jid":"` + jid + `"}`
}

func TestPushRefusesBadJobsOneByOneAndReportsWrittenOnesBeforeTheHoldEnds(t *testing.T) {
	rdb, ns := testutil.Redis(t)
	st := store.New(rdb, store.Config{Namespace: ns})
	now := time.Now()
	var log []string
	o := Options{Now: now, MarkTTL: time.Minute, MaxBytes: 100,
		CheckQueue: func(q string) error {
			if q == "bad" {
				return errors.New("queue bad")
			}
			return nil
		},
		Hold: func(jids ...string) func() {
			log = append(log, "hold "+strings.Join(jids, " "))
			return func() { log = append(log, "release") }
		},
		Written:  func(r Result) { log = append(log, "written "+r.JID) },
		Invalid:  func(i int, err error) error { return errors.New(strconv.Itoa(i) + ": " + err.Error()) },
		Conflict: func(holder, token string) error { return errors.New(holder + " holds " + token) },
	}
	jobs := []Job{
		{Doc: doc("a")},
		{Doc: `{"class":"W","args":[],"queue":"bad","jid":"x"}`},
		{Doc: doc("big") + string(make([]byte, 100))},
		{Doc: doc("b"), At: now.Add(time.Hour)},
	}
	rs, err := Push(context.Background(), st, jobs, o)
	require.NoError(t, err)
	require.Len(t, rs, 4)
	assert.Equal(t, Result{JID: "a", Class: "W", Queue: "q"}, rs[0])
	assert.EqualError(t, rs[1].Err, "1: queue bad")
	assert.Equal(t, "x", rs[1].JID, "a refused job is named")
	assert.ErrorContains(t, rs[2].Err, "2: the job takes")
	assert.Equal(t, now.Add(time.Hour), rs[3].At, "a later due time is kept")
	assert.Equal(t, []string{"hold a b", "written a", "written b", "release"}, log)

	log = nil
	rs, err = Push(context.Background(), st, jobs[3:], o)
	require.NoError(t, err)
	assert.True(t, rs[0].Duplicate)
	assert.Empty(t, log[1:len(log)-1], "a duplicate is not reported written")
}
