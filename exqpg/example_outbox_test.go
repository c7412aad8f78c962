package exqpg_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqpg"
)

// quiet keeps the runnable example's output to what it prints.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Signup is the args of the job that welcomes a new user.
type Signup struct {
	UserID int64 `json:"user_id"`
}

func (Signup) Class() string { return "Mail.Welcome" }

// The examples below show the calls on a database of their own; this one runs, on the test
// binary's Postgres and Redis (a real program opens its own pool and passes its Redis URL).
func exampleServers() (db *pgxpool.Pool, schema, redisURL, namespace string, stop func()) {
	db, schema, redisURL, namespace, stop, err := exqpg.ServersForExamples()
	if err != nil {
		panic(err)
	}
	return db, schema, redisURL, namespace, stop
}

// The outbox end to end: a job enqueued in a transaction exists once the transaction commits,
// never if it rolls back, and the relay moves it to Redis, where a node runs it.
func Example() {
	db, schema, redisURL, namespace, stop := exampleServers()
	defer stop()
	ctx := context.Background()
	if err := exqpg.Migrate(ctx, db, schema); err != nil {
		fmt.Println(err)
		return
	}
	outbox, err := exqpg.New(schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	welcomed := make(chan int64, 2)
	node, err := exq.Start(ctx, exq.Options{RedisURL: redisURL, Namespace: namespace, Logger: quiet,
		Register: []exq.Registration{exq.WorkerFor(func(ctx context.Context, job *exq.Job, a Signup) error {
			welcomed <- a.UserID
			return nil
		})}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Stop(ctx)
	relay, err := exqpg.NewRelay(db, node, exqpg.RelayOptions{Schema: schema, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	// (Run relays in a loop, woken by each commit; here each Round is one step of it.)
	round := func(when string) {
		n, err := relay.Round(ctx)
		fmt.Println(when+": relayed", n, err)
	}

	tx, err := db.Begin(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := exq.EnqueueArgs(ctx, outbox.In(tx), Signup{UserID: 42}); err != nil {
		fmt.Println(err)
		return
	}
	round("before the commit")
	if err := tx.Commit(ctx); err != nil {
		fmt.Println(err)
		return
	}
	round("after the commit")

	tx, err = db.Begin(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := exq.EnqueueArgs(ctx, outbox.In(tx), Signup{UserID: 43}); err != nil {
		fmt.Println(err)
		return
	}
	_ = tx.Rollback(ctx) // no user 43, and no job either
	round("after a rollback")

	fmt.Println("welcomed user", <-welcomed)
	// Output:
	// before the commit: relayed 0 <nil>
	// after the commit: relayed 1 <nil>
	// after a rollback: relayed 0 <nil>
	// welcomed user 42
}

// Create the outbox table once, at deploy time or at start: Migrate is safe to run again.
func ExampleMigrate() {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, "postgres://app@127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := exqpg.Migrate(ctx, db, "exq"); err != nil {
		log.Fatal(err)
	}
}

// Enqueue inside the transaction that writes the rows the job is about: the job exists if and
// only if the transaction commits.
func ExampleOutbox_Enqueue() {
	ctx := context.Background()
	db, _ := pgxpool.New(ctx, "postgres://app@127.0.0.1:5432/app")
	outbox, _ := exqpg.New("exq")

	tx, err := db.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var userID int64
	if err := tx.QueryRow(ctx, `INSERT INTO users (email) VALUES ($1) RETURNING id`, "ann@example.com").Scan(&userID); err != nil {
		log.Fatal(err)
	}
	jid, err := outbox.Enqueue(ctx, tx, "mail", "Mail.Welcome", []any{userID})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err) // no user, and no job
	}
	log.Printf("user %d, welcome job %s", userID, jid)
}

// In makes the transaction an exq.Enqueuer, so that the typed calls work inside it.
func ExampleOutbox_In() {
	ctx := context.Background()
	db, _ := pgxpool.New(ctx, "postgres://app@127.0.0.1:5432/app")
	outbox, _ := exqpg.New("exq")

	tx, _ := db.Begin(ctx)
	defer tx.Rollback(ctx)
	jid, err := exq.EnqueueArgs(ctx, outbox.In(tx), Signup{UserID: 42}, exq.OnQueue("mail"))
	if err != nil {
		log.Fatal(err)
	}
	_ = tx.Commit(ctx)
	log.Print(jid)
}

// Applications on database/sql wrap their *sql.Tx with SQLTx.
func ExampleSQLTx() {
	ctx := context.Background()
	var db *sql.DB // opened with any Postgres driver: pgx's stdlib, lib/pq
	outbox, _ := exqpg.New("exq")

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := outbox.Enqueue(ctx, exqpg.SQLTx(tx), "mail", "Mail.Welcome", []any{42}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
}

// Run the relay inside an exq node: it pushes through the node's Redis connection and
// namespace, and stops with the context the node's program ends.
func ExampleNewRelay() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, _ := pgxpool.New(ctx, "postgres://app@127.0.0.1:5432/app")
	node, err := exq.Start(ctx, exq.Options{RedisURL: "redis://127.0.0.1:6379/0"})
	if err != nil {
		log.Fatal(err)
	}
	defer node.Stop(context.Background())

	relay, err := exqpg.NewRelay(db, node, exqpg.RelayOptions{Schema: "exq"})
	if err != nil {
		log.Fatal(err)
	}
	go relay.Run(ctx) // returns once ctx ends

	// … the program runs; cancel() stops the relay, node.Stop the node.
}
