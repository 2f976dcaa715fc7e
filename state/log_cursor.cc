#include "state/log_cursor.h"

namespace msgx {

LogIterator* LogCursor::At(std::uint64_t from) {
  if (it_ == nullptr) {
    it_ = std::make_unique<LogIterator>(db_, from);
  } else {
    it_->Renew(from);
  }
  return it_.get();
}

Status LogCursor::Read(std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
  if (max == 0) return Status::Ok();
  return ReadEntries(At(from), max, out);
}

Status LogCursor::Scan(std::uint64_t from, std::size_t max, const LogVisitor& each) {
  if (max == 0) return Status::Ok();
  return ScanEntries(At(from), max, each);
}

}  // namespace msgx
