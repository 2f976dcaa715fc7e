-- V10: the JSON payloads are compressed with LZ4, not pglz
-- (docs/schema.md#payload-compression, docs/performance.md#payloads-compressed-with-lz4).
--
-- PostgreSQL compresses a value when its row passes about 2 kB, with pglz
-- unless the column says otherwise. An event carries its flight's whole
-- JSON, often past that size, and in a backlog drain pglz took 14% of the
-- applier's backend; LZ4 takes a quarter of that and decompresses faster
-- for the dispatchers' reads. Only values written from now on use it:
-- stored ones keep pglz, and both read back the same.
--
-- A server built without LZ4 refuses the setting (feature_not_supported):
-- the columns then keep pglz and the migration still applies, with a
-- notice. Debian's PostgreSQL 15 has LZ4.
DO $$
BEGIN
  ALTER TABLE msg_event ALTER COLUMN payload_json SET COMPRESSION lz4;
  ALTER TABLE ref_master ALTER COLUMN payload_json SET COMPRESSION lz4;
  ALTER TABLE flight_hst ALTER COLUMN payload_json SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'payloads keep pglz: %', SQLERRM;
END
$$;
