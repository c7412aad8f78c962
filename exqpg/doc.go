// Package exqpg enqueues exq jobs inside a Postgres transaction: the transactional outbox.
//
// A Redis queue cannot take part in the application's database transaction. A job enqueued
// before the commit can run against rows that are not there yet, or never will be; a job
// enqueued after it is lost when the process dies between the two, or when Redis is down at
// that moment. With exqpg the job is a row written by the transaction itself, so it exists if
// and only if the transaction commits, and a relay moves committed rows to Redis, each exactly
// once:
//
//	exqpg.Migrate(ctx, db, "exq")               // once: the outbox table and its trigger
//	outbox, _ := exqpg.New("exq")
//
//	tx, _ := db.Begin(ctx)
//	// … the application's own writes …
//	jid, err := outbox.Enqueue(ctx, tx, "mail", "Mail.Welcome", []any{userID})
//	tx.Commit(ctx)                              // the job exists now, not before
//
//	relay, _ := exqpg.NewRelay(db, node, exqpg.RelayOptions{Schema: "exq"})
//	go relay.Run(ctx)                           // next to exq.Start, or `exq outbox relay`
//
// The relay wakes on the commit (LISTEN/NOTIFY) and polls as a safety net; each round takes a
// batch of rows with FOR UPDATE SKIP LOCKED, pushes it with exq's idempotent push
// (exq.Client.PushRelayed: the push and a mark for each jid are one Redis script) and deletes
// the rows in the same transaction. Any number of relays may run; one killed anywhere leaves
// its rows to the others, whose second push of those jids writes nothing. The guide is
// docs/outbox.md in exq's repository.
package exqpg
