-- V8: a delivered range per Kafka transaction instead of a SENT mark per
-- event (docs/schema.md#deliveries, docs/dispatch.md#delivered-ranges).
--
-- A dispatcher delivers its target's events in event_id order: each Kafka
-- transaction is a prefix of the target's PENDING head. Instead of
-- rewriting every delivered row (1.5 kB with five index entries, never a
-- HOT update: 20% of PostgreSQL's time in the service), it now inserts one
-- row here per transaction. A msg_event row inside one of its target's
-- ranges, still PENDING and never replayed, is delivered; msg_event_state
-- below gives every event its state as before. SENT rows written before V8,
-- and replayed events (sent one by one), keep their per-row mark.
CREATE TABLE outbox_delivery (
  target         VARCHAR(30) NOT NULL,
  first_event_id BIGINT NOT NULL,                        -- lowest event_id delivered
  last_event_id  BIGINT NOT NULL,                        -- highest event_id delivered
  events         INT NOT NULL,                           -- how many of the range's rows
  sent_at        TIMESTAMPTZ(6) NOT NULL,                -- Kafka's commit, as the dispatcher saw it
  PRIMARY KEY (target, last_event_id),
  CHECK (first_event_id <= last_event_id AND events > 0)
);
-- The event retention job: ranges by age.
CREATE INDEX outbox_delivery_sent_idx ON outbox_delivery (sent_at, target, last_event_id);

-- Replayed events still to send sit below their target's delivered
-- position: the dispatcher's head reads them through this index.
CREATE INDEX msg_event_pending_replayed_idx ON msg_event (target, event_id)
  WHERE state = 'PENDING' AND replayed_at IS NOT NULL;

-- Every event with its delivery state: state, attempts (the successful send
-- counts) and sent_at as a reader of msg_event saw them before V8.
CREATE VIEW msg_event_state AS
SELECT e.event_id, e.event_key, e.target, e.partition_key, e.event_type, e.state_version,
       e.payload_json,
       CASE WHEN d.first_event_id <= e.event_id THEN 'SENT' ELSE e.state END AS state,
       CASE WHEN d.first_event_id <= e.event_id THEN e.attempts + 1 ELSE e.attempts END
         AS attempts,
       e.next_attempt_at, e.error_class, e.last_error, e.created_at,
       CASE WHEN d.first_event_id <= e.event_id THEN d.sent_at ELSE e.sent_at END AS sent_at,
       e.source_msg_id, e.batch_id, e.replayed_at, e.received_at
FROM msg_event e
LEFT JOIN LATERAL (
  SELECT r.first_event_id, r.sent_at FROM outbox_delivery r
  WHERE e.state = 'PENDING' AND e.replayed_at IS NULL
    AND r.target = e.target AND r.last_event_id >= e.event_id
  ORDER BY r.last_event_id LIMIT 1) d ON true;
