#include "stream/jobs/mark_settle.h"

#include "stream/pg/pg_session.h"

namespace msgx {

std::string_view MarkStateName(MarkState s) {
  switch (s) {
    case MarkState::kMarked:
      return "MARKED";
    case MarkState::kMarkedElsewhere:
      return "MARKED_ELSEWHERE";
    case MarkState::kAbandoned:
      return "ABANDONED";
    case MarkState::kReconciled:
      return "RECONCILED";
  }
  return "MARKED";
}

std::optional<MarkSettlement> SettleMark(const MarkRequest& asked, const MailboxMarkSeen& seen,
                                         std::string_view our_status) {
  switch (seen.kind) {
    case MailboxMarkSeen::Kind::kWritten:
      return MarkSettlement{MarkState::kMarked, {}};
    case MailboxMarkSeen::Kind::kMissing:
      return MarkSettlement{MarkState::kAbandoned, "the row is no longer in the mailbox"};
    case MailboxMarkSeen::Kind::kFound:
      break;
  }
  if (!seen.processed) return std::nullopt;
  if (*seen.processed == asked.processed && seen.status && *seen.status == our_status) {
    return MarkSettlement{MarkState::kMarked, "msgx's own mark, found by a later run"};
  }
  return MarkSettlement{MarkState::kMarkedElsewhere,
                        "already marked: processed " + PgTimestamp(*seen.processed) + ", status " +
                            (seen.status ? "'" + *seen.status + "'" : std::string("NULL"))};
}

}  // namespace msgx
