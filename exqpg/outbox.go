package exqpg

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// Tx is what the enqueue calls write through: the application's transaction. A pgx.Tx is one
// (so are a *pgxpool.Tx and, for a pgx.Conn or pool in the middle of a BEGIN, the conn
// itself); a *sql.Tx becomes one with SQLTx. The row is written with this Exec, so it commits
// or rolls back with the rest of the transaction. Passing something that is not inside a
// transaction (a pool) writes the row at once, which gives up the guarantee this package is
// for.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// SQLTx adapts a database/sql transaction (on any Postgres driver: pgx's stdlib, lib/pq) to
// Tx, for applications that use database/sql:
//
//	jid, err := outbox.Enqueue(ctx, exqpg.SQLTx(tx), "mail", "SendWelcome", []any{userID})
func SQLTx(tx *sql.Tx) Tx { return sqlTx{tx} }

type sqlTx struct{ tx *sql.Tx }

func (s sqlTx) Exec(ctx context.Context, query string, args ...any) (pgconn.CommandTag, error) {
	if s.tx == nil {
		return pgconn.CommandTag{}, fmt.Errorf("exqpg: SQLTx: the *sql.Tx is nil")
	}
	res, err := s.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	n, _ := res.RowsAffected()
	return pgconn.NewCommandTag(fmt.Sprintf("INSERT 0 %d", n)), nil
}

// Outbox writes jobs into the outbox table of one schema. Create it with New; it holds no
// connection and is safe for concurrent use.
type Outbox struct {
	schema string
	insert string // INSERT … VALUES prefix, rows appended per call
}

// New returns the Outbox of schema ("" for DefaultSchema), whose table Migrate creates.
func New(schema string) (*Outbox, error) {
	schema, err := checkSchema(schema)
	if err != nil {
		return nil, err
	}
	return &Outbox{schema: schema,
		insert: `INSERT INTO "` + schema + `".exq_outbox (jid, queue, job, run_at) VALUES `}, nil
}

// Schema is the outbox's schema name.
func (o *Outbox) Schema() string { return o.schema }
