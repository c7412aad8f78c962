package exq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// A namespace without a hash tag spreads its keys over a cluster's slots, where exq's scripts
// cannot run: Start, NewClient and NewAPI refuse it before connecting, naming the field.
func TestClusterRefusesANamespaceWithoutHashTag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cc.Close()
	for _, tc := range []struct {
		name string
		o    ClientOptions
		want string
	}{
		{"default namespace", ClientOptions{Redis: cc},
			`exq: invalid options: Namespace: "exq" needs a hash tag such as "{exq}" on a Redis Cluster`},
		{"empty tag", ClientOptions{Redis: cc, Namespace: "{}app"}, `Namespace: "{}app" needs a hash tag`},
		{"no namespace", ClientOptions{Redis: cc, NoNamespace: true}, "exq: invalid options: NoNamespace: "},
		{"cluster URL", ClientOptions{RedisURL: "redis://127.0.0.1:1?cluster=true", Namespace: "jobs"},
			`Namespace: "jobs" needs a hash tag such as "{jobs}"`},
		{"cluster=yes", ClientOptions{RedisURL: "redis://127.0.0.1:1?cluster=yes", Namespace: "{jobs}"},
			`exq: invalid options: RedisURL: cluster="yes": the only value is true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for what, open := range map[string]func() error{
				"NewClient": func() error { _, err := NewClient(ctx, tc.o); return err },
				"NewAPI":    func() error { _, err := NewAPI(ctx, tc.o); return err },
				"Start": func() error {
					_, err := Start(ctx, Options{RedisURL: tc.o.RedisURL, Redis: tc.o.Redis, Namespace: tc.o.Namespace,
						NoNamespace: tc.o.NoNamespace, Logger: testLogger()})
					return err
				},
			} {
				err := open()
				require.ErrorIs(t, err, ErrInvalidOptions, what)
				assert.Contains(t, err.Error(), tc.want, what)
			}
		})
	}
	// With a tag the options are fine; only the connection fails.
	_, err := NewClient(ctx, ClientOptions{Redis: cc, Namespace: "{exq}", RedisTimeout: 200 * time.Millisecond})
	require.ErrorIs(t, err, ErrRedisUnavailable)
}

// RedisURL with cluster=true builds a cluster client with exq's settings, on which a node runs
// jobs, unique locks hold and the API counts.
func TestClusterClientFromURLRunsJobs(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.ClusterOptions{})
	ctx := context.Background()
	rec := &recorder{}
	e, err := Start(ctx, Options{RedisURL: c.URL() + "&dial_timeout=2s", Namespace: "{exqtest}", Logger: testLogger(),
		PollTimeout: 20 * time.Millisecond, SchedulerPollTimeout: 20 * time.Millisecond,
		Workers: map[string]Worker{"W": rec}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Stop(ctx)) }()
	cc, ok := e.conn.Client().(*redis.ClusterClient)
	require.True(t, ok, "a cluster client, got %T", e.conn.Client())
	o := cc.Options()
	assert.Equal(t, -1, o.MaxRetries)
	assert.Equal(t, time.Second, o.ClusterStateReloadInterval)
	assert.True(t, o.ContextTimeoutEnabled)
	assert.Equal(t, DefaultRedisTimeout, o.ReadTimeout)
	assert.Equal(t, 2*time.Second, o.DialTimeout, "a timeout given in the URL wins")
	assert.Len(t, o.Addrs, 3)

	_, err = e.Enqueue(ctx, "default", "W", []any{1})
	require.NoError(t, err)
	_, err = e.EnqueueIn(ctx, "default", "W", time.Millisecond, []any{2})
	require.NoError(t, err)
	u := Unique(UniqueOpts{Until: UntilExpiry, For: time.Hour})
	_, err = e.Enqueue(ctx, "default", "W", []any{3}, u)
	require.NoError(t, err)
	_, err = e.Enqueue(ctx, "default", "W", []any{3}, u)
	require.True(t, errors.Is(err, ErrUniqueConflict), "%v", err)
	testutil.WaitFor(t, "three jobs ran", func() bool { return rec.count() == 3 })

	api, err := NewAPI(ctx, ClientOptions{RedisURL: c.URL(), Namespace: "{exqtest}"})
	require.NoError(t, err)
	defer api.Close()
	testutil.WaitFor(t, "the API counts them", func() bool {
		s, err := api.Stats(ctx)
		return err == nil && s.Processed == 3
	})
}
