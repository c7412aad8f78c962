package exq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQueueNamesAreCheckedEverywhereAQueueIsNamed(t *testing.T) {
	t.Parallel()
	_, err := PrepareJob(time.Now(), JobSpec{Queue: ":mail", Class: "W"})
	assert.ErrorIs(t, err, ErrInvalidJob)
	assert.ErrorContains(t, err, `exq: enqueue: queue name ":mail" starts or ends with ':'`)
	_, err = Options{Queues: []Queue{{Name: "a/b"}}}.withDefaults(testHooks{})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "Queues[0].Name")
	_, err = PrepareJob(time.Now(), JobSpec{Queue: "mail:high", Class: "W"})
	assert.NoError(t, err, "a ':' inside a name is fine, as in Sidekiq")
}

func TestClientOptionsAreValidatedOnTheirOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := NewClient(ctx, ClientOptions{MaxRetries: -2})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "MaxRetries")
	_, err = NewAPI(ctx, ClientOptions{NoNamespace: true, Namespace: "x"})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "Namespace")
	c, err := ClientOptions{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, ClientOptions{RedisURL: DefaultRedisURL, RedisTimeout: DefaultRedisTimeout, Namespace: DefaultNamespace,
		MaxRetries: DefaultMaxRetries, Logger: c.Logger}, c)
	o := Options{RedisURL: "redis://h:1/2", Namespace: "n", MaxRetries: 3, Queues: []Queue{{Name: "q"}}}
	assert.Equal(t, ClientOptions{RedisURL: "redis://h:1/2", Namespace: "n", MaxRetries: 3}, o.ClientOptions())
}

func TestUniqueOptionNamesItsSettings(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "Unique(until success, for 1h0m0s)", Unique(UniqueOpts{Until: UntilSuccess, For: time.Hour}).String())
	assert.Equal(t, `Unique(until expiry, for 1m0s, token "t")`, Unique(UniqueOpts{Until: UntilExpiry, For: time.Minute, Token: "t"}).String())
}
