-- The example consumer's tables on SQLite, created at start.
-- payments has no unique key on purpose: the safe consumer's guard is the
-- processed_messages primary key, written in the same transaction.
CREATE TABLE IF NOT EXISTS processed_messages (
    event_id     TEXT PRIMARY KEY,
    payload      TEXT NOT NULL,          -- canonical JSON of data: a redelivery must match it
    processed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE IF NOT EXISTS payments (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id   TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    amount     NUMERIC NOT NULL,
    charge_id  INTEGER,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
-- Stands for an external payment provider: written outside the consumer's
-- transaction, deduplicated only by the idempotency key the caller sends.
CREATE TABLE IF NOT EXISTS provider_charges (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT UNIQUE,       -- NULL: a charge made without a key
    order_id        TEXT NOT NULL,
    amount          NUMERIC NOT NULL,
    request         TEXT NOT NULL,
    created_at      TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
-- Not unique (a flawed consumer must be able to write a second row), but
-- indexed: the order and the event are what the consumer, and redeliver's
-- judge, look rows up by.
CREATE INDEX IF NOT EXISTS payments_order_id ON payments (order_id);
CREATE INDEX IF NOT EXISTS payments_event_id ON payments (event_id);
CREATE INDEX IF NOT EXISTS provider_charges_order_id ON provider_charges (order_id);
-- The background job's row (--poll): not an effect, never judged.
CREATE TABLE IF NOT EXISTS locks (
    name TEXT PRIMARY KEY,
    beat INTEGER NOT NULL DEFAULT 0
);
INSERT INTO locks (name) VALUES ('poller') ON CONFLICT (name) DO NOTHING;
