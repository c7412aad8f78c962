package exq

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A RedisURL that is not redis://host, rediss://host or unix:///path is refused before any
// connection (go-redis read "redis:pw@host:6702" as no host: localhost:6379), and the error
// never holds the password.
func TestRedisURLsWithoutAHostAreRefused(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"redis:s3cret@127.0.0.1:6702", "rediss:s3cret@h:1", "default:s3cret@127.0.0.1:6702",
		"redis//:s3cret@127.0.0.1:6702", "127.0.0.1:6379", "http://:s3cret@h:1", "redis://", "unix://"} {
		_, err := NewAPI(context.Background(), ClientOptions{RedisURL: u})
		require.ErrorIs(t, err, ErrInvalidOptions, u)
		assert.NotContains(t, err.Error(), "s3cret", u)
		assert.True(t, strings.HasPrefix(err.Error(), "exq: invalid options: RedisURL: "), err.Error())
	}
}
