package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// shardedFixture is two namespaces (two fixtures) and a sharded dashboard over both,
// mounted under /admin.
func shardedFixture(t *testing.T, o Options) (s *fixture, shards [2]*fixture) {
	t.Helper()
	shards[0], shards[1] = newFixture(t, Options{}), newFixture(t, Options{})
	api, err := exq.NewShardedAPI(context.Background(), exq.ClientOptions{Redis: shards[0].client, Logger: quiet},
		exq.ShardOptions{Namespaces: []string{shards[0].ns, shards[1].ns}})
	require.NoError(t, err)
	o.Prefix, o.Logger, o.AllowedHosts = "/admin", quiet, []string{"example.com"}
	s = &fixture{t: t, rdb: shards[0].rdb, client: shards[0].client, h: NewSharded(api, o), prefix: "/admin"}
	return s, shards
}

func TestShardedDashboardSumsShardsAndServesEachShardsPages(t *testing.T) {
	t.Parallel()
	s, shards := shardedFixture(t, Options{})
	now := time.Now()
	shards[0].zadd(shards[0].keys.Retry(), now.Add(time.Minute), job("r-0", "mail", "Mailer", `[1]`))
	shards[1].zadd(shards[1].keys.Retry(), now.Add(time.Minute), job("r-1a", "mail", "Mailer", `[2]`))
	shards[1].zadd(shards[1].keys.Retry(), now.Add(time.Minute), job("r-1b", "mail", "Mailer", `[3]`))
	shards[1].zadd(shards[1].keys.Dead(), now, job("d-1", "mail", "Mailer", `[4]`))

	body := s.page("/")
	assert.Contains(t, body, "<h1>Shards</h1>")
	assert.Contains(t, body, "<b>3</b> retries", "the shards' retries summed")
	assert.Contains(t, body, "<b>1</b> dead")
	for i, f := range shards {
		assert.Contains(t, body, `href="/admin/shards/`+string(rune('0'+i))+`/">`+f.ns+`</a>`)
	}

	// Shard 1's pages, under its own prefix, show its jobs only, with a link back.
	retries := s.page("/shards/1/retries")
	assert.Contains(t, retries, "r-1a")
	assert.Contains(t, retries, "r-1b")
	assert.NotContains(t, retries, "r-0")
	assert.Contains(t, retries, `href="/admin/shards/1/dead"`)
	assert.Contains(t, retries, `href="/admin/">All shards</a>`)
	assert.Contains(t, s.page("/shards/0/retries"), "r-0")

	// An action on shard 1 goes to shard 1, and its CSRF check holds.
	code, _ := s.rawPost("/shards/1/retries/jobs", url.Values{"op": {"delete"}, "job": {job("r-1a", "mail", "Mailer", `[2]`)}}, "", nil)
	assert.Equal(t, http.StatusForbidden, code, "no token: refused")
	assert.Len(t, shards[1].members(shards[1].keys.Retry()), 2)
	s.page("/shards/1/retries") // the shard's own cookie
	code, loc := s.post("/shards/1/retries/jobs", url.Values{"op": {"delete"}, "job": {job("r-1a", "mail", "Mailer", `[2]`)}})
	assert.Equal(t, http.StatusSeeOther, code)
	assert.True(t, strings.HasPrefix(loc, "/admin/shards/1/retries"), loc)
	assert.Len(t, shards[1].members(shards[1].keys.Retry()), 1)
	assert.Len(t, shards[0].members(shards[0].keys.Retry()), 1, "the other shard is untouched")

	for _, path := range []string{"/shards/2/", "/shards/01/", "/shards/x/", "/nope"} {
		code, _ := s.get(path)
		assert.Equal(t, http.StatusNotFound, code, path)
	}
	code, _ = s.get("/static/app.css")
	assert.Equal(t, http.StatusOK, code)
}

func TestShardedDashboardReadOnlyAppliesToEveryShard(t *testing.T) {
	t.Parallel()
	s, _ := shardedFixture(t, Options{ReadOnly: true})
	assert.NotContains(t, s.page("/shards/1/queues"), `method="post"`)
	code, _ := s.post("/shards/0/queues/mail/pause", nil)
	assert.Equal(t, http.StatusForbidden, code)
}
