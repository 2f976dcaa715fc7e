-- Where a message's latency goes, split at msgx's own time stamps
-- (docs/performance.md#where-the-latency-goes-at-1000-and-5000-msgs-2026-12-04).
-- Run against msgx's database after `msgx bench`, with the dev services up:
--   psql "$MSGX_POSTGRES_URL" -v seconds=28 -f bench/latency_split.sql
-- Reads the messages enqueued in the last :seconds seconds of the run (the
-- last step, without its first seconds). Columns, ms, p50 and p99 of:
--   capture  mailbox now() at the INSERT -> capture's append to the log
--            (the bench stores airport time, UTC+8: hence the 8 hours);
--   apply    the append -> the start of the applier transaction that wrote
--            its outcome (fold_batch.applied_at);
--   dispatch that start -> the dispatcher's clock after Kafka's commit
--            (msg_event_state.sent_at);
--   total    mailbox now() -> Kafka's commit.
WITH x AS (
  SELECT p.enqueued_at AS at,
         extract(epoch FROM p.enqueued_at - (p.received_at + interval '8 hours')) * 1000 AS capture,
         extract(epoch FROM f.applied_at - p.enqueued_at) * 1000 AS apply,
         extract(epoch FROM e.sent_at - f.applied_at) * 1000 AS dispatch,
         extract(epoch FROM e.sent_at - (p.received_at + interval '8 hours')) * 1000 AS total
    FROM proc_state p
    JOIN msg_event_state e ON e.source_msg_id = p.msg_id AND e.target = 'KAFKA:msg'
    JOIN fold_batch f ON p.log_offset BETWEEN f.first_offset AND f.last_offset)
SELECT count(*) AS messages,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY capture)::numeric, 1) AS capture_p50,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY capture)::numeric, 1) AS capture_p99,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY apply)::numeric, 1) AS apply_p50,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY apply)::numeric, 1) AS apply_p99,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY dispatch)::numeric, 1) AS dispatch_p50,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY dispatch)::numeric, 1) AS dispatch_p99,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY total)::numeric, 1) AS total_p50,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY total)::numeric, 1) AS total_p99
  FROM x
 WHERE at > (SELECT max(enqueued_at) FROM proc_state) - make_interval(secs => :seconds);
