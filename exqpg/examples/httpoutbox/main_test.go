package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// The example runs end to end in a database of its own on EXQPG_TEST_PG_URL's server (default
// the local Postgres) and EXQ_TEST_REDIS_URL; without them it skips, and fails under CI=true.
func TestTheDemoOrderGetsItsReceipt(t *testing.T) {
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip("SKIPPED: " + why)
	}
	redisURL := os.Getenv("EXQ_TEST_REDIS_URL")
	if redisURL == "" {
		missing("needs EXQ_TEST_REDIS_URL")
	}
	base := os.Getenv("EXQPG_TEST_PG_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		missing("needs Postgres: " + err.Error())
	}
	defer conn.Close(context.Background())
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "exqpg_test_example_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := conn.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	}()
	cfg := conn.Config()
	url := "postgres://" + cfg.User + "@" + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + name
	if opts, err := redis.ParseURL(redisURL); err == nil {
		rdb := redis.NewClient(opts)
		defer func() { // the example's namespace, "shop"
			keys, _ := rdb.Keys(context.Background(), "shop:*").Result()
			if len(keys) > 0 {
				rdb.Del(context.Background(), keys...)
			}
			_ = rdb.Close()
		}()
	}
	if err := run(ctx, url, redisURL, "127.0.0.1:0", true); err != nil {
		t.Fatal(err)
	}
}
