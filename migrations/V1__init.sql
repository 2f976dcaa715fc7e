-- V1: every table of SPEC §10 in msgx's own database (never the mailbox's).
--
-- Rules for every migration file (migrations/migrator.h):
--   * it runs in one transaction with its schema_version row, so it must not
--     contain BEGIN/COMMIT or statements that refuse a transaction
--     (CREATE INDEX CONCURRENTLY, VACUUM);
--   * once applied anywhere it is never edited (the migrator refuses a
--     changed checksum); a change is a new V<n+1>__<name>.sql;
--   * migrations only add (SPEC §10).
--
-- Times are TIMESTAMPTZ(6). Texts that the fold writes are bounded by the
-- fold (SPEC §10), so the lengths below are never hit by correct code.

-- One row per mailbox row: the message's outcome (SPEC §3, §7).
CREATE TABLE proc_state (
  msg_id                    BIGINT PRIMARY KEY,           -- = mailbox id
  state                     VARCHAR(16) NOT NULL
    CHECK (state IN ('PENDING', 'FAILED', 'SUCCEEDED', 'SKIPPED', 'DEAD', 'ARCHIVED')),
  identity_key              VARCHAR(200),                 -- not unique: the fold's index rules
  attempts                  INT NOT NULL DEFAULT 0,
  next_attempt_at           TIMESTAMPTZ(6),
  error_class               VARCHAR(20),
  last_error                VARCHAR(1000),
  prev_error                TEXT,                         -- what a replay superseded
  updated_at                TIMESTAMPTZ(6),
  received_at               TIMESTAMPTZ(6),
  enqueued_at               TIMESTAMPTZ(6),
  log_offset                BIGINT,                       -- offset of the deciding record
  backfill_at               TIMESTAMPTZ(6),               -- mailbox mark written
  backfill_next_at          TIMESTAMPTZ(6),
  backfill_attempts         INT NOT NULL DEFAULT 0,
  backfill_error            VARCHAR(1000),
  backfill_abandoned_at     TIMESTAMPTZ(6),
  backfill_abandoned_reason VARCHAR(1000)
);
CREATE INDEX proc_state_identity_key_idx ON proc_state (identity_key);
-- Unfinished work and the outcome counts of `msgx status`.
CREATE INDEX proc_state_state_idx ON proc_state (state, msg_id);
-- The backfill job: terminal rows whose mark is still due.
CREATE INDEX proc_state_backfill_due_idx ON proc_state (backfill_next_at, msg_id)
  WHERE backfill_at IS NULL AND backfill_abandoned_at IS NULL
    AND state IN ('SUCCEEDED', 'SKIPPED', 'DEAD');
-- The abandon list (SPEC §7, C-16).
CREATE INDEX proc_state_abandoned_idx ON proc_state (backfill_abandoned_at)
  WHERE backfill_abandoned_at IS NOT NULL;
-- The archive job: settled terminal rows by age.
CREATE INDEX proc_state_archive_idx ON proc_state (updated_at)
  WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD');

-- Archived outcomes; proc_state keeps an ARCHIVED shadow row (SPEC §7).
CREATE TABLE proc_state_hst (
  msg_id                    BIGINT PRIMARY KEY,
  state                     VARCHAR(16) NOT NULL,
  identity_key              VARCHAR(200),
  attempts                  INT NOT NULL DEFAULT 0,
  next_attempt_at           TIMESTAMPTZ(6),
  error_class               VARCHAR(20),
  last_error                VARCHAR(1000),
  prev_error                TEXT,
  updated_at                TIMESTAMPTZ(6),
  received_at               TIMESTAMPTZ(6),
  enqueued_at               TIMESTAMPTZ(6),
  log_offset                BIGINT,
  backfill_at               TIMESTAMPTZ(6),
  backfill_next_at          TIMESTAMPTZ(6),
  backfill_attempts         INT NOT NULL DEFAULT 0,
  backfill_error            VARCHAR(1000),
  backfill_abandoned_at     TIMESTAMPTZ(6),
  backfill_abandoned_reason VARCHAR(1000),
  archived_at               TIMESTAMPTZ(6) NOT NULL
);
CREATE INDEX proc_state_hst_archived_at_idx ON proc_state_hst (archived_at);
CREATE INDEX proc_state_hst_identity_key_idx ON proc_state_hst (identity_key);

