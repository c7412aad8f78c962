package exq

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq/internal/testutil"
)

// The ACLs the README gives, as a node uses them: with "node" (keys and channel of the
// namespace, every command but @dangerous) a node starts, runs a job and enqueues a periodic
// tick without a warning; with "nochannels" (Redis 7's default: no channel) it still runs
// jobs, and the missing channel is reported once, at Start.
func TestANodeRunsUnderTheDocumentedACLs(t *testing.T) {
	// Serial: asserts no WARN line; go-redis' one logger gives other tests' lines to all.
	ns := testutil.Namespace(t)
	srv := testutil.StartACLServer(t, ns)
	for _, user := range []string{"node", "nochannels"} {
		t.Run(user, func(t *testing.T) {
			ctx := context.Background()
			var logs lockedLog
			ran := make(chan string, 10)
			e, err := Start(ctx, Options{RedisURL: srv.UserURL(user), Namespace: ns, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				Workers:  map[string]Worker{"W": WorkerFunc(func(_ context.Context, j *Job) error { ran <- j.JID; return nil })},
				Periodic: []PeriodicJob{{Name: "every-second-" + user, Spec: "@every 1s", Class: "W"}}})
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Stop(context.Background())) }()
			jid, err := e.Enqueue(ctx, "default", "W", nil)
			require.NoError(t, err)
			seen := map[string]bool{}
			testutil.WaitFor(t, "the job and a periodic tick ran", func() bool {
				for {
					select {
					case j := <-ran:
						seen[j] = true
					default:
						return seen[jid] && len(seen) >= 2
					}
				}
			})
			require.NoError(t, e.Stop(ctx))
			out := logs.String()
			require.NotContains(t, out, "enqueueing a tick failed", user)
			if user == "node" {
				require.NotContains(t, out, "level=WARN", user)
			} else {
				require.Equal(t, 1, strings.Count(out, "cannot use the wake-up channel"), "reported once:\n%s", out)
			}
		})
	}
}

type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ io.Writer = (*lockedLog)(nil)
