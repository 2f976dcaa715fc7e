-- V2: when an operator returns a DEAD event to PENDING (`msgx replay
-- --event`), the time is kept here, and the re-delivery carries the header
-- msgx-replay: 1 (SPEC §6). NULL for events never replayed.
ALTER TABLE msg_event ADD COLUMN replayed_at TIMESTAMPTZ(6);
