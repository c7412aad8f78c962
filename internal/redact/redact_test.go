package redact

import "testing"

func TestURLHidesEveryPassword(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"redis://:s3cret@127.0.0.1:6379/0", "redis://:xxxxx@127.0.0.1:6379/0"},
		{"rediss://user:s3cret@host:6380/1", "rediss://user:xxxxx@host:6380/1"},
		{"redis://s1:26379/0?master_name=m&password=s3cret", "redis://s1:26379/0?master_name=m&password=xxxxx"},
		{"redis://:s3cret@[bad", "<redacted>@[bad"},
		{"%zz", "<redacted>"},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
