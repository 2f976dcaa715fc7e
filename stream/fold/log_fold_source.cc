#include "stream/fold/log_fold_source.h"

#include "state/log_record.h"

namespace msgx {

Result<FoldInput> ToFoldInput(std::uint64_t offset, const fb::LogRecord& record) {
  MicrosSinceEpoch append = 0;
  auto data = ToLogRecordData(record, &append);
  if (!data.ok()) return data.status();
  FoldInput in;
  in.offset = static_cast<std::int64_t>(offset);
  in.append_micros = append;
  in.mailbox_id = data->mailbox_id;
  in.received_micros = data->received_at.value_or(0);
  if (data->kind == fb::RecordKind::COMMAND && data->command) {
    std::visit(
        [&](const auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, ReplayArgs>) {
            in.command = ReplayCommand{a.mailbox_ids};
          } else if constexpr (std::is_same_v<T, QuarantineArgs>) {
            in.command = QuarantineCommand{static_cast<std::int64_t>(a.offset), a.reason, a.sub};
          } else if constexpr (std::is_same_v<T, HistorySweepArgs>) {
            in.command = HistorySweepCommand{a.cutoff};
          } else if constexpr (std::is_same_v<T, ExhaustArgs>) {
            in.command = ExhaustCommand{static_cast<std::int64_t>(a.offset), a.attempts, a.reason};
          } else if constexpr (std::is_same_v<T, SettingsArgs>) {
            in.command = SettingsCommand{a.settings, a.in_force_from_start};
          } else {
            in.command = IdentityExpiryCommand{a.before};
          }
        },
        data->command->args);
  } else {
    in.raw = std::move(data->raw);
  }
  return in;
}

LogFoldSource::LogFoldSource(LogReadFn read, CommandIndexFn index)
    : scan_([read = std::move(read)](std::uint64_t from, std::size_t max,
                                     const LogVisitor& each) -> Status {
        std::vector<LogEntry> entries;
        if (Status s = read(from, max, &entries); !s.ok()) return s;
        for (const LogEntry& e : entries) {
          auto record = DecodeLogRecord(e.bytes, nullptr);  // a std::string's: aligned
          if (!record.ok()) return record.status();
          if (Status s = each(e.offset, **record); !s.ok()) return s;
        }
        return {};
      }),
      index_(std::move(index)) {}

Status LogFoldSource::ReadBatch(std::uint64_t from, std::size_t max,
                                std::vector<FoldInput>* out) const {
  return scan_(from, max, [out](std::uint64_t offset, const fb::LogRecord& record) -> Status {
    auto in = ToFoldInput(offset, record);
    if (!in.ok()) return in.status();
    out->push_back(std::move(*in));
    return {};
  });
}

void LogFoldSource::Take(const FoldInput& in) {
  if (!in.command) return;
  if (const auto* q = std::get_if<QuarantineCommand>(&*in.command)) {
    quarantine_.emplace(std::make_pair(q->offset, q->sub), q->reason);
  } else if (const auto* x = std::get_if<ExhaustCommand>(&*in.command)) {
    exhausted_.emplace(x->offset, x->reason);
  } else if (const auto* st = std::get_if<SettingsCommand>(&*in.command)) {
    settings_.emplace(in.offset, *st);
  }
}

Status LogFoldSource::BuildQuarantineIndex() {
  quarantine_.clear();
  exhausted_.clear();
  settings_.clear();
  std::uint64_t from = 0;
  if (index_) {
    // The indexed command records one by one, then everything after upto.
    auto index = index_();
    if (!index.ok()) return index.status();
    for (std::uint64_t offset : index->offsets) {
      auto record = ReadAt(static_cast<std::int64_t>(offset));
      if (!record.ok()) return record.status();
      if (!*record || !(*record)->command) {
        return Status::Internal("the command index lists offset " + std::to_string(offset) +
                                ", which holds no command record");
      }
      Take(**record);
    }
    from = index->upto;
  }
  for (;;) {
    std::vector<FoldInput> batch;
    if (Status s = ReadBatch(from, 4096, &batch); !s.ok()) return s;
    if (batch.empty()) return {};
    for (const FoldInput& in : batch) Take(in);
    from = static_cast<std::uint64_t>(batch.back().offset) + 1;
  }
}

Result<std::optional<FoldInput>> LogFoldSource::ReadAt(std::int64_t offset) const {
  if (offset < 0) return std::optional<FoldInput>();
  std::vector<FoldInput> one;
  if (Status s = ReadBatch(static_cast<std::uint64_t>(offset), 1, &one); !s.ok()) return s;
  if (one.empty() || one[0].offset != offset) return std::optional<FoldInput>();
  return std::optional<FoldInput>(std::move(one[0]));
}

std::optional<std::string> LogFoldSource::QuarantineReason(std::int64_t offset, int sub) const {
  auto it = quarantine_.find({offset, sub});
  if (it == quarantine_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> LogFoldSource::ExhaustReason(std::int64_t offset) const {
  auto it = exhausted_.find(offset);
  if (it == exhausted_.end()) return std::nullopt;
  return it->second;
}

std::optional<LogSource::InForce> LogFoldSource::SettingsInForceAt(std::int64_t offset) const {
  auto it = settings_.upper_bound(offset);
  if (it != settings_.begin()) {
    --it;
  } else if (it == settings_.end() || !it->second.in_force_from_start) {
    return std::nullopt;
  }
  return InForce{it->first, it->second.settings};
}

}  // namespace msgx
