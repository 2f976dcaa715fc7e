// The mailbox's shape (docs/capture.md#the-mailbox-is-not-ours), for local
// runs (`msgx dev up`) and tests ONLY. The real mailbox belongs to another
// team and msgx never runs DDL against it; this exists so that a throwaway
// mailbox looks exactly like the real one.
#pragma once

namespace msgx {

// CREATE TABLE IF NOT EXISTS cminmsgs (...), in exactly the documented shape.
inline constexpr const char* kLocalMailboxDdl = R"sql(
CREATE TABLE IF NOT EXISTS cminmsgs (
  cminmsgs_id BIGSERIAL PRIMARY KEY,
  cminmsgs_clob_msg TEXT NOT NULL,
  cminmsgs_date_received TIMESTAMP,
  cminmsgs_date_processed TIMESTAMP,
  cminmsgs_subsystem_name VARCHAR(4),
  cminmsgs_subsystem_sequence INT,
  cminmsgs_subsystem_date_sent TIMESTAMP,
  cminmsgs_subsystem_subtype VARCHAR(4),
  cminmsgs_subsystem_type VARCHAR(4),
  cminmsgs_status VARCHAR(20)
);
)sql";

}  // namespace msgx
