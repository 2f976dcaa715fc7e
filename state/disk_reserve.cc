#include "state/disk_reserve.h"

#include <filesystem>
#include <system_error>

namespace msgx {

DiskReserve::DiskReserve(std::string dir, std::uintmax_t min_free_bytes)
    : dir_(std::move(dir)), min_free_bytes_(min_free_bytes) {}

std::optional<std::uintmax_t> DiskReserve::Available() const {
  std::error_code ec;
  const std::filesystem::space_info space = std::filesystem::space(dir_, ec);
  if (ec) return std::nullopt;
  return space.available;
}

Status DiskReserve::Check() const {
  const std::optional<std::uintmax_t> available = Available();
  if (!available || *available >= min_free_bytes_) return Status::Ok();
  return Status::Infra("state.dir has " + std::to_string(*available >> 20) +
                       " MiB free, less than the " + std::to_string(min_free_bytes_ >> 20) +
                       " MiB msgx keeps free (state.min-free-mb)");
}

}  // namespace msgx
