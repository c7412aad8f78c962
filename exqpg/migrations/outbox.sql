-- The exq outbox (module exqpg). {{schema}} is the schema's quoted name, {{channel}} the
-- NOTIFY channel as a string literal. Safe to run again: every statement is idempotent.

CREATE SCHEMA IF NOT EXISTS {{schema}};

-- One row per job written by exqpg's Enqueue inside an application's transaction, until a
-- relay has pushed it to Redis. job is the document exactly as a direct enqueue writes it
-- (json, not jsonb, keeps its bytes); run_at is its due time, NULL for now. A row the relay
-- cannot push (a document that is not a job) is kept with failed_at and error set.
CREATE TABLE IF NOT EXISTS {{schema}}.exq_outbox (
  id         bigserial   PRIMARY KEY,
  jid        text        NOT NULL,
  queue      text        NOT NULL,
  job        json        NOT NULL,
  run_at     timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  failed_at  timestamptz,
  error      text
);

-- The relay's query: the pending rows in id order (SELECT … WHERE failed_at IS NULL ORDER BY
-- id FOR UPDATE SKIP LOCKED LIMIT n), and the status's oldest pending row.
CREATE INDEX IF NOT EXISTS exq_outbox_pending ON {{schema}}.exq_outbox (id) WHERE failed_at IS NULL;

-- Wakes the relays when a transaction that wrote rows commits (NOTIFY is delivered at commit,
-- never for a rollback); one notification per statement, and Postgres folds the repeats of a
-- transaction into one.
CREATE OR REPLACE FUNCTION {{schema}}.exq_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify({{channel}}, '');
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS exq_outbox_notify ON {{schema}}.exq_outbox;
CREATE TRIGGER exq_outbox_notify AFTER INSERT ON {{schema}}.exq_outbox
  FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.exq_outbox_notify();
