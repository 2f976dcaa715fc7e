// The fold's input: one log record, in a form that does not depend on how
// the log stores records (state/log_record.h adapts to it), and the two
// seams the fold reads through besides its state: the decoder and the log
// itself (for replays and the quarantine index).
//
// Thread-safety: plain values; implementations of the interfaces say.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "codecs/sis_message.h"
#include "state/decision_settings.h"

namespace msgx {

class TimeZone;
struct DecodedAhead;  // stream/fold/decoded_ahead.h

struct ReplayCommand {
  std::vector<std::int64_t> mailbox_ids;  // explicit, resolved when issued
};
// The record at `offset`, or with sub >= 0 only the sub-th message of the
// REPLAY command at `offset` (docs/fold.md#quarantine).
struct QuarantineCommand {
  std::int64_t offset = 0;
  std::string reason;
  int sub = -1;
};
struct HistorySweepCommand {
  MicrosSinceEpoch cutoff = 0;  // 0: start of today - history.keep-days
};
struct IdentityExpiryCommand {
  MicrosSinceEpoch before = 0;  // 0: record time - identity.window
};
// Seed mode: the message at `offset` exhausted its retries
// (docs/fold.md#seed-mode).
struct ExhaustCommand {
  std::int64_t offset = 0;
  int attempts = 0;
  std::string reason;
};
// The decision settings in force from this record on
// (docs/fold.md#settings-in-the-log).
struct SettingsCommand {
  DecisionSettings settings;
  bool in_force_from_start = false;  // also stands for the records before it
};
using FoldCommand = std::variant<ReplayCommand, QuarantineCommand, HistorySweepCommand,
                                 IdentityExpiryCommand, ExhaustCommand, SettingsCommand>;

struct FoldInput {
  std::int64_t offset = 0;
  std::int64_t mailbox_id = 0;           // messages only
  MicrosSinceEpoch append_micros = 0;    // the fold's clock for this record
  MicrosSinceEpoch received_micros = 0;  // messages: the mailbox's received time (0: none)
  std::string raw;                       // messages: exact bytes as captured
  std::optional<FoldCommand> command;    // set for commands
  // Messages: decoded ahead, off the fold's thread (stream/fold/read_ahead.h),
  // or null. The fold uses it only when it was made with the settings the
  // fold has in force; otherwise it decodes `raw` itself.
  std::shared_ptr<const DecodedAhead> decoded;

  bool is_command() const { return command.has_value(); }
};

// Decodes SIS bytes in two steps (codecs/sis_decoder.h behind an interface,
// so that the fold can be tested with a fake): META first, so that ignore
// rules apply before the body is looked at, then the body from what the
// first step kept (no second parse). Errors carry the decode classes
// (docs/codec.md#error-classes).
class MessageDecoder {
 public:
  // Whatever step 2 needs from step 1 (the parsed document).
  class Pending {
   public:
    virtual ~Pending() = default;
  };
  virtual ~MessageDecoder() = default;
  // META only. On success *pending holds what DecodeBody() needs.
  virtual Result<sis::Meta> DecodeMeta(std::string_view raw,
                                       std::unique_ptr<Pending>* pending) const = 0;
  // The whole message. REQUIRES: `pending` came from DecodeMeta(raw).
  virtual Result<sis::DecodedMessage> DecodeBody(std::string_view raw,
                                                 std::unique_ptr<Pending> pending) const = 0;
};

// Builds the fold's decoder for a zone's rules and codec.max-bytes, once per
// SETTINGS record (the real one: SisDecoderFactory(),
// stream/fold/sis_fold_decoder.h). The zone outlives the decoder.
using DecoderFactory =
    std::function<std::unique_ptr<MessageDecoder>(const TimeZone& zone, std::int64_t max_bytes)>;

// The log as the fold sees it besides the records it is handed.
class LogSource {
 public:
  virtual ~LogSource() = default;
  // The record at `offset` (for a replay: the message's bytes), or nullopt.
  virtual Result<std::optional<FoldInput>> ReadAt(std::int64_t offset) const = 0;
  // The reason when the record at `offset` (sub -1) or the sub-th message of
  // the REPLAY command at `offset` (sub >= 0) is quarantined (the index
  // written with the quarantine command), or nullopt. Exact: a quarantined
  // message of a replay does not quarantine the replay, nor the reverse.
  virtual std::optional<std::string> QuarantineReason(std::int64_t offset, int sub = -1) const = 0;
  // Seed mode: the reason when the message at `offset` exhausted its retries
  // (an EXHAUST command in the log), or nullopt.
  virtual std::optional<std::string> ExhaustReason(std::int64_t /*offset*/) const {
    return std::nullopt;
  }
  // The settings in force at `offset` and the offset of their SETTINGS
  // record: the last one at or before `offset`, else the log's first one
  // when it stands for the records before it; nullopt when the log has none
  // (docs/fold.md#settings-in-the-log).
  struct InForce {
    std::int64_t since = 0;
    DecisionSettings settings;
  };
  virtual std::optional<InForce> SettingsInForceAt(std::int64_t /*offset*/) const {
    return std::nullopt;
  }
};

}  // namespace msgx
