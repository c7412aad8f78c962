package store

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// Per-function tests of connection building (URLs, Sentinel and Cluster clients), Open and
// Close, WAIT for replicas, and the namespaces of a sharded setup.

func TestCheckURLRefusesURLsThatNameAnotherServerThanMeant(t *testing.T) {
	for _, tc := range []struct {
		url, err string
	}{
		{"redis://localhost:6379/0", ""},
		{"rediss://user:pw@host:6380", ""},
		{"unix:///run/redis.sock", ""},
		{"redis:pw@host:6702", "names no host"},
		{"redis:///0", "names no host"},
		{"unix://", "names no socket"},
		{"http://host:6379", "scheme must be"},
		{"redis://:p#ss@host:6379", "not a valid URL"},
	} {
		err := CheckURL(tc.url)
		if tc.err == "" {
			assert.NoError(t, err, tc.url)
			continue
		}
		assert.ErrorIs(t, err, ErrInvalidOptions, tc.url)
		assert.ErrorContains(t, err, tc.err, tc.url)
		assert.NotContains(t, err.Error(), "pw@", "%s: the password is masked", tc.url)
	}
}

func TestClusterURLAcceptsOnlyTrue(t *testing.T) {
	for _, tc := range []struct {
		url     string
		cluster bool
		err     bool
	}{
		{"redis://h:1?cluster=true", true, false},
		{"redis://h:1", false, false},
		{"redis://h:1?cluster=yes", false, true},
		{"redis://h:1?cluster=", false, true},
		{"::not a url", false, false},
	} {
		c, err := ClusterURL(tc.url)
		assert.Equal(t, tc.cluster, c, tc.url)
		if tc.err {
			assert.ErrorIs(t, err, ErrInvalidOptions, tc.url)
		} else {
			assert.NoError(t, err, tc.url)
		}
	}
}

func TestNewURLClientAppliesExqsDefaultsUnlessTheURLSetsThem(t *testing.T) {
	c, err := NewURLClient("redis://127.0.0.1:1/2", 3*time.Second)
	require.NoError(t, err)
	o := c.Options()
	assert.Equal(t, 2, o.DB)
	assert.Equal(t, 3*time.Second, o.ReadTimeout)
	assert.Equal(t, 3*time.Second, o.WriteTimeout)
	assert.Equal(t, 3*time.Second, o.DialTimeout)
	assert.Equal(t, 0, o.MaxRetries, "no resends (go-redis keeps -1 as 0)")
	assert.True(t, o.ContextTimeoutEnabled)
	assert.Equal(t, 0, ClientRetries(c))
	assert.Equal(t, 3*time.Second, ReadTimeout(c))
	require.NoError(t, c.Close())

	c, err = NewURLClient("redis://127.0.0.1:1/0?read_timeout=7s&max_retries=2", time.Second)
	require.NoError(t, err)
	assert.Equal(t, 7*time.Second, c.Options().ReadTimeout)
	assert.Equal(t, 2, ClientRetries(c))
	require.NoError(t, c.Close())

	c, err = NewURLClient("redis://:pw@127.0.0.1:1/0?master_name=mymaster&addr=127.0.0.1:2", time.Second)
	require.NoError(t, err, "a Sentinel URL builds a failover client (it dials on first use)")
	assert.Equal(t, 0, c.Options().MaxRetries)
	require.NoError(t, c.Close())

	for _, bad := range []string{"redis://:s#cret@host/0", "redis://host:1/0?db=x", "redis://:secret@h:1/0?master_name="} {
		_, err := NewURLClient(bad, time.Second)
		assert.ErrorIs(t, err, ErrInvalidOptions, bad)
		assert.NotContains(t, err.Error(), "cret", bad)
	}
}

func TestNewClusterClientAppliesExqsDefaults(t *testing.T) {
	c, err := newClusterClient("redis://127.0.0.1:1?cluster=true&addr=127.0.0.1:2&dial_timeout=9s", 2*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	o := c.Options()
	assert.ElementsMatch(t, []string{"127.0.0.1:1", "127.0.0.1:2"}, o.Addrs)
	assert.Equal(t, 2*time.Second, o.ReadTimeout)
	assert.Equal(t, 9*time.Second, o.DialTimeout)
	assert.Equal(t, -1, o.MaxRetries)
	assert.Equal(t, clusterReloadInterval, o.ClusterStateReloadInterval)
	assert.True(t, IsCluster(c))
	assert.Equal(t, 2*time.Second, ReadTimeout(c))
	assert.Equal(t, -1, ClientRetries(c))

	_, err = newClusterClient("redis://:s#cret@h:1?cluster=true", time.Second)
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

func TestClientRetriesAndReadTimeoutOfOtherClients(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}, MaxRetries: 4})
	t.Cleanup(func() { _ = ring.Close() })
	assert.Equal(t, 4, ClientRetries(ring))
	assert.Zero(t, ReadTimeout(ring), "unknown")
	assert.False(t, IsCluster(ring))
}

func TestOpenUsesTheGivenClientAndLeavesItOpen(t *testing.T) {
	rdb, _ := testutil.Redis(t)
	var logs bytes.Buffer
	c, err := Open(ctx(t), ConnOptions{Client: rdb, Timeout: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	assert.Same(t, rdb, c.Client())
	now, err := c.Time(ctx(t))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), now, time.Hour)
	require.NoError(t, c.Close())
	require.NoError(t, rdb.Ping(ctx(t)).Err(), "not closed: the caller's")
	assert.Contains(t, logs.String(), "max_retries=3", "go-redis' default resends are worth a warning")
}

