package reliability_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/internal/testutil"
)

// replicaOf makes srv a replica of primary and waits until it is in sync.
func replicaOf(t *testing.T, replica, primary *redis.Client, primaryPort int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, replica.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(primaryPort)).Err())
	testutil.WaitFor(t, "the replica is in sync", func() bool {
		info := replica.Info(ctx, "replication").Val()
		if !strings.Contains(info, "master_link_status:up") {
			return false
		}
		return replOffset(primary.Info(ctx, "replication").Val(), "master_repl_offset") ==
			replOffset(info, "slave_repl_offset")
	})
}

func replOffset(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, field+":") {
			return strings.TrimSpace(strings.TrimPrefix(line, field+":"))
		}
	}
	return ""
}

// TestREADONLYFailoverRecoversWithoutARestart fails over from a primary to its replica behind
// the node's address: new connections reach the promoted replica and, in the second variant,
// existing ones stay on the old primary, now a read-only replica. Writes that get READONLY
// make go-redis drop those connections; the node goes on processing without a restart.
func TestREADONLYFailoverRecoversWithoutARestart(t *testing.T) {
	for _, keepOldConnections := range []bool{false, true} {
		t.Run(fmt.Sprintf("old connections kept %v", keepOldConnections), func(t *testing.T) {
			ctx := context.Background()
			a := testutil.StartServer(t, testutil.ServerOptions{})
			b := testutil.StartServer(t, testutil.ServerOptions{})
			ca, cb := client(t, a.Addr()), client(t, b.Addr())
			replicaOf(t, cb, ca, a.Port)
			proxy := testutil.NewProxy(t, a.Addr())
			work := newCounter(nil)
			e := startNode(t, exq.Options{RedisURL: "redis://" + proxy.Addr() + "/0", Namespace: "fo", RedisTimeout: time.Second,
				Workers: map[string]exq.Worker{"W": work}})
			before, err := e.Enqueue(ctx, "default", "W", nil)
			require.NoError(t, err)
			testutil.WaitFor(t, "a job runs on the first primary", func() bool { return work.ran(before) })
			replicaOf(t, cb, ca, a.Port) // everything written so far is on b

			// Failover: b is promoted, a becomes b's replica, the address now leads to b.
			require.NoError(t, cb.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
			proxy.Switch(b.Addr(), !keepOldConnections)
			replicaOf(t, ca, cb, b.Port)

			// Jobs written to the new primary, by another producer, get run by the same node.
			producer, err := exq.NewClient(ctx, exq.ClientOptions{Redis: cb, Namespace: "fo"})
			require.NoError(t, err)
			var jids []string
			for i := 0; i < 20; i++ {
				jid, err := producer.Enqueue(ctx, "default", "W", nil)
				require.NoError(t, err)
				jids = append(jids, jid)
			}
			testutil.WaitFor(t, "the node runs jobs from the new primary", func() bool {
				for _, j := range jids {
					if !work.ran(j) {
						return false
					}
				}
				return true
			})
			// And its own enqueues reach the new primary too.
			testutil.WaitFor(t, "the node's enqueue works again", func() bool {
				jid, err := e.Enqueue(ctx, "default", "W", nil)
				if err != nil {
					return false
				}
				testutil.WaitFor(t, "that job runs", func() bool { return work.ran(jid) })
				return true
			})
			testutil.WaitFor(t, "nothing stays in flight", func() bool {
				return cb.LLen(ctx, "fo:queue:backup::"+e.NodeID()+"::default").Val() == 0
			})
		})
	}
}
