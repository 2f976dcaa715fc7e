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

// The same shape on MariaDB/MySQL (InnoDB): the message as LONGTEXT in
// utf8mb4, times as DATETIME(6) (docs/operations.md#running-against-mariadbmysql).
inline constexpr const char* kLocalMariaDbMailboxDdl = R"sql(
CREATE TABLE IF NOT EXISTS cminmsgs (
  cminmsgs_id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  cminmsgs_clob_msg LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  cminmsgs_date_received DATETIME(6) NULL,
  cminmsgs_date_processed DATETIME(6) NULL,
  cminmsgs_subsystem_name VARCHAR(4) NULL,
  cminmsgs_subsystem_sequence INT NULL,
  cminmsgs_subsystem_date_sent DATETIME(6) NULL,
  cminmsgs_subsystem_subtype VARCHAR(4) NULL,
  cminmsgs_subsystem_type VARCHAR(4) NULL,
  cminmsgs_status VARCHAR(20) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
)sql";

}  // namespace msgx
