-- V12: proc_state is vacuumed after a fixed number of dead row versions,
-- not after a fifth of the table (docs/schema.md#vacuum-of-proc_state,
-- docs/performance.md#months-of-shadows-proc_states-vacuum-2026-12-07).
--
-- proc_state keeps an ARCHIVED shadow of every message ever decided, so the
-- table grows for good while the part that changes (the outcomes of the
-- last proc-state.archive-after, a day by default) stays the same size.
-- PostgreSQL's default vacuums a table once a fifth of its rows are dead:
-- on months of shadows that is days to weeks apart, and in between the
-- indexes of the rows not yet archived (identity, mark to-do, archive due)
-- keep every dead entry. 200,000 dead versions is how often the default
-- would vacuum the changing part alone at about a million messages a day,
-- whatever the number of shadows.
--
-- A storage parameter changes when vacuum runs, never what a statement
-- reads (docs/schema.md#migrations-only-add). An operator may set another
-- value with ALTER TABLE; msgx never sets it again.
ALTER TABLE proc_state SET (autovacuum_vacuum_scale_factor = 0,
                            autovacuum_vacuum_threshold = 200000);
