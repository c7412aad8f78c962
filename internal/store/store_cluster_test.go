package store

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// The store's Redis Cluster paths, on the private test cluster (started on first use): the
// calls that must go to the master of the namespace's slot, and the client exq builds.

func TestOnAClusterTheStoreReadsAndWaitsOnTheMasterOfItsSlot(t *testing.T) {
	t.Parallel()
	master, cluster, ns := testutil.ClusterRedis(t)
	jq := New(cluster, Config{Namespace: ns, Node: "n1"})
	v := &env{t: t, rdb: master, ns: ns}

	_, err := jq.Enqueue(ctx(t), "q", job("q", "a"), nil)
	require.NoError(t, err)
	res, err := jq.Fetch(ctx(t), []FetchReq{{Queue: "q", N: 1}}, time.Minute, 0)
	require.NoError(t, err)
	require.Len(t, res.Jobs[0], 1)
	require.NoError(t, master.LPush(ctx(t), v.p("queue:backup::n1::exq-only"), "j").Err())
	qs, err := jq.BackupQueuesOf(ctx(t), "n1")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"q", "q", "exq-only"}, qs, "recorded, and found by a SCAN of the slot's master")

	info, err := jq.ServerInfo(ctx(t))
	require.NoError(t, err)
	assert.Contains(t, info, "cluster_enabled:1")

	var logs bytes.Buffer
	waiting := New(cluster, Config{Namespace: ns, Node: "n1", WaitReplicas: 1, WaitTimeout: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	_, err = waiting.Enqueue(ctx(t), "q", job("q", "b"), nil)
	assert.ErrorIs(t, err, ErrNotReplicated, "the test cluster has no replicas")
	failed, err := waiting.AckMany(ctx(t), []AckReq{{Queue: "q", Raw: res.Jobs[0][0]}})
	require.NoError(t, err, "a shortfall is logged, not returned")
	assert.Nil(t, failed)
	assert.Empty(t, v.list(v.p("queue:backup::n1::q")))
}

func TestShardNamespacesOnAClusterSitOnDifferentMasters(t *testing.T) {
	t.Parallel()
	_, cluster, _ := testutil.ClusterRedis(t)
	nss, err := ShardNamespaces(ctx(t), cluster, "shard", 3)
	require.NoError(t, err)
	require.Len(t, nss, 3)
	masters := map[string]bool{}
	for _, ns := range nss {
		assert.True(t, strings.HasPrefix(ns, "{shard") && strings.HasSuffix(ns, "}"), ns)
		m, err := cluster.MasterForKey(ctx(t), ns+":queues")
		require.NoError(t, err)
		masters[m.Options().Addr] = true
	}
	assert.Len(t, masters, 3, "one namespace per master")

	_, err = ShardNamespaces(ctx(t), cluster, "shard", 4)
	assert.ErrorContains(t, err, "found 3 masters for 4 shards")
}

func TestOpenBuildsAClusterClientFromAClusterURL(t *testing.T) {
	t.Parallel()
	addrs := testutil.ClusterAddrs(t)
	url := "redis://" + addrs[0] + "?cluster=true"
	for _, a := range addrs[1:] {
		url += "&addr=" + a
	}
	c, err := Open(ctx(t), ConnOptions{URL: url, Timeout: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	assert.True(t, IsCluster(c.Client()))
	ns := "{" + testutil.Namespace(t) + "}"
	t.Cleanup(func() { testutil.DeleteNamespace(c.Client(), ns) })
	jq, err := c.Store(Config{Namespace: ns})
	require.NoError(t, err)
	_, err = jq.Enqueue(ctx(t), "q", job("q", "a"), nil)
	require.NoError(t, err, "a script through the hooks exq adds")
	sizes, err := jq.QueueSizes(ctx(t), []string{"q"})
	require.NoError(t, err, "a pipeline through them")
	assert.Equal(t, map[string]int64{"q": 1}, sizes)
}
