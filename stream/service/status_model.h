// The status document of msgx: one builder behind both `GET /status` and
// `msgx status [--json]`, so both give the same keys
// (docs/operations.md#status).
//
// BuildStatus() reads every store read-only, the way an outside reader would:
// the log as a RocksDB secondary, the state store read-only, the mailbox, the
// own database and Redis through their clients. A source that cannot be read
// is listed under "unavailable" with why, and the rest is still filled in.
// Inside the service, `live` adds the runner's fields ("service" and
// "stages"); `msgx status` takes those from the running service's /status
// when there is one (MergeLiveFields), and otherwise says the service is not
// running. Top-level keys, in pipeline order: mailbox, log, capture, intake,
// settings, fold, outcomes, mirror, postgres, outbox, service, stages,
// unavailable.
//
// Thread-safety: free functions; safe from any thread.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "stream/service/stage_runner.h"

namespace msgx {

// What only the running service knows.
struct LiveStatus {
  bool leading = true;            // false while waiting for leadership
  std::int64_t leader_epoch = 0;  // 0 without PostgreSQL or not leading
  std::string waiting;            // why it does not lead ("" when it does)
  std::vector<StageHealth> stages;
};

// The document, as a rapidjson Document (an object).
rapidjson::Document BuildStatus(const Config& config, const LiveStatus* live);

// Replaces `doc`'s "service" and "stages" with those of `live_doc` (the
// service's /status); without them, "service" says {"running": false}.
void MergeLiveFields(const rapidjson::Value& live_doc, rapidjson::Document* doc);

// True when "unavailable" is empty.
bool AllSourcesAnswered(const rapidjson::Document& doc);

std::string ToJson(const rapidjson::Value& v);
// The readable form of `msgx status`: one "section.key: value" line per
// figure, the stages as a table, the unavailable sources last.
std::string ToTable(const rapidjson::Document& doc);

}  // namespace msgx
