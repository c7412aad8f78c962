// Package security_test checks what exq does with secrets and restricted connections, against
// private redis-server processes: a Redis password never reaches a log line or an error, TLS
// works from a rediss:// URL and from a caller's client, and a Redis ACL user limited to the
// node's namespace can do all of exq's work.
package security_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/testutil"
)

// redisLog receives go-redis's own log lines (reconnects, handshake fallbacks), so the tests
// can check them for secrets too. Set once, before any test, as go-redis's logger is global.
var redisLog = &logBuffer{}

func TestMain(m *testing.M) {
	redis.SetLogger(redisLog)
	testutil.MainLeak(m)
}
