// The settle rule of the processed mark (docs/jobs.md#the-settle-rule):
// what msgx records in proc_state.mark_state for a row once the mailbox has
// said what it found (MailboxMarks::MarkFromNull). Pure.
//
//   written now                                   → MARKED
//   missing                                       → ABANDONED (on the abandon
//                                                   list, with the reason)
//   found with processed == the time msgx writes
//   for this row AND status == msgx's status      → MARKED: msgx's own mark
//                                                   from an earlier run that
//                                                   died before it settled
//   found otherwise marked                        → MARKED_ELSEWHERE, with
//                                                   what was found
//   found with processed NULL                     → not settled: someone
//                                                   cleared it between the
//                                                   write and the read; the
//                                                   next run tries again
//
// The processed time msgx writes for a row is fixed (the first terminal
// outcome's decision time, proc_state.backfill_next_at), so a re-run asks
// for exactly the mark an earlier run wrote, and compares exactly.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "stream/jobs/mailbox_marks.h"

namespace msgx {

enum class MarkState : std::uint8_t { kMarked, kMarkedElsewhere, kAbandoned, kReconciled };

// "MARKED", "MARKED_ELSEWHERE", "ABANDONED", "RECONCILED": the values of
// proc_state.mark_state.
std::string_view MarkStateName(MarkState s);

struct MarkSettlement {
  MarkState state = MarkState::kMarked;
  std::string reason;  // empty for a plain MARKED
};

// The settlement of `asked` given what the mailbox said of it (`seen.id` ==
// `asked.id`) and msgx's status (mailbox.processed-status); nullopt when
// the row is not settled now.
std::optional<MarkSettlement> SettleMark(const MarkRequest& asked, const MailboxMarkSeen& seen,
                                         std::string_view our_status);

}  // namespace msgx
