#include "stream/service/rebuild_gate.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "base/log.h"

namespace msgx {

RebuildGate::RebuildGate(Options options) : o_(std::move(options)), marker_(ReadMarker()) {
  if (!o_.load) loaded_ = true;
}

Status RebuildGate::BeforeStep(std::int64_t applied, std::vector<std::int64_t>* cuts) {
  std::string why;
  if (!loaded_) {
    auto r = o_.load();
    if (r.ok()) {
      loaded_ = true;
      *r = r->Above(applied);
      if (r->pending()) {
        Logger("fold")->warn(
            "state store at offset {} is behind PostgreSQL at {}: rebuilding from the log, "
            "checking the chained digest at {} batch ends",
            applied, r->pg_applied(), r->cut_offsets().size());
        if (Status s = WriteMarker(r->pg_applied()); !s.ok()) return s;
        *cuts = r->cut_offsets();
        check_ = std::move(*r);
      } else if (Status s = RemoveMarker(); !s.ok()) {
        return s;
      }
    } else if (r.status().error_class() != ErrorClass::kInfra) {
      return r.status();
    } else {
      why = r.status().message();
    }
  }
  if (loaded_) return Status::Ok();
  if (applied < 0) {
    return Status::Infra(
        "nothing folded yet, so this may be a rebuild, which is checked against PostgreSQL's "
        "batch digests; " +
        why);
  }
  if (marker_ && applied < *marker_) {
    return Status::Infra("a rebuild up to offset " + std::to_string(*marker_) +
                         " is checked against PostgreSQL's batch digests; " + why);
  }
  return Status::Ok();
}

Status RebuildGate::AfterStep(const StateStore& store, std::int64_t applied, bool* caught_up) {
  *caught_up = false;
  if (!check_ || !check_->pending()) return Status::Ok();
  if (Status s = check_->Verify(store, applied); !s.ok()) return s;
  if (check_->pending()) return Status::Ok();
  *caught_up = true;
  return RemoveMarker();
}

std::optional<std::int64_t> RebuildGate::ReadMarker() const {
  if (o_.marker_path.empty()) return std::nullopt;
  std::ifstream in(o_.marker_path);
  std::int64_t until = 0;
  if (in >> until) return until;
  return std::nullopt;
}

Status RebuildGate::WriteMarker(std::int64_t until) const {
  if (o_.marker_path.empty()) return Status::Ok();
  const std::string tmp = o_.marker_path + ".tmp";
  const std::string text = std::to_string(until) + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Infra("rebuild marker " + tmp + ": " + std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!written) return Status::Infra("rebuild marker " + tmp + ": " + std::strerror(err));
  if (std::rename(tmp.c_str(), o_.marker_path.c_str()) != 0) {
    return Status::Infra("rebuild marker " + o_.marker_path + ": " + std::strerror(errno));
  }
  // The rename itself survives a crash once the directory is synced.
  const std::string dir = std::filesystem::path(o_.marker_path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Status::Infra("rebuild marker dir " + dir + ": " + std::strerror(errno));
  const int synced = ::fsync(dfd);
  ::close(dfd);
  if (synced != 0) return Status::Infra("rebuild marker dir " + dir + ": " + std::strerror(errno));
  return Status::Ok();
}

Status RebuildGate::RemoveMarker() const {
  if (o_.marker_path.empty()) return Status::Ok();
  if (std::remove(o_.marker_path.c_str()) != 0 && errno != ENOENT) {
    return Status::Infra("rebuild marker " + o_.marker_path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace msgx