-- The outbox (SPEC §6). event_id gives the total order per target.
CREATE TABLE msg_event (
  event_id        BIGSERIAL PRIMARY KEY,
  event_key       TEXT NOT NULL UNIQUE,                  -- stable: log offset + position
  target          VARCHAR(30) NOT NULL,                  -- KAFKA:msg | KAFKA:schd | KAFKA:ref
  partition_key   TEXT,                                  -- FLID (Kafka key)
  event_type      VARCHAR(16) NOT NULL,                  -- UPSERT | DELETE
  state_version   BIGINT NOT NULL,                       -- log offset of the change
  payload_json    TEXT NOT NULL,
  state           VARCHAR(16) NOT NULL DEFAULT 'PENDING'
    CHECK (state IN ('PENDING', 'SENT', 'DEAD')),
  attempts        INT NOT NULL DEFAULT 0,
  next_attempt_at TIMESTAMPTZ(6),
  error_class     VARCHAR(20),
  last_error      VARCHAR(1000),
  created_at      TIMESTAMPTZ(6) NOT NULL,
  sent_at         TIMESTAMPTZ(6),
  source_msg_id   BIGINT,                                -- the mailbox id that caused it
  batch_id        BIGINT                                 -- KAFKA:schd aggregation batch
);
-- The dispatcher's head-of-line query: per target, unfinished, in order.
CREATE INDEX msg_event_target_state_idx ON msg_event (target, state, event_id);
-- Sent-event compaction (SPEC §7): SENT rows by age, in event_id order.
CREATE INDEX msg_event_sent_idx ON msg_event (sent_at, event_id) WHERE state = 'SENT';
CREATE INDEX msg_event_source_msg_idx ON msg_event (source_msg_id);
CREATE INDEX msg_event_batch_idx ON msg_event (batch_id) WHERE batch_id IS NOT NULL;

-- Reference data as last applied (SPEC §5, §6).
CREATE TABLE ref_master (
  rtype         VARCHAR(8) NOT NULL,                      -- ABDG, AIRL, ...
  rkey          VARCHAR(200) NOT NULL,
  payload_json  TEXT NOT NULL,
  source        VARCHAR(30) NOT NULL DEFAULT 'AODB',     -- DNLD/RESP replace only AODB rows
  refreshed_at  TIMESTAMPTZ(6) NOT NULL,
  state_version BIGINT,                                  -- log offset of the last change
  PRIMARY KEY (rtype, rkey)
);

-- Last state of flights that the history sweep removed from live state
-- (SPEC §7). Idempotent by (flid, state_version): a redo inserts nothing.
CREATE TABLE flight_hst (
  flid          VARCHAR(64) NOT NULL,
  state_version BIGINT NOT NULL,                         -- log offset of the sweep
  alcd          VARCHAR(8),
  flno          VARCHAR(16),
  mvin          VARCHAR(4),
  sodt          TIMESTAMPTZ(6),
  payload_json  TEXT NOT NULL,                           -- the full last flight state
  swept_at      TIMESTAMPTZ(6) NOT NULL,
  PRIMARY KEY (flid, state_version)
);
CREATE INDEX flight_hst_sodt_idx ON flight_hst (sodt);

-- The applier's position and the single-writer fence (ARCHITECTURE.md).
CREATE TABLE pipeline (
  name           VARCHAR(64) PRIMARY KEY DEFAULT 'main',
  log_uuid       VARCHAR(64) NOT NULL,                   -- refuses a different log
  applied_offset BIGINT NOT NULL DEFAULT -1,             -- last log offset in PostgreSQL
  leader_epoch   BIGINT NOT NULL DEFAULT 0,
  fold_version   INT NOT NULL DEFAULT 0,
  updated_at     TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);

-- One row per applied fold batch: the chained digest at its end (SPEC §4).
CREATE TABLE fold_batch (
  last_offset   BIGINT PRIMARY KEY,
  first_offset  BIGINT NOT NULL,
  fold_version  INT NOT NULL,
  digest        VARCHAR(128) NOT NULL,                   -- hex of d(last_offset)
  applied_at    TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  CHECK (first_offset <= last_offset)
);

-- Operator commands waiting to enter the log (SPEC §11).
CREATE TABLE msgx_command (
  command_id   BIGSERIAL PRIMARY KEY,
  kind         VARCHAR(32) NOT NULL,                     -- e.g. REPLAY_MSG, REPLAY_EVENT
  args_json    TEXT NOT NULL,
  requested_by VARCHAR(200),
  created_at   TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  state        VARCHAR(16) NOT NULL DEFAULT 'PENDING'
    CHECK (state IN ('PENDING', 'APPENDED', 'REJECTED')),
  log_offset   BIGINT,                                   -- where it entered the log
  appended_at  TIMESTAMPTZ(6),
  error        TEXT
);
CREATE INDEX msgx_command_pending_idx ON msgx_command (command_id) WHERE state = 'PENDING';
