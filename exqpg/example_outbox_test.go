package exqpg_test

import (
	"context"
	"database/sql"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqpg"
)

// Signup is the args of the job that welcomes a new user.
type Signup struct {
	UserID int64 `json:"user_id"`
}

func (Signup) Class() string { return "Mail.Welcome" }

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
