package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ownerKey marks a DB as this benchmark's: a DB that holds keys but not this one is never
// flushed.
const ownerKey = "exqbench:owned"

// admin returns a client on DB db for flushing and checks.
func (b *bench) admin(db int) *redis.Client {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.admins[db]; ok {
		return c
	}
	c := redis.NewClient(&redis.Options{Addr: b.cfg.addr, DB: db, PoolSize: 2})
	b.admins[db] = c
	return c
}

// claimDB refuses a DB that holds keys this benchmark did not write, then flushes it.
func (b *bench) claimDB(ctx context.Context, db int) error {
	c := b.admin(db)
	n, err := c.DBSize(ctx).Result()
	if err != nil {
		return fmt.Errorf("redis %s db %d: %w", b.cfg.addr, db, err)
	}
	if n > 0 {
		owned, err := c.Exists(ctx, ownerKey).Result()
		if err != nil {
			return err
		}
		if owned == 0 {
			return fmt.Errorf("redis %s db %d holds %d keys that this benchmark did not write; it flushes its DBs, so use a private redis-server or another -db", b.cfg.addr, db, n)
		}
	}
	return b.flush(ctx, db)
}

// flush empties db and marks it as the benchmark's.
func (b *bench) flush(ctx context.Context, db int) error {
	c := b.admin(db)
	if err := c.FlushDB(ctx).Err(); err != nil {
		return fmt.Errorf("flush db %d: %w", db, err)
	}
	return c.Set(ctx, ownerKey, "1", 0).Err()
}

// redisCPU is redis-server's CPU time so far (user + system, all threads) in seconds; -1 if
// INFO does not say.
func (b *bench) redisCPU(ctx context.Context) float64 {
	info, err := b.admin(b.cfg.dbBase).Info(ctx, "cpu").Result()
	if err != nil {
		return -1
	}
	f := infoFields(info)
	u, err1 := strconv.ParseFloat(f["used_cpu_user"], 64)
	s, err2 := strconv.ParseFloat(f["used_cpu_sys"], 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return u + s
}

func (b *bench) redisVersion(ctx context.Context) string {
	info, err := b.admin(b.cfg.dbBase).Info(ctx, "server").Result()
	if err != nil {
		return "unknown"
	}
	return infoFields(info)["redis_version"]
}

func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// selfCPU is this process's CPU time so far (user + system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineBusy is the CPU time all processes of the machine have used so far (from /proc/stat:
// everything but idle and iowait); 0 if unknown.
func machineBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		if i != 3 && i != 4 && i < 7 { // not idle, iowait, steal; guest time is already in user
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / 100 // USER_HZ
}

// noise measures the CPU that other processes (neither this one nor its redis-server) used.
type noise struct{ busy, self, redis float64 }

func (b *bench) noiseNow(ctx context.Context) noise {
	return noise{machineBusy().Seconds(), selfCPU().Seconds(), b.redisCPU(ctx)}
}

// foreign is the CPU seconds other processes used since n0. It is rough: /proc/stat counts in
// ticks and misses short bursts, so it reads low (never below 0 here) and only shows heavy noise.
func (b *bench) foreign(ctx context.Context, n0 noise) float64 {
	n1 := b.noiseNow(ctx)
	return max((n1.busy-n0.busy)-(n1.self-n0.self)-(n1.redis-n0.redis), 0)
}

// reset empties t's store before a run: its own reset, else a flush of its Redis DB.
func (b *bench) reset(ctx context.Context, t *target) error {
	if t.reset != nil {
		return t.reset(ctx)
	}
	return b.flush(ctx, t.DB)
}

// checkDrained checks, after t's consumer stopped, that every job was acknowledged (queue
// and backup lists empty) and counted (stat:processed = n), for targets with an exq-layout
// namespace (exq, raw-batched); others pass.
func (b *bench) checkDrained(ctx context.Context, t *target, n int) error {
	if t.drained != nil {
		return t.drained(ctx, n)
	}
	if t.drainNS == "" {
		return nil
	}
	ns := t.drainNS
	c := b.admin(t.DB)
	left, err := c.LLen(ctx, ns+":queue:"+queueName).Result()
	if err != nil {
		return err
	}
	backups, err := c.Keys(ctx, ns+":queue:backup::*").Result()
	if err != nil {
		return err
	}
	var inBackup int64
	for _, k := range backups {
		l, err := c.LLen(ctx, k).Result()
		if err != nil {
			return err
		}
		inBackup += l
	}
	processed, err := c.Get(ctx, ns+":stat:processed").Int64()
	if err != nil && err != redis.Nil {
		return err
	}
	if left != 0 || inBackup != 0 || processed != int64(n) {
		return fmt.Errorf("%s: after the drain and Stop: %d jobs left in the queue, %d in backup lists, stat:processed %d (want 0, 0, %d)",
			t.Name, left, inBackup, processed, n)
	}
	return nil
}
