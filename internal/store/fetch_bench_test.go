package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exqgo/exq/internal/testutil"
)

// perJobFetch is fetch.lua's move before it took a queue's jobs as one block: an RPOP and an
// LPUSH per job. Kept here only as the baseline of BenchmarkFetchAndAckRedisCPU.
var perJobFetch = redis.NewScript(`
local out = {}
for k = 1, tonumber(ARGV[1]) do
  local job = redis.call('RPOP', KEYS[1])
  if not job then break end
  redis.call('LPUSH', KEYS[2], job)
  out[k] = job
end
return out`)

// BenchmarkFetchAndAckRedisCPU measures what the server spends per job on the node's hot
// path: fetch 100 jobs, then acknowledge the batch fetched before (AckMany, the acker's call),
// on a redis-server of its own, and reports the server's CPU per job (INFO cpu) beside the
// time. "block" is Store.Fetch (fetch.lua); "move-per-job" the script it replaced.
//
//	go test -run '^$' -bench FetchAndAckRedisCPU -benchtime 200000x ./internal/store
func BenchmarkFetchAndAckRedisCPU(b *testing.B) {
	srv := testutil.StartServer(b, testutil.ServerOptions{Args: []string{"--save", "", "--appendonly", "no"}})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	for _, variant := range []string{"block", "move-per-job"} {
		b.Run(variant, func(b *testing.B) {
			jq := New(rdb, Config{Namespace: "bench" + variant, Node: "n1"})
			queue := jq.keys.Queue("q")
			p := rdb.Pipeline()
			for i := range b.N {
				p.LPush(ctx, queue, fmt.Sprintf(`{"class":"BenchJob","args":[%d,1764690000000000000],"queue":"q","jid":"0123456789abcdef0123%016x","enqueued_at":1764690000.123456,"created_at":1764690000.123456,"retry":25}`, i, i))
				if p.Len() == 1000 {
					if _, err := p.Exec(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			if _, err := p.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			fetch := func() ([]string, error) {
				if variant == "block" {
					res, err := jq.Fetch(ctx, []FetchReq{{Queue: "q", N: 100}}, time.Minute, time.Second)
					if err != nil {
						return nil, err
					}
					return res.Jobs[0], nil
				}
				return perJobFetch.Run(ctx, rdb, []string{queue, jq.keys.Backup("n1", "q")}, 100).StringSlice()
			}
			var held [][]string
			cpu0 := serverCPU(b, rdb)
			b.ResetTimer()
			for {
				jobs, err := fetch()
				if err != nil {
					b.Fatal(err)
				}
				if len(jobs) > 0 {
					held = append(held, jobs)
				}
				if len(held) == 2 || len(jobs) == 0 && len(held) > 0 {
					batch := make([]AckReq, len(held[0]))
					for i, raw := range held[0] {
						batch[i] = AckReq{Queue: "q", Raw: raw}
					}
					if _, err := jq.AckMany(ctx, batch); err != nil {
						b.Fatal(err)
					}
					held = held[1:]
				}
				if len(jobs) == 0 && len(held) == 0 {
					break
				}
			}
			b.StopTimer()
			b.ReportMetric((serverCPU(b, rdb)-cpu0)*1e6/float64(b.N), "redis-µs/job")
			if n := rdb.LLen(ctx, jq.keys.Backup("n1", "q")).Val(); n != 0 {
				b.Fatalf("%d jobs left in the backup list", n)
			}
		})
	}
}

// serverCPU is the server's user and system CPU time so far, in seconds.
func serverCPU(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\r\n") {
		for _, k := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += f
			}
		}
	}
	return total
}
