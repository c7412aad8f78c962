// Command httpoutbox is an HTTP service whose handler writes an order and enqueues the job
// that mails its receipt in one Postgres transaction (module exqpg): the job exists if and only
// if the order committed. A relay moves committed jobs to Redis; an exq node runs them.
//
//	createdb shop   # or give -pg a database that exists
//	go run ./examples/httpoutbox -pg postgres://postgres@127.0.0.1:5432/shop -redis redis://127.0.0.1:6379/0
//	curl -X POST 'localhost:8080/orders?email=ann@example.com'
//
// It creates schema "shop" (the outbox table) and table shop_orders in that database.
//
// With -demo it posts one order to itself, waits until the receipt job ran, and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/exqgo/exq"
	"github.com/exqgo/exq/exqpg"
)

// Receipt is the args of the job that mails an order's receipt.
type Receipt struct {
	OrderID int64  `json:"order_id"`
	Email   string `json:"email"`
}

func (Receipt) Class() string { return "Shop.Receipt" }

// shop is the service: its database, and the outbox its handlers enqueue into.
type shop struct {
	db     *pgxpool.Pool
	outbox *exqpg.Outbox
}

// createOrder inserts the order and enqueues its receipt job in one transaction: a rollback
// (a failed insert, a crash before the commit) leaves neither.
func (s *shop) createOrder(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := r.URL.Query().Get("email")
	if email == "" {
		http.Error(w, "email is required", http.StatusBadRequest)
		return
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		http.Error(w, "database unavailable", http.StatusServiceUnavailable)
		return
	}
	defer tx.Rollback(ctx) // a no-op after Commit

	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO shop_orders (email) VALUES ($1) RETURNING id`, email).Scan(&id); err != nil {
		http.Error(w, "cannot save the order", http.StatusInternalServerError)
		return
	}
	jid, err := exq.EnqueueArgs(ctx, s.outbox.In(tx), Receipt{OrderID: id, Email: email})
	if err != nil {
		http.Error(w, "cannot enqueue the receipt", http.StatusInternalServerError)
		return
	}
	if err := tx.Commit(ctx); err != nil {
		http.Error(w, "cannot save the order", http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "order %d, receipt job %s\n", id, jid)
}

func main() {
	pgURL := flag.String("pg", "postgres://postgres@127.0.0.1:5432/shop", "Postgres URL of a database for the example")
	redisURL := flag.String("redis", "redis://127.0.0.1:6379/0", "Redis URL")
	addr := flag.String("addr", "127.0.0.1:8080", "HTTP address")
	demo := flag.Bool("demo", false, "post one order to itself, wait for its receipt job, exit")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *pgURL, *redisURL, *addr, *demo); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, pgURL, redisURL, addr string, demo bool) error {
	db, err := pgxpool.New(ctx, pgURL)
	if err != nil {
		return err
	}
	defer db.Close()
	// The outbox table (in schema "shop") and the application's own table.
	if err := exqpg.Migrate(ctx, db, "shop"); err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS shop_orders (id bigserial PRIMARY KEY, email text NOT NULL)`); err != nil {
		return err
	}
	outbox, err := exqpg.New("shop")
	if err != nil {
		return err
	}

	// The exq node that runs the receipts.
	sent := make(chan Receipt, 1)
	node, err := exq.Start(ctx, exq.Options{RedisURL: redisURL, Namespace: "shop",
		Queues: []exq.Queue{{Name: exq.DefaultQueue, Concurrency: 10}}})
	if err != nil {
		return err
	}
	defer node.Stop(context.Background())
	if err := exq.AddWorker(node, func(ctx context.Context, job *exq.Job, r Receipt) error {
		slog.Info("mailing a receipt", "order", r.OrderID, "email", r.Email)
		select {
		case sent <- r:
		default:
		}
		return nil
	}); err != nil {
		return err
	}

	// The relay, inside this process, on the node's connection.
	relay, err := exqpg.NewRelay(db, node, exqpg.RelayOptions{Schema: "shop"})
	if err != nil {
		return err
	}
	relayCtx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(relayCtx) }()
	defer func() { stopRelay(); <-relayDone }()

	s := &shop{db: db, outbox: outbox}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", s.createOrder)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	slog.Info("listening", "addr", l.Addr().String())
	if !demo {
		<-ctx.Done()
		return nil
	}
	resp, err := http.Post("http://"+l.Addr().String()+"/orders?email=ann@example.com", "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /orders: %s", resp.Status)
	}
	select {
	case r := <-sent:
		fmt.Printf("receipt job ran for order %d\n", r.OrderID)
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("the receipt job did not run within 30 s")
	}
}
