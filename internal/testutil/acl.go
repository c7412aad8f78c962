package testutil

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis ACLs the README's security section gives, for namespace ns: what a node and the
// exq command need, the same without the wake-up channel (Redis 7 grants no channel by
// default, so "~exq:* +@all -@dangerous" is this one), and what a read-only dashboard needs.
func ACLRules(ns string) map[string][]string {
	keys := "~" + ns + ":*"
	return map[string][]string{
		"node":       {keys, "&" + ns + ":*", "+@all", "-@dangerous"},
		"nochannels": {keys, "resetchannels", "+@all", "-@dangerous"},
		"readonly":   {keys, "resetchannels", "-@all", "+@read", "+@connection", "+time", "-@dangerous"},
	}
}

// ACLServer is a private redis-server (never the shared test server: its ACLs stay as they
// are) with a user per ACLRules entry, each with password "pw-<name>".
type ACLServer struct {
	*Server
	Admin *redis.Client // the default user
}

// StartACLServer starts a private Redis 7 (or newer) with the users of ACLRules(ns). Older
// servers, which lack channel permissions, skip the test (counted).
func StartACLServer(t testing.TB, ns string) *ACLServer {
	t.Helper()
	srv := StartServer(t, ServerOptions{})
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := admin.Info(ctx, "server").Result()
	if err != nil {
		t.Fatalf("INFO: %v", err)
	}
	if v := field(info, "redis_version"); v < "7" {
		SkipMissing(t, "needs Redis 7 for channel permissions in ACLs; the server is "+v)
	}
	for name, rules := range ACLRules(ns) {
		args := []any{"ACL", "SETUSER", name, "reset", "on", ">pw-" + name}
		for _, r := range rules {
			args = append(args, r)
		}
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("ACL SETUSER %s %v: %v", name, rules, err)
		}
	}
	return &ACLServer{Server: srv, Admin: admin}
}

// UserURL is the URL that logs in as user name.
func (s *ACLServer) UserURL(name string) string {
	return "redis://" + name + ":pw-" + name + "@" + s.Addr() + "/0"
}

func field(info, key string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+":"); ok {
			return v
		}
	}
	return ""
}
