package redact

import (
	"strings"
	"testing"
)

func TestURLHidesEveryPassword(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"redis://:s3cret@127.0.0.1:6379/0", "redis://:xxxxx@127.0.0.1:6379/0"},
		{"rediss://user:s3cret@host:6380/1", "rediss://user:xxxxx@host:6380/1"},
		{"redis://s1:26379/0?master_name=m&password=s3cret", "redis://s1:26379/0?master_name=m&password=xxxxx"},
		{"redis://s1:26379/0?master_name=m&sentinel_password=s3cret", "redis://s1:26379/0?master_name=m&sentinel_password=xxxxx"},
		{"redis:s3cret@127.0.0.1:6702", "redis:xxxxx@127.0.0.1:6702"},
		{"default:s3cret@127.0.0.1:6702", "default:xxxxx@127.0.0.1:6702"},
		{"redis//:s3cret@127.0.0.1:6702", "<redacted>@127.0.0.1:6702"},
		{"redis://:s3cret@[bad", "<redacted>@[bad"},
		{"%zz", "<redacted>"},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestScrubRemovesEveryPasswordFromAMessage(t *testing.T) {
	for _, u := range []string{
		"redis://:s3cret@h:1/0", "redis:s3cret@h:1", "default:s3cret@h:1",
		"redis://h:1/0?master_name=m&sentinel_password=s3cret", "redis://h:1/0?master_name=m&password=s3cret",
	} {
		if got := Scrub("dial failed: s3cret; again s3cret", u); strings.Contains(got, "s3cret") {
			t.Errorf("Scrub with %q kept the password: %q", u, got)
		}
	}
}
