#include "state/log_cursor.h"

namespace msgx {

Status LogCursor::Read(std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
  if (max == 0) return Status::Ok();
  if (it_ == nullptr) {
    it_ = std::make_unique<LogIterator>(db_, from);
  } else {
    it_->Renew(from);
  }
  return ReadEntries(it_.get(), max, out);
}

}  // namespace msgx
