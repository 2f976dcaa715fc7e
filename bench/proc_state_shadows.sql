-- A database as months of running leave it, for bench/soak.sh's PRELOAD=:
-- 30,000,000 ARCHIVED shadows in proc_state (about two months at 500,000
-- messages a day), as the archive leaves them (docs/jobs.md#proc-state-archive),
-- with msg_ids and log offsets below any the bench writes and updated_at six
-- a second back from now. About 90 s and 4.5 GB on the dev PostgreSQL.
-- Another count: edit the \set below.
--
--   PRELOAD=bench/proc_state_shadows.sql bash bench/soak.sh 25 2k OUT
--
-- Each autovacuum is logged too (the dev server's log, kept as OUT/pg.log).
\set shadows 30000000
ALTER SYSTEM SET log_autovacuum_min_duration = 0;
SELECT pg_reload_conf();
INSERT INTO proc_state (msg_id, state, identity_key, updated_at, log_offset,
                        backfill_next_at, backfill_at, mark_state)
SELECT g - 100000000, 'ARCHIVED',
       'AODB|FLOP|GTDT|' || lpad((g % 999999 + 1)::text, 6, '0') || '#e' || (g / 999999),
       t, g - 100000000, t, t, 'MARKED'
  FROM generate_series(1, :shadows) AS g,
       LATERAL (SELECT now() - interval '1 second' * ((:shadows - g) / 6)) AS x (t);
