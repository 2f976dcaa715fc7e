-- V5: the archived outcomes' retention (docs/jobs.md#archive-retention).
--
-- The retention job deletes proc_state_hst rows by age, oldest first, in
-- bounded batches; without an index on archived_at every batch would scan
-- the whole history. This index holds every history row in the order a
-- batch takes them.
CREATE INDEX proc_state_hst_archived_idx ON proc_state_hst (archived_at, msg_id);
