#include "state/log_record.h"

#include <flatbuffers/flatbuffers.h>

#include <type_traits>
#include <vector>

#include "base/aligned_bytes.h"
#include "state/verified_root.h"

namespace msgx {
namespace {

flatbuffers::Offset<fb::Settings> BuildSettings(flatbuffers::FlatBufferBuilder& b,
                                                const SettingsArgs& a) {
  const DecisionSettings& s = a.settings;
  std::vector<flatbuffers::Offset<flatbuffers::String>> rules;
  rules.reserve(s.ignore_rules.size());
  for (const std::string& r : s.ignore_rules) rules.push_back(b.CreateString(r));
  std::vector<std::int64_t> backoff;
  backoff.reserve(s.backoff.size());
  for (Millis d : s.backoff) backoff.push_back(d.count());
  const auto rules_v = b.CreateVector(rules);
  const auto backoff_v = b.CreateVector(backoff);
  const auto zone_name = b.CreateString(s.zone_name);
  const auto tzif =
      b.CreateVector(reinterpret_cast<const std::uint8_t*>(s.zone_tzif.data()), s.zone_tzif.size());
  fb::SettingsBuilder sb(b);
  sb.add_ignore_rules(rules_v);
  sb.add_retry_deterministic(s.retry_deterministic);
  sb.add_max_attempts(s.max_attempts);
  sb.add_backoff_ms(backoff_v);
  sb.add_backoff_cap_ms(s.backoff_cap.count());
  sb.add_head_deadline_ms(s.head_deadline.count());
  sb.add_include_day_boundary(s.include_day_boundary);
  sb.add_identity_window_ms(s.identity_window.count());
  sb.add_snapshot_clear_missing(s.snapshot_clear_missing);
  sb.add_history_keep_days(s.history_keep_days);
  sb.add_codec_max_bytes(s.codec_max_bytes);
  sb.add_omit_event_flight(s.omit_event_flight);
  sb.add_zone_name(zone_name);
  sb.add_zone_tzif(tzif);
  sb.add_in_force_from_start(a.in_force_from_start);
  return sb.Finish();
}

SettingsArgs ReadSettings(const fb::Settings& f) {
  SettingsArgs a;
  DecisionSettings& s = a.settings;
  s.ignore_rules.clear();
  if (f.ignore_rules()) {
    for (const auto* r : *f.ignore_rules()) s.ignore_rules.push_back(r ? r->str() : "");
  }
  s.retry_deterministic = f.retry_deterministic();
  s.max_attempts = f.max_attempts();
  s.backoff.clear();
  if (f.backoff_ms()) {
    for (std::int64_t d : *f.backoff_ms()) s.backoff.emplace_back(d);
  }
  s.backoff_cap = Millis{f.backoff_cap_ms()};
  s.head_deadline = Millis{f.head_deadline_ms()};
  s.include_day_boundary = f.include_day_boundary();
  s.identity_window = Millis{f.identity_window_ms()};
  s.snapshot_clear_missing = f.snapshot_clear_missing();
  s.history_keep_days = f.history_keep_days();
  s.codec_max_bytes = f.codec_max_bytes();
  s.omit_event_flight = f.omit_event_flight();
  s.zone_name = f.zone_name() ? f.zone_name()->str() : "";
  s.zone_tzif.clear();
  if (f.zone_tzif()) {
    s.zone_tzif.assign(reinterpret_cast<const char*>(f.zone_tzif()->data()), f.zone_tzif()->size());
  }
  a.in_force_from_start = f.in_force_from_start();
  return a;
}

flatbuffers::Offset<fb::Command> BuildCommand(flatbuffers::FlatBufferBuilder& b,
                                              const CommandData& c) {
  fb::CommandBody type = fb::CommandBody::NONE;
  flatbuffers::Offset<void> body;
  std::visit(
      [&](const auto& args) {
        using T = std::decay_t<decltype(args)>;
        if constexpr (std::is_same_v<T, ReplayArgs>) {
          type = fb::CommandBody::Replay;
          body = fb::CreateReplay(b, b.CreateVector(args.mailbox_ids)).Union();
        } else if constexpr (std::is_same_v<T, QuarantineArgs>) {
          type = fb::CommandBody::Quarantine;
          body =
              fb::CreateQuarantine(b, args.offset, b.CreateString(args.reason), args.sub).Union();
        } else if constexpr (std::is_same_v<T, HistorySweepArgs>) {
          type = fb::CommandBody::HistorySweep;
          body = fb::CreateHistorySweep(b, args.cutoff).Union();
        } else if constexpr (std::is_same_v<T, ExhaustArgs>) {
          type = fb::CommandBody::Exhaust;
          body =
              fb::CreateExhaust(b, args.offset, args.attempts, b.CreateString(args.reason)).Union();
        } else if constexpr (std::is_same_v<T, SettingsArgs>) {
          type = fb::CommandBody::Settings;
          body = BuildSettings(b, args).Union();
        } else {
          type = fb::CommandBody::IdentityExpiry;
          body = fb::CreateIdentityExpiry(b, args.before).Union();
        }
      },
      c.args);
  return fb::CreateCommand(b, type, body, b.CreateString(c.issued_by), c.command_id, c.issued_at);
}

}  // namespace

LogRecordData LogRecordData::Message(std::int64_t mailbox_id, std::string raw,
                                     std::optional<MicrosSinceEpoch> received_at, bool late) {
  LogRecordData d;
  d.kind = fb::RecordKind::MAILBOX_MESSAGE;
  d.mailbox_id = mailbox_id;
  d.raw = std::move(raw);
  d.received_at = received_at;
  d.late = late;
  return d;
}

LogRecordData LogRecordData::Command(CommandData command) {
  LogRecordData d;
  d.kind = fb::RecordKind::COMMAND;
  d.command = std::move(command);
  return d;
}

std::string EncodeLogRecord(const LogRecordData& data, MicrosSinceEpoch append_micros) {
  flatbuffers::FlatBufferBuilder b(256 + data.raw.size());
  flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> raw;
  if (data.kind == fb::RecordKind::MAILBOX_MESSAGE) {
    raw = b.CreateVector(reinterpret_cast<const std::uint8_t*>(data.raw.data()), data.raw.size());
  }
  flatbuffers::Offset<fb::Command> command;
  if (data.command) command = BuildCommand(b, *data.command);
  fb::LogRecordBuilder rb(b);
  rb.add_kind(data.kind);
  rb.add_mailbox_id(data.mailbox_id);
  rb.add_append_micros(append_micros);
  if (!raw.IsNull()) rb.add_raw(raw);
  if (data.received_at) {
    rb.add_received_at_micros(*data.received_at);
    rb.add_has_received_at(true);
  }
  if (data.late) rb.add_late(true);
  if (!command.IsNull()) rb.add_command(command);
  fb::FinishLogRecordBuffer(b, rb.Finish());
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

Result<const fb::LogRecord*> DecodeLogRecord(std::string_view bytes, std::string* storage) {
  if (storage == nullptr && !IsFlatbufferAligned(bytes)) {
    return Status::Internal("log record bytes are not aligned");
  }
  const fb::LogRecord* rec = VerifiedRoot<fb::LogRecord>(bytes, storage, fb::LogRecordIdentifier());
  if (rec == nullptr) {
    return Status::Internal("log record does not verify (" + std::to_string(bytes.size()) +
                            " bytes)");
  }
  return rec;
}

Result<LogRecordData> ToLogRecordData(std::string_view bytes, MicrosSinceEpoch* append_micros) {
  std::string aligned;
  auto r = DecodeLogRecord(bytes, &aligned);
  if (!r.ok()) return r.status();
  return ToLogRecordData(**r, append_micros);
}

Result<LogRecordData> ToLogRecordData(const fb::LogRecord& record,
                                      MicrosSinceEpoch* append_micros) {
  const fb::LogRecord* rec = &record;
  LogRecordData d;
  d.kind = rec->kind();
  d.mailbox_id = rec->mailbox_id();
  if (rec->raw())
    d.raw.assign(reinterpret_cast<const char*>(rec->raw()->data()), rec->raw()->size());
  if (rec->has_received_at()) d.received_at = rec->received_at_micros();
  d.late = rec->late();
  if (const fb::Command* c = rec->command()) {
    CommandData cd;
    cd.issued_by = c->issued_by() ? c->issued_by()->str() : "";
    cd.command_id = c->command_id();
    cd.issued_at = c->issued_at_micros();
    switch (c->body_type()) {
      case fb::CommandBody::Replay: {
        ReplayArgs a;
        if (auto* ids = c->body_as_Replay()->mailbox_ids())
          a.mailbox_ids.assign(ids->begin(), ids->end());
        cd.args = std::move(a);
        break;
      }
      case fb::CommandBody::Quarantine: {
        const fb::Quarantine* q = c->body_as_Quarantine();
        cd.args = QuarantineArgs{q->offset(), q->reason() ? q->reason()->str() : "", q->sub()};
        break;
      }
      case fb::CommandBody::HistorySweep:
        cd.args = HistorySweepArgs{c->body_as_HistorySweep()->cutoff_micros()};
        break;
      case fb::CommandBody::IdentityExpiry:
        cd.args = IdentityExpiryArgs{c->body_as_IdentityExpiry()->before_micros()};
        break;
      case fb::CommandBody::Exhaust: {
        const fb::Exhaust* x = c->body_as_Exhaust();
        cd.args = ExhaustArgs{x->offset(), x->attempts(), x->reason() ? x->reason()->str() : ""};
        break;
      }
      case fb::CommandBody::Settings:
        cd.args = ReadSettings(*c->body_as_Settings());
        break;
      default:
        return Status::Internal("log record has an unknown command body");
    }
    d.command = std::move(cd);
  }
  if (append_micros) *append_micros = rec->append_micros();
  return d;
}

Result<SettingsArgs> ToSettingsArgs(std::uint64_t offset, std::string_view bytes) {
  auto data = ToLogRecordData(bytes);
  if (!data.ok()) return data.status();
  const auto* args = data->command ? std::get_if<SettingsArgs>(&data->command->args) : nullptr;
  if (args == nullptr) {
    return Status::Internal("the record at offset " + std::to_string(offset) +
                            " is not a SETTINGS record");
  }
  return *args;
}

}  // namespace msgx
