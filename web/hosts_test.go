package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// DNS rebinding: a request whose Host is a name the dashboard was not told to serve is refused
// (421) before anything is read or written, even with a valid token and a matching Origin;
// addresses, localhost and the AllowedHosts names are served.
func TestRequestsForAnUnlistedHostNameAreRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{AllowedHosts: []string{"dash.internal:8443"}})
	f.seed()
	ctx := context.Background()
	get := func(host string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, "/queues", nil)
		req.Host = host
		res, body := f.do(req)
		return res.StatusCode, body
	}
	for _, host := range []string{"rebind.attacker.example", "rebind.attacker.example:7070", "example.com", "", "dash.internal.evil", "localhost.attacker.example"} {
		code, body := get(host)
		assert.Equal(t, http.StatusMisdirectedRequest, code, "Host %q", host)
		assert.NotContains(t, body, "mail", "Host %q: no page", host)
	}
	for _, host := range []string{"127.0.0.1:7070", "[::1]:7070", "localhost:7070", "localhost", "dash.internal", "DASH.INTERNAL.:8443", "10.1.2.3"} {
		code, body := get(host)
		assert.Equal(t, http.StatusOK, code, "Host %q: %s", host, body)
	}

	// The attacker's page, same-origin to the browser after rebinding: a token from its own
	// GET, Origin and Host its name. The queue stays unpaused.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "127.0.0.1:7070"
	res, _ := f.do(req)
	var token string
	for _, c := range res.Cookies() {
		if c.Name == csrfCookie {
			token = c.Value
		}
	}
	require.NotEmpty(t, token)
	form := url.Values{csrfField: {token}}
	post := httptest.NewRequest(http.MethodPost, "/queues/mail/pause", strings.NewReader(form.Encode()))
	post.Host = "rebind.attacker.example:7070"
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.Header.Set("Origin", "http://rebind.attacker.example:7070")
	post.Header.Set("Sec-Fetch-Site", "same-origin")
	post.AddCookie(&http.Cookie{Name: csrfCookie, Value: token})
	res, _ = f.do(post)
	assert.Equal(t, http.StatusMisdirectedRequest, res.StatusCode)
	paused, err := f.api.PausedQueues(ctx)
	require.NoError(t, err)
	assert.Empty(t, paused, "the rebinding POST paused nothing")

}
