//go:build unix

package exq

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/exqgo/exq/internal/store"
	"github.com/exqgo/exq/internal/testutil"
)

// BenchmarkKeyedCostByKeys measures a keyed job's Redis CPU (redis-µs/job, INFO cpu) through
// the store alone, with 10, 1 000 or 100 000 keys that have jobs waiting: per round, a fetch of
// 50 jobs (10 with 10 keys; KeyPolicy Concurrency 1), their acknowledgements with their keys' releases, and 50
// new jobs enqueued to keys picked at random. The cost per job must not grow with the number
// of keys beyond a sorted set's log:
//
//	go test -run '^$' -bench BenchmarkKeyedCostByKeys -benchtime 400x .
func BenchmarkKeyedCostByKeys(b *testing.B) {
	for _, keys := range []int{10, 1000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) { benchKeyedByKeys(b, keys) })
	}
}

func benchKeyedByKeys(b *testing.B, keys int) {
	rdb, ns := testutil.Redis(b)
	ctx := context.Background()
	jq := testStore(rdb, keysFor(ns), "n")
	round := min(50, keys) // Concurrency 1: one job per key at a time
	seq := 0
	item := func(k int) store.KeyedItem {
		seq++
		key := fmt.Sprint("t", k)
		return store.KeyedItem{Key: key, BatchItem: store.BatchItem{Queue: "q",
			Job: fmt.Sprintf(`{"class":"W","args":[],"queue":"q","jid":"j%d","exq_key":%q}`, seq, key)}}
	}
	for k := 0; k < keys; k += 1000 {
		var items []store.KeyedItem
		for j := k; j < min(k+1000, keys); j++ {
			items = append(items, item(j), item(j))
		}
		if err := jq.EnqueueKeyedAll(ctx, items); err != nil {
			b.Fatal(err)
		}
	}
	policy := &store.KeyPolicy{Concurrency: 1}
	var first uint64 = 1
	redis0 := redisCPUSeconds(b, rdb)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := jq.Fetch(ctx, []store.FetchReq{{Queue: "q", N: round, Keys: policy, First: first}}, time.Minute, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		var acks []store.AckReq
		for j, raw := range res.Jobs[0] {
			acks = append(acks, store.AckReq{Queue: "q", Raw: raw},
				store.AckReq{Queue: store.KeyScope("q", res.JobKeys[0][j]), Lease: jq.LeaseMember(first + uint64(j))})
		}
		first += uint64(round)
		if _, err := jq.AckMany(ctx, acks); err != nil {
			b.Fatal(err)
		}
		items := make([]store.KeyedItem, round)
		for j := range items {
			items[j] = item(rand.IntN(keys))
		}
		if err := jq.EnqueueKeyedAll(ctx, items); err != nil {
			b.Fatal(err)
		}
		if len(res.Jobs[0]) < round {
			b.Fatalf("round %d: %d jobs fetched", i, len(res.Jobs[0]))
		}
	}
	b.StopTimer()
	b.ReportMetric((redisCPUSeconds(b, rdb)-redis0)*1e6/float64(b.N*round), "redis-µs/job")
}
