-- V9: fewer index entries on the applier's write path
-- (docs/schema.md#indexes-of-proc_state, docs/performance.md#fewer-indexes-on-the-write-path).
--
-- Every outcome the applier inserts and every event it queues pays one
-- entry in each index whose predicate the new row meets, and the processed
-- mark's settle (never a HOT update: it changes mark_state, which partial
-- indexes read) pays one again in each. These indexes are read by no
-- statement of msgx's, or hold every row for a query that wants a few:
--
-- * proc_state_backfill_due_idx, proc_state_abandoned_idx and
--   proc_state_archive_idx (V1) were the first drafts of the processed mark's
--   and the archive's indexes. V3's proc_state_mark_todo_idx and
--   proc_state_mark_abandoned_idx and V4's proc_state_archive_due_idx
--   replaced them; the V1 ones still took an entry for every terminal row.
DROP INDEX proc_state_backfill_due_idx;
DROP INDEX proc_state_abandoned_idx;
DROP INDEX proc_state_archive_idx;

-- * proc_state_state_idx held every outcome by state. What reads outcomes
--   by state wants the few that are not done well: DEAD, SKIPPED, FAILED,
--   PENDING (an operator's dead-letter list, docs/operations.md). Those
--   stay indexed; SUCCEEDED and ARCHIVED rows, nearly all of them, no longer
--   take an entry.
DROP INDEX proc_state_state_idx;
CREATE INDEX proc_state_unfinished_idx ON proc_state (state, msg_id)
  WHERE state NOT IN ('SUCCEEDED', 'ARCHIVED');

-- * msg_event_target_state_idx held every event, for the DEAD count of the
--   dispatcher and of `msgx status` and the replay's DEAD rows. Since V6 and
--   V8 the PENDING rows are read through their own partial indexes; the DEAD
--   rows get one of their own.
DROP INDEX msg_event_target_state_idx;
CREATE INDEX msg_event_dead_idx ON msg_event (target, event_id) WHERE state = 'DEAD';

-- The two CREATE INDEX statements read their table once each, inside this
-- file's transaction (as V6's do): on 1,000,000 outcomes and a week of
-- events, seconds, during which msgx's writes to these tables wait.
