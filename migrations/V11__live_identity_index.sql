-- V11: proc_state's identity index holds the outcomes not yet archived
-- (docs/schema.md#indexes-of-proc_state,
-- docs/performance.md#the-identity-index-of-the-archived-shadows-2026-12-07).
--
-- V1's index held every row version of proc_state, and the ARCHIVED
-- shadows stay for good. So it took three entries a message (the applier's
-- insert, the processed mark's settle and the archive's update each write a
-- new row version, and the last two land among the key's earlier entries,
-- splitting pages in the middle of the index), and kept about 70 bytes a
-- message for good: more than the primary key, and 12 GB a year at 500,000
-- messages a day. Each vacuum of proc_state reads it whole. No statement
-- of msgx's reads it; operators look up outcomes by identity.
--
-- It now holds the rows not yet archived: a day of outcomes with the
-- default proc-state.archive-after, whatever the age of the installation.
-- An archived outcome's identity is found in proc_state_hst, whose own
-- identity index (V1) comes with its whole row (docs/operations.md,
-- "Finding a message by its identity"). A look-up of proc_state must say
-- state <> 'ARCHIVED' for the planner to use this index.
--
-- The CREATE INDEX reads proc_state once, inside this file's transaction,
-- and the applier's writes wait for it: 0.6 s for 3,000,000 rows in the
-- server's memory; a table read from disk takes as long as reading it.
DROP INDEX proc_state_identity_key_idx;
CREATE INDEX proc_state_identity_key_idx ON proc_state (identity_key)
  WHERE state <> 'ARCHIVED';

-- proc_state_hst_archived_at_idx (V1) on (archived_at) is read by nothing:
-- V5's proc_state_hst_archived_idx on (archived_at, msg_id) serves the
-- archive retention's order. Every archived outcome took an entry in both.
DROP INDEX proc_state_hst_archived_at_idx;
