package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
)

// The keys page lists a queue's keys with the most jobs waiting first, escaped; Pause and
// Resume POST with the CSRF token and change the key's state; read-only mode hides the buttons
// and refuses the POST.
func TestKeysPageListsTopKeysAndPausesAndResumesThem(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	c, err := exq.NewClient(ctx, exq.ClientOptions{Redis: f.client, Namespace: f.ns, Logger: quiet})
	require.NoError(t, err)
	defer c.Close()
	const evil = `<script>alert(1)</script>`
	for key, n := range map[string]int{"big": 3, evil: 1} {
		for range n {
			_, err := c.Enqueue(ctx, "sync", "W", nil, exq.Key(key))
			require.NoError(t, err)
		}
	}
	body := f.page("/queues/sync/keys")
	assert.NotContains(t, body, evil, "a key is escaped")
	assert.Contains(t, body, html.EscapeString(evil))
	assert.Less(t, strings.Index(body, ">big<"), strings.Index(body, html.EscapeString(evil)), "the largest backlog first")
	assert.Contains(t, body, `/queues/sync/keys/pause`)
	assert.Contains(t, f.page("/queues/sync"), `/queues/sync/keys"`, "the queue's page links its keys")

	code, loc := f.post("/queues/sync/keys/pause", url.Values{"key": {evil}})
	require.Equal(t, http.StatusSeeOther, code)
	assert.Equal(t, "/queues/sync/keys?done=kpaused&n=0", loc)
	rep, err := f.api.Keys(ctx, "sync", exq.KeysOptions{})
	require.NoError(t, err)
	states := map[string]string{}
	for _, k := range rep.Keys {
		states[k.Key] = k.State
	}
	assert.Equal(t, map[string]string{"big": exq.KeyReady, evil: exq.KeyPaused}, states)
	body = f.page("/queues/sync/keys")
	assert.Contains(t, body, `/queues/sync/keys/resume`)

	code, _ = f.post("/queues/sync/keys/resume", url.Values{"key": {evil}})
	require.Equal(t, http.StatusSeeOther, code)
	rep, err = f.api.Keys(ctx, "sync", exq.KeysOptions{})
	require.NoError(t, err)
	for _, k := range rep.Keys {
		assert.Equal(t, exq.KeyReady, k.State, k.Key)
	}
	code, _ = f.post("/queues/sync/keys/pause", url.Values{"key": {""}})
	assert.Equal(t, http.StatusBadRequest, code, "an empty key is refused")
	code, _ = f.post("/queues/sync/keys/stop", url.Values{"key": {"big"}})
	assert.Equal(t, http.StatusBadRequest, code)

	ro := newFixture(t, Options{ReadOnly: true})
	ro.rdb, ro.ns, ro.keys = f.rdb, f.ns, f.keys
	ro.h = New(f.api, Options{ReadOnly: true, Logger: quiet, AllowedHosts: []string{"example.com"}})
	body = ro.page("/queues/sync/keys")
	assert.Contains(t, body, ">big<")
	assert.NotContains(t, body, "/keys/pause")
	code, _ = ro.post("/queues/sync/keys/pause", url.Values{"key": {"big"}})
	assert.Equal(t, http.StatusForbidden, code)
}
