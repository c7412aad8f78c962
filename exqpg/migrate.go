package exqpg

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DefaultSchema is the Postgres schema of the outbox table when Options say none.
const DefaultSchema = "public"

// ErrInvalidSchema is wrapped by the calls given a schema name that is not a plain identifier.
var ErrInvalidSchema = errors.New("exqpg: invalid schema name")

//go:embed migrations/outbox.sql
var migrationSQL string

// schemaName is the rule for schema names: a plain lower-case Postgres identifier, so that the
// name needs no escaping anywhere and reads the same quoted or not.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// checkSchema returns schema, or DefaultSchema for "", or an error naming what is wrong.
func checkSchema(schema string) (string, error) {
	if schema == "" {
		return DefaultSchema, nil
	}
	if !schemaName.MatchString(schema) {
		return "", fmt.Errorf("%w: %q: use lower-case letters, digits and _, starting with a letter or _, at most 63", ErrInvalidSchema, schema)
	}
	return schema, nil
}

// maxChannel is the longest NOTIFY channel name Postgres takes (NAMEDATALEN - 1 bytes):
// pg_notify refuses a longer one, which would fail every enqueue's transaction.
const maxChannel = 63

// channel is the NOTIFY channel of the outbox in schema: exq_outbox_<schema> when that fits
// (every schema of up to 52 characters, the name earlier releases used), else the schema's
// first 43 characters, "_" and 8 hex digits of its FNV-1a hash, 63 in all, so that every valid
// schema name has a channel of its own that Postgres takes.
func channel(schema string) string {
	const prefix = "exq_outbox_"
	if len(prefix)+len(schema) <= maxChannel {
		return prefix + schema
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(schema))
	return fmt.Sprintf("%s%s_%08x", prefix, schema[:maxChannel-len(prefix)-9], h.Sum32())
}

// MigrationSQL returns the SQL that creates the outbox table in schema ("" for DefaultSchema),
// for applications that run their migrations with a tool of their own. Running it again
// changes nothing.
func MigrationSQL(schema string) (string, error) {
	schema, err := checkSchema(schema)
	if err != nil {
		return "", err
	}
	r := strings.NewReplacer("{{schema}}", `"`+schema+`"`, "{{channel}}", "'"+channel(schema)+"'")
	return r.Replace(migrationSQL), nil
}

// Beginner is what Migrate runs on: a *pgx.Conn or a *pgxpool.Pool.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Migrate creates the outbox table, its index and its NOTIFY trigger in schema ("" for
// DefaultSchema), creating the schema too, in one transaction. Running it again, or from many
// processes at once, is safe: an advisory lock makes the runs take turns.
func Migrate(ctx context.Context, db Beginner, schema string) error {
	sql, err := MigrationSQL(schema)
	if err != nil {
		return err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("exqpg: migrate: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('exqpg migrate'))"); err != nil {
		return fmt.Errorf("exqpg: migrate: %w", err)
	}
	if _, err := tx.Exec(ctx, sql); err != nil {
		return fmt.Errorf("exqpg: migrate schema %q: %w", schema, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("exqpg: migrate: %w", err)
	}
	return nil
}
