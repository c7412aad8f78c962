// Package redact hides secrets in what exq prints: a Redis URL's password, so that it never
// reaches a log, an error or the exq command's output.
package redact

import (
	"net/url"
	"strings"
)

// mask replaces a secret.
const mask = "xxxxx"

// URL hides the password of a Redis URL ("redis://:xxxxx@host:6379/0"): in the user part, in
// every query parameter whose name holds "password" (a Sentinel URL's ?password= and
// ?sentinel_password=), and in a URL written without "//" ("redis:pw@host", "default:pw@host"),
// where everything before the last "@" may be a password.
func URL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		// Unparseable, or not a URL at all: say nothing about what might be a password.
		if i := strings.LastIndex(rawURL, "@"); i >= 0 {
			return "<redacted>" + rawURL[i:]
		}
		return "<redacted>"
	}
	q := u.Query()
	changed := false
	for k, vs := range q {
		if strings.Contains(strings.ToLower(k), "password") {
			for i := range vs {
				vs[i], changed = mask, true
			}
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	if u.Opaque != "" {
		// No authority: the user info, if any, is not where url.URL.Redacted looks.
		if i := strings.LastIndex(u.Opaque, "@"); i >= 0 {
			u.Opaque = mask + u.Opaque[i:]
		}
		return u.Scheme + ":" + u.Opaque + query(u)
	}
	return u.Redacted()
}

func query(u *url.URL) string {
	if u.RawQuery == "" {
		return ""
	}
	return "?" + u.RawQuery
}

// Secrets lists the passwords a Redis URL carries (user info and password query parameters,
// raw and %-escaped), for scrubbing messages that might quote them; nil when it has none.
func Secrets(rawURL string) []string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s, url.QueryEscape(s), url.PathEscape(s))
		}
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
	}
	if u.Opaque != "" {
		if i := strings.LastIndex(u.Opaque, "@"); i >= 0 {
			user := u.Opaque[:i]
			add(user)
			if _, p, ok := strings.Cut(user, ":"); ok {
				add(p)
			}
		}
	}
	for k, vs := range u.Query() {
		if strings.Contains(strings.ToLower(k), "password") {
			for _, v := range vs {
				add(v)
			}
		}
	}
	return out
}

// Scrub replaces every password of rawURL found in msg by xxxxx.
func Scrub(msg, rawURL string) string {
	for _, s := range Secrets(rawURL) {
		msg = strings.ReplaceAll(msg, s, mask)
	}
	return msg
}
