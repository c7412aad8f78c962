package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/exqgo/exq/internal/testutil"
)

// A Redis URL that does not parse as what it claims is refused (exit 2, nothing written, no
// connection to any server), and no error or warning shows a password.
func TestRedisURLsThatDoNotParseAreRefusedWithoutThePassword(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	port := strconv.Itoa(srv.Port)
	for _, tc := range []struct{ url, want string }{
		{"redis:s3cret@127.0.0.1:" + port,
			"exq stats: invalid options: RedisURL: redis:xxxxx@127.0.0.1:" + port + " names no host: write redis://[user:password@]host:port/db (see exq stats --help)\n"},
		{"default:s3cret@127.0.0.1:" + port,
			"exq stats: invalid options: RedisURL: default:xxxxx@127.0.0.1:" + port + ": the scheme must be redis://, rediss:// or unix:// (see exq stats --help)\n"},
		{"redis//:s3cret@127.0.0.1:" + port,
			"exq stats: invalid options: RedisURL: <redacted>@127.0.0.1:" + port + ": the scheme must be redis://, rediss:// or unix:// (see exq stats --help)\n"},
		{"rediss:s3cret@127.0.0.1:" + port,
			"exq stats: invalid options: RedisURL: rediss:xxxxx@127.0.0.1:" + port + " names no host: write rediss://[user:password@]host:port/db (see exq stats --help)\n"},
	} {
		r := runBin(t, exqBin, "", "stats", "--redis-url", tc.url)
		assert.Equal(t, 2, r.code, tc.url)
		assert.Empty(t, r.out, tc.url)
		assert.Equal(t, tc.want, r.errOut, tc.url)
	}
	// A Sentinel URL's passwords (the sentinels' and the master's) stay hidden in the error.
	r := runBin(t, exqBin, "", "stats", "--redis-url", "redis://127.0.0.1:1/0?master_name=m&sentinel_password=s3cret&password=s3cret")
	assert.Equal(t, 2, r.code, r.errOut)
	assert.NotContains(t, r.errOut, "s3cret")
	assert.True(t, strings.Contains(r.errOut, "sentinel_password=xxxxx"), r.errOut)
}
