package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// countedFixture is a fixture whose dashboard's Redis client counts the commands it sends.
func countedFixture(t *testing.T) (*fixture, *testutil.Counter) {
	t.Helper()
	f := newFixture(t, Options{})
	opts, err := redis.ParseURL(testutil.RedisURL(t))
	require.NoError(t, err)
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	counter := testutil.NewCounter()
	c.AddHook(counter)
	api, err := exq.NewAPI(context.Background(), exq.ClientOptions{Redis: c, Namespace: f.ns, Logger: quiet})
	require.NoError(t, err)
	f.api, f.h = api, New(api, Options{Logger: quiet, AllowedHosts: []string{"example.com"}})
	return f, counter
}

var nextLink = regexp.MustCompile(`<a href="(\?[^"]*)" rel="next">`)

// A filter and a search read at most scanLimit / searchLimit members per request and offer to
// go on: with 25 000 retries, ?q=nomatch read all 25 000 in one request.
func TestFiltersAndSearchesReadABoundedNumberOfJobsPerRequest(t *testing.T) {
	t.Parallel()
	if testutil.OnCluster() {
		t.Skip("counts one client's commands")
	}
	f, counter := countedFixture(t)
	ctx := context.Background()
	const n = 25_000
	at := time.Now().Add(time.Hour)
	_, err := f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			p.ZAdd(ctx, f.keys.Retry(), redis.Z{Score: float64(at.Unix() + int64(i)), Member: job(fmt.Sprintf("r%05d", i), "mail", "C", "[]")})
		}
		return nil
	})
	require.NoError(t, err)

	follow := func(first string, want []string) {
		t.Helper()
		path := first
		for i, w := range want {
			before := counter.Count("zrange")
			body := f.page(path)
			read := counter.Count("zrange") - before
			assert.LessOrEqual(t, read, 21, "%s: %d ZRANGE calls", path, read)
			assert.Contains(t, body, w, "%s", path)
			m := nextLink.FindStringSubmatch(body)
			if i == len(want)-1 {
				assert.Nil(t, m, "%s: the last page offers no more", path)
				return
			}
			require.NotNil(t, m, "%s: a link to go on", path)
			base, _, _ := strings.Cut(first, "?")
			path = base + html.UnescapeString(m[1])
		}
	}
	follow("/retries?q=nomatch", []string{"Searched jobs 1–10,000 of 25,000", "Searched jobs 10,001–20,000 of 25,000", "Searched jobs 20,001–25,000 of 25,000"})
	follow("/search?jid=nomatch", []string{"as far as Retries, after 20,000 of its jobs", "in the rest of every queue"})
	assert.Contains(t, f.page("/search?jid=r00042"), `href="/retries/r00042"`)
}

// A cross-site GET of a page that scans is refused before it reads anything; plain listings
// may still be linked to from elsewhere.
func TestCrossSiteGetsOfExpensivePagesAreRefused(t *testing.T) {
	t.Parallel()
	if testutil.OnCluster() {
		t.Skip("counts one client's commands")
	}
	f, counter := countedFixture(t)
	f.seed()
	get := func(path, site string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		res, body := f.do(req)
		return res.StatusCode, body
	}
	for _, path := range []string{"/retries?q=nomatch", "/retries?class=C", "/dead?queue=q", "/search?jid=r1", "/retries/r1", "/retries/r1?raw", "/queues/mail/jobs/q1", "/queues/mail", "/retries?from=5"} {
		for _, site := range []string{"cross-site", "same-site"} {
			before := counter.RoundTrips()
			code, body := get(path, site)
			assert.Equal(t, http.StatusForbidden, code, "%s from %s", path, site)
			assert.Equal(t, before, counter.RoundTrips(), "%s from %s: nothing read", path, site)
			assert.Contains(t, body, "came from another site", path)
		}
		code, _ := get(path, "same-origin")
		assert.Equal(t, http.StatusOK, code, path)
	}
	for _, path := range []string{"/", "/retries", "/retries?page=2&sort=asc", "/queues", "/busy", "/periodic", "/stats.json"} {
		code, _ := get(path, "cross-site")
		assert.Equal(t, http.StatusOK, code, "a link from elsewhere to %s", path)
	}
}

// The queues page lists 100 queues at a time: 200 000 queue names made a 104 MB page.
func TestTheQueuesPageIsPaged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	names := make([]any, 250)
	for i := range names {
		names[i] = fmt.Sprintf("q%03d", i)
	}
	require.NoError(t, f.rdb.SAdd(ctx, f.keys.Queues(), names...).Err())
	p1 := f.page("/queues")
	assert.Contains(t, p1, ">q099<")
	assert.NotContains(t, p1, ">q100<")
	assert.Contains(t, p1, "Page 1 of 3")
	p3 := f.page("/queues?page=3")
	assert.Contains(t, p3, ">q249<")
	assert.NotContains(t, p3, ">q199<")
}
