package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
	"github.com/exqgo/exq/internal/wire"
)

// BenchmarkDashboard10kRetries renders the dashboard (counters, live graph, 30 days of
// history) of a namespace with 10 000 retries, 10 000 dead jobs and 1 000 waiting jobs, on
// the real test Redis. The bar is 50 ms of server time: the page reads counts
// (ZCARD, LLEN), never the sets themselves.
//
//	go test -run '^$' -bench Dashboard ./web/
func BenchmarkDashboard10kRetries(b *testing.B) {
	rdb, ns := testutil.Redis(b)
	ctx := context.Background()
	keys := wire.NewKeys(ns)
	now := time.Now()
	for set, n := range map[string]int{keys.Retry(): 10_000, keys.Dead(): 10_000} {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range n {
				raw := fmt.Sprintf(`{"class":"Work","args":[%d,"some text"],"queue":"default","jid":"j%d","retry":25,"retry_count":1,"error_message":"boom"}`, i, i)
				p.ZAdd(ctx, set, redis.Z{Score: float64(now.Add(time.Duration(i) * time.Second).Unix()), Member: raw})
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for q := range 10 {
		name := fmt.Sprintf("q%d", q)
		rdb.SAdd(ctx, keys.Queues(), name)
		for i := range 100 {
			rdb.LPush(ctx, keys.Queue(name), fmt.Sprintf(`{"class":"Work","args":[%d],"queue":%q,"jid":"w%d-%d","enqueued_at":%d.0}`, i, name, q, i, now.Unix()))
		}
	}
	api, err := exq.NewAPI(ctx, exq.ClientOptions{Redis: rdb, Namespace: ns, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	h := New(api, Options{Logger: quiet, AllowedHosts: []string{"example.com"}})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
