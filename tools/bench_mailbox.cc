#include "tools/bench_mailbox.h"

#include "base/mariadb_url.h"

namespace msgx::app {

Result<std::unique_ptr<BenchMailbox>> OpenBenchMailbox(const Config& config) {
  return IsMariaDbUrl(config.mailbox_url) ? OpenMariaDbBenchMailbox(config)
                                          : OpenPgBenchMailbox(config);
}

std::string DttmAsSqlTimestamp(const std::string& dttm) {
  if (dttm.size() != 14) return "";
  return dttm.substr(0, 4) + "-" + dttm.substr(4, 2) + "-" + dttm.substr(6, 2) + " " +
         dttm.substr(8, 2) + ":" + dttm.substr(10, 2) + ":" + dttm.substr(12, 2);
}

}  // namespace msgx::app
