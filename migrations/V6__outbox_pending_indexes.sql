-- V6: the outbox's PENDING rows, indexed apart from the SENT ones
-- (docs/schema.md#indexes-of-the-outbox, docs/performance.md#the-head-query).
--
-- The dispatcher reads the head of its target, `WHERE target = $1 AND
-- state = 'PENDING' ORDER BY event_id LIMIT n`. Planned with the
-- statistics of an outbox that was all PENDING (after a backlog, as the
-- dispatcher bench loads it), PostgreSQL walks msg_event_pkey from the
-- start and filters, so every batch reads every event already SENT again,
-- and each batch is slower than the one before, until autovacuum analyses
-- the table again. V1's msg_event_target_state_idx has the rows, but the
-- planner discounts the heap order of an index of several columns and
-- prices the primary key's walk lower.
--
-- One partial index per target, led by event_id: it holds exactly the rows
-- one dispatcher's head reads, in the order it reads them, and the planner
-- prefers it to the primary key whatever the statistics say (the same order,
-- fewer rows, no filter). A SENT row leaves it; what a SENT update leaves
-- behind until VACUUM is a dead index entry, not a heap row to read. A new
-- target needs its own index here (docs/schema.md).
CREATE INDEX msg_event_pending_msg_idx ON msg_event (event_id)
  WHERE target = 'KAFKA:msg' AND state = 'PENDING';
CREATE INDEX msg_event_pending_schd_idx ON msg_event (event_id)
  WHERE target = 'KAFKA:schd' AND state = 'PENDING';
CREATE INDEX msg_event_pending_ref_idx ON msg_event (event_id)
  WHERE target = 'KAFKA:ref' AND state = 'PENDING';
-- KAFKA:schd's open batch (`batch_id IS NOT NULL`, PENDING; only KAFKA:schd
-- forms batches): V1's msg_event_batch_idx also holds every batch already
-- SENT, which the open-batch query would read past on every step.
CREATE INDEX msg_event_open_batch_idx ON msg_event (event_id)
  WHERE state = 'PENDING' AND batch_id IS NOT NULL;
--
-- V1's msg_event_target_state_idx stays (migrations only add): it serves
-- the dispatcher's DEAD count (Dispatcher::kCountOutboxQuery).
--
-- Plain CREATE INDEX: the migrator runs a file in one transaction with its
-- schema_version row, and CREATE INDEX CONCURRENTLY refuses a transaction
-- (V1). The plain build holds a SHARE lock on msg_event while it runs:
-- reads go on, the applier's inserts and the dispatchers' updates wait for
-- it. It reads the table once per index: 1.6 s for all four on 250,000
-- events of 1.5 kB (838 MB with dead row versions) on a shared 2-core
-- machine. msg_event holds the PENDING events and the SENT ones within
-- pipeline.event-retention (docs/schema.md#indexes-of-the-outbox).
