-- V4: the proc_state archive (docs/jobs.md#proc-state-archive).
--
-- V1's CHECK on proc_state.state already allows 'ARCHIVED', and
-- proc_state_hst has every column (V3 added mark_state and mark_reason), so
-- the archive needs only the index of the rows it moves: terminal rows whose
-- processed mark is settled, by age. V1's proc_state_archive_idx also holds
-- unsettled and ABANDONED rows, which a batch would read past on every run;
-- this one holds exactly the rows a batch takes, in the order it takes them.
CREATE INDEX proc_state_archive_due_idx ON proc_state (updated_at, msg_id)
  WHERE state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
    AND mark_state IN ('MARKED', 'MARKED_ELSEWHERE', 'RECONCILED');
