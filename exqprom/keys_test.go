package exqprom

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// A keyed queue of Options.KeyQueues exports its keys by state and only its TopKeys keys with
// the most jobs waiting, however many keys it has: the series stay bounded.
func TestKeyGaugesExportTheTopKeysOnly(t *testing.T) {
	ctx := context.Background()
	rdb, ns := testutil.Redis(t)
	api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	defer api.Close()
	cl, err := exq.NewClient(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns, Logger: quietLogger()})
	require.NoError(t, err)
	defer cl.Close()
	for i := range 30 { // key k00 has 1 job, k29 has 30
		for range i + 1 {
			_, err := cl.Enqueue(ctx, "sync", "Sync", nil, exq.Key(fmt.Sprintf("k%02d", i)))
			require.NoError(t, err)
		}
	}
	require.NoError(t, api.PauseKey(ctx, "sync", "k29"))
	c := New(api, Options{CacheFor: NoCache, KeyQueues: []string{"sync"}, TopKeys: 3})
	s, _ := scrape(t, server(t, c))
	assert.Equal(t, map[string]float64{"key=k29,queue=sync": 30, "key=k28,queue=sync": 29, "key=k27,queue=sync": 28},
		s.values("exq_key_waiting"))
	assert.Len(t, s.values("exq_key_running"), 3)
	assert.Equal(t, map[string]float64{"queue=sync,state=ready": 29, "queue=sync,state=blocked": 0,
		"queue=sync,state=held": 0, "queue=sync,state=paused": 1}, s.values("exq_keys"))

	none, _ := scrape(t, server(t, New(api, Options{CacheFor: NoCache})))
	assert.Empty(t, none.values("exq_key_waiting"), "no keyed queue named: no key series")
}
