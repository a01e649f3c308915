-- The example consumer's tables on MySQL or MariaDB, created at start,
-- one statement at a time (InnoDB: a transaction rolls back its rows).
-- payments has no unique key on purpose: the safe consumer's guard is the
-- processed_messages primary key, written in the same transaction.
CREATE TABLE IF NOT EXISTS processed_messages (
    event_id     VARCHAR(191) PRIMARY KEY,
    payload      TEXT NOT NULL,          -- canonical JSON of data: a redelivery must match it
    processed_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB;
-- Not unique (a flawed consumer must be able to write a second row), but
-- indexed: the order and the event are what the consumer, and redeliver's
-- judge, look rows up by.
CREATE TABLE IF NOT EXISTS payments (
    id         BIGINT AUTO_INCREMENT PRIMARY KEY,
    order_id   VARCHAR(191) NOT NULL,
    event_id   VARCHAR(191) NOT NULL,
    amount     DECIMAL(20, 2) NOT NULL,
    charge_id  BIGINT,
    created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    KEY payments_order_id (order_id),
    KEY payments_event_id (event_id)
) ENGINE=InnoDB;
-- Stands for an external payment provider: written outside the consumer's
-- transaction, deduplicated only by the idempotency key the caller sends.
CREATE TABLE IF NOT EXISTS provider_charges (
    id              BIGINT AUTO_INCREMENT PRIMARY KEY,
    idempotency_key VARCHAR(191) UNIQUE,       -- NULL: a charge made without a key
    order_id        VARCHAR(191) NOT NULL,
    amount          DECIMAL(20, 2) NOT NULL,
    request         TEXT NOT NULL,
    created_at      TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    KEY provider_charges_order_id (order_id)
) ENGINE=InnoDB;
-- The background job's row (--poll): not an effect, never judged.
CREATE TABLE IF NOT EXISTS locks (
    name VARCHAR(191) PRIMARY KEY,
    beat BIGINT NOT NULL DEFAULT 0
) ENGINE=InnoDB;
INSERT IGNORE INTO locks (name) VALUES ('poller');
