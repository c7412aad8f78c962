package web

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job's page shows the durable steps it saved, escaped; a job that saved none shows no such
// section, and a steps key that holds no hash is said on the page without failing it.
func TestJobPageShowsTheStepsTheJobSaved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	for _, jid := range []string{"stepped", "plain", "wrongtype"} {
		f.zadd(f.keys.Retry(), time.Now().Add(time.Hour), `{"class":"W","args":[],"queue":"q","jid":"`+jid+`","retry":3,"retry_count":1,"expires_at":1900000000.5}`)
	}
	require.NoError(t, f.rdb.HSet(ctx, f.keys.Steps("stepped"), "charge", `"ch_1001"`, "<b>name</b>", `"<script>alert(1)</script>"`).Err())
	require.NoError(t, f.rdb.Set(ctx, f.keys.Steps("wrongtype"), "x", 0).Err())

	body := f.page("/retries/stepped")
	assert.Contains(t, body, "<h2>Durable steps</h2>")
	assert.Contains(t, body, "<th>charge</th><td><code>&#34;ch_1001&#34;</code>")
	assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.NotContains(t, body, "<script>alert")
	assert.Contains(t, body, "&lt;b&gt;name&lt;/b&gt;")
	assert.Contains(t, body, "2030-03-17 17:46:40 UTC", "expires_at is read as a time")

	assert.NotContains(t, f.page("/retries/plain"), "Durable steps")
	body = f.page("/retries/wrongtype")
	assert.Contains(t, body, "Durable steps")
	assert.Contains(t, body, "WRONGTYPE")
}