func TestOpenBuildsAClientFromTheURLAndWarnsOfResends(t *testing.T) {
	var logs bytes.Buffer
	url := testutil.RedisURL(t)
	c, err := Open(ctx(t), ConnOptions{URL: url + "?max_retries=3", Timeout: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	assert.Contains(t, logs.String(), "MaxRetries")
	require.NoError(t, c.Close())
	assert.Error(t, c.Client().Ping(context.Background()).Err(), "its own client is closed")
}

func TestOpenNamesTheAddressButNeverThePassword(t *testing.T) {
	port := testutil.FreePort(t) // nothing listens there
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	_, err := Open(ctx(t), ConnOptions{URL: "redis://:hunter2@127.0.0.1:" + strconv.Itoa(port) + "/0", Timeout: 2 * time.Second, Logger: log})
	assert.ErrorIs(t, err, ErrRedisUnavailable)
	assert.ErrorContains(t, err, "127.0.0.1:"+strconv.Itoa(port))
	assert.NotContains(t, err.Error(), "hunter2")

	_, err = Open(ctx(t), ConnOptions{URL: "redis://:hunter2@h:1/0?db=x", Timeout: time.Second, Logger: log})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = Open(ctx(t), ConnOptions{URL: "redis://:s#cret@h:1?cluster=true", Timeout: time.Second, Logger: log})
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

func TestConnStoreRefusesAWaitTimeoutTheReadTimeoutWouldCut(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	c := &Conn{rdb: rdb}
	_, err := c.Store(Config{Namespace: "x", WaitReplicas: 1, WaitTimeout: time.Second})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "WaitTimeout")
	s, err := c.Store(Config{Namespace: "x", WaitReplicas: 1, WaitTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, "x", s.Namespace())
	s, err = c.Store(Config{Namespace: "x"})
	require.NoError(t, err)
	assert.Nil(t, s.wait, "no WAIT without WaitReplicas")
}

func TestShardNamespacesOnASingleRedisAreTheFirstNames(t *testing.T) {
	rdb, _ := testutil.Redis(t)
	ns, err := ShardNamespaces(ctx(t), rdb, "exq", 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"{exq0}", "{exq1}", "{exq2}"}, ns)
}

// With WaitReplicas and no replica (the test Redis has none), every write runs and then
// reports ErrNotReplicated after WaitTimeout.
func TestWaitReplicasReportsAShortfallAfterTheWriteRan(t *testing.T) {
	v := newEnv(t)
	var logs bytes.Buffer
	jq := New(v.rdb, Config{Namespace: v.ns, Node: "n1", WaitReplicas: 1, WaitTimeout: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	_, err := jq.Enqueue(ctx(t), "q", job("q", "1"), nil)
	assert.ErrorIs(t, err, ErrNotReplicated)
	assert.ErrorContains(t, err, "0 of 1 replicas")
	assert.Equal(t, []string{job("q", "1")}, v.list(v.p("queue:q")), "the job was written")

	holders, err := jq.EnqueueAll(ctx(t), []BatchItem{{Queue: "q", Job: job("q", "2")}})
	assert.ErrorIs(t, err, ErrNotReplicated)
	assert.Equal(t, []string{""}, holders, "the holders come with the shortfall")
	_, replErr, err := jq.EnqueueGroup(ctx(t), []BatchItem{{Queue: "q", Job: job("q", "3")}, {Queue: "q", Job: job("q", "4")}})
	require.NoError(t, err)
	assert.ErrorIs(t, replErr, ErrNotReplicated)

	res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 4}}, time.Minute, 0)
	require.NoError(t, err, "a fetch does not wait")
	require.Len(t, res.Jobs[0], 4)
	// Outcome writes count as written and log the shortfall, once a minute.
	ok, err := jq.Retry(ctx(t), "q", res.Jobs[0][0], "r", time.Unix(1000, 0), "")
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, jq.Ack(ctx(t), "q", res.Jobs[0][1], "", "", ""))
	require.NoError(t, jq.Ack(ctx(t), "q", res.Jobs[0][2], "tok", "j", ""))
	failed, err := jq.AckMany(ctx(t), []AckReq{{Queue: "q", Raw: res.Jobs[0][3]}})
	require.NoError(t, err)
	assert.Nil(t, failed)
	assert.Empty(t, v.list(v.p("queue:backup::n1::q")))
	assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("not confirmed by enough replicas")), "%s", logs.String())

	v.garbage(v.p("queue:backup::n1::bad"))
	_, err = jq.AckMany(ctx(t), []AckReq{{Queue: "bad", Raw: "x"}})
	assert.ErrorContains(t, err, "WRONGTYPE", "a failed write is the error, not a shortfall")
}

func TestWaitForLeavesRoomInTheCallersDeadline(t *testing.T) {
	w := newReplicaWait(1, time.Minute, nil)
	assert.Equal(t, time.Minute, w.waitFor(context.Background()))
	c, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	d := w.waitFor(c)
	assert.LessOrEqual(t, d, 3*time.Second, "a quarter of what is left is kept")
	assert.Greater(t, d, time.Duration(0))
	done, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	assert.Equal(t, time.Millisecond, w.waitFor(done), "never WAIT 0, which blocks for ever")
	assert.Nil(t, newReplicaWait(0, time.Second, nil))
}
