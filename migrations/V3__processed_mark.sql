-- V3: the processed mark's own state per proc_state row
-- (docs/jobs.md#processed-mark). V1's backfill_* columns keep their
-- meaning: backfill_next_at is the mark's intent (the first terminal
-- outcome's decision time, which is also the processed time written into
-- the mailbox), backfill_at is when the mark was settled as written,
-- backfill_abandoned_at and backfill_abandoned_reason are the abandon list.
--
--   mark_state   NULL              to do (the row is terminal and not settled)
--                MARKED            msgx wrote the mailbox row's mark
--                MARKED_ELSEWHERE  the mailbox row was marked before msgx
--                                  got to it; its mark was left as it is
--                ABANDONED         the mailbox row is gone: on the abandon list
--                RECONCILED        an abandoned row an operator has settled
--   mark_reason  why the row has its mark_state (what was found, why it was
--                abandoned, who reconciled it); NULL for a plain MARKED.
ALTER TABLE proc_state ADD COLUMN mark_state VARCHAR(20)
  CHECK (mark_state IN ('MARKED', 'MARKED_ELSEWHERE', 'ABANDONED', 'RECONCILED'));
ALTER TABLE proc_state ADD COLUMN mark_reason VARCHAR(1000);
ALTER TABLE proc_state_hst ADD COLUMN mark_state VARCHAR(20);
ALTER TABLE proc_state_hst ADD COLUMN mark_reason VARCHAR(1000);
-- The rows still to do, in the order a batch takes them, so that a batch
-- reads only them.
CREATE INDEX proc_state_mark_todo_idx ON proc_state (backfill_next_at, msg_id)
  WHERE mark_state IS NULL AND state IN ('SUCCEEDED', 'SKIPPED', 'DEAD');
-- The abandon list that is still open (its size in `msgx status`).
CREATE INDEX proc_state_mark_abandoned_idx ON proc_state (msg_id)
  WHERE mark_state = 'ABANDONED';
