// Package redact hides secrets in what exq prints: a Redis URL's password, so that it never
// reaches a log, an error or the exq command's output.
package redact

import (
	"net/url"
	"strings"
)

// URL hides the password of a Redis URL ("redis://:xxxxx@host:6379/0"), in the user part and
// in a Sentinel URL's ?password= (the master's, go-redis' ParseFailoverURL form).
func URL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		// Unparseable: say nothing about what might be a password.
		if i := strings.LastIndex(rawURL, "@"); i >= 0 {
			return "<redacted>" + rawURL[i:]
		}
		return "<redacted>"
	}
	if q := u.Query(); q.Get("password") != "" {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
