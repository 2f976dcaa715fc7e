#include "stream/fold/fold.h"

#include <algorithm>
#include <limits>
#include <variant>

#include "base/failpoint.h"
#include "base/log.h"
#include "state/digest.h"
#include "stream/fold/crash_guard.h"
#include "stream/fold/decoded_ahead.h"
#include "stream/fold/handlers/handlers.h"
#include "stream/fold/identity.h"

namespace msgx {
namespace {

// The error_class recorded for a decode/handler failure.
std::string DeadClass(const Status& s) {
  switch (s.error_class()) {
    case ErrorClass::kMalformed:
    case ErrorClass::kProtocol:
    case ErrorClass::kUnsupported:
    case ErrorClass::kCodecError:
      return std::string(ErrorClassName(s.error_class()));
    default:
      return "CODEC_ERROR";  // internal failure (docs/codec.md#error-classes)
  }
}

// QUARANTINED is replayable by explicit id only: `msgx replay --class`
// refuses it (app/cmd_replay.cc), since such a message may crash the
// processor again (docs/fold.md#quarantine).
bool Replayable(const std::string& error_class) {
  return error_class == "UNSUPPORTED" || error_class == "CODEC_ERROR" ||
         error_class == "EXHAUSTED" || error_class == "QUARANTINED";
}

void AppendOutcomeCanonical(const Outcome& o, std::string* out) {
  out->append("{\"id\":");
  out->append(std::to_string(o.mailbox_id));
  out->append(",\"state\":");
  AppendJsonString(OutcomeStateName(o.state), out);
  out->append(",\"class\":");
  AppendJsonString(o.error_class, out);
  out->append(",\"error\":");
  AppendJsonString(o.last_error, out);
  out->append(",\"identity\":");
  AppendJsonString(o.identity_key, out);
  out->append(",\"prev\":");
  AppendJsonString(o.prev_error, out);
  out->push_back('}');
}

}  // namespace

FoldOptions FoldOptions::FromConfig(const Config& c, DecisionSettings settings) {
  FoldOptions o;
  o.batch_max = c.pipeline.batch_max;
  o.settings = std::move(settings);
  o.make_decoder = SisDecoderFactory();
  return o;
}

Fold::Fold(StateStore* store, const MessageDecoder* decoder, const LogSource* log,
           FoldOptions options)
    : store_(store),
      decoder_(decoder),
      log_(log),
      options_(std::move(options)),
      overlay_(store),
      pending_(options_.zone) {}

Status Fold::Open() {
  auto meta = store_->ReadMeta();
  if (!meta.ok()) return meta.status();
  applied_ = meta->applied_offset;
  const auto in_force = log_ ? log_->SettingsInForceAt(applied_ + 1) : std::nullopt;
  auto active = ActiveSettings::Make(in_force ? in_force->settings : options_.settings,
                                     in_force ? in_force->since : -1, options_.make_decoder,
                                     decoder_, options_.zone);
  if (!active.ok()) return active.status();
  active_ = std::move(*active);
  verified_ahead_.reset();
  PendPerActiveSettings();
  committed_digest_ = meta->digest.empty() ? GenesisDigest() : meta->digest;
  committed_generation_ = meta->generation;
  overlay_.ForgetCommitted();
  Rollback();
  return {};
}

void Fold::Rollback() {
  overlay_.Discard();
  pending_.Clear();
  last_ = applied_;
  digest_ = committed_digest_;
  generation_ = committed_generation_;
  pending_records_ = 0;
}

Status Fold::CommitPending() {
  if (pending_records_ == 0) return {};
  StateMeta meta;
  meta.applied_offset = last_;
  meta.generation = generation_;
  meta.fold_version = options_.fold_version;
  meta.digest = digest_;
  BatchWrite write = overlay_.TakeBatch(meta);
  write.pending = pending_.Finish(write, first_, last_append_);
  Status s = store_->Commit(write);
  if (!s.ok()) {
    Rollback();
    return s;
  }
  overlay_.Committed(write);
  // Crash point: state committed, nothing mirrored or applied yet.
  MSGX_FAILPOINT("fold.committed", std::to_string(last_));
  applied_ = last_;
  committed_digest_ = digest_;
  committed_generation_ = generation_;
  pending_records_ = 0;
  ++counters_.batches;
  return {};
}

Status Fold::Process(const std::vector<FoldInput>& records) {
  held_.reset();
  for (std::size_t i = 0; i < records.size(); ++i) {
    const FoldInput& r = records[i];
    if (r.offset <= last_) continue;
    if (r.offset != last_ + 1) {
      Rollback();
      return Status::Internal("fold: gap in the log before offset " + std::to_string(r.offset));
    }
    const bool cuts = r.command && (std::holds_alternative<HistorySweepCommand>(*r.command) ||
                                    std::holds_alternative<IdentityExpiryCommand>(*r.command) ||
                                    std::holds_alternative<SettingsCommand>(*r.command));
    if (cuts) {
      if (Status s = CommitPending(); !s.ok()) return s;
    }
    std::string canon;
    Status folded = FoldOne(r, &canon);
    CrashGuard::ClearCurrent();  // commits and I/O are no record's fault
    if (!folded.ok()) {
      Rollback();
      return folded;
    }
    if (held_) {
      // Seed mode: a failed head. Drop the pending batch (its overlay holds
      // the head's partial effects), fold the records before the head again
      // (deterministic: the same result) and commit them; stop there.
      const HeldHead head = *held_;
      Rollback();
      std::vector<FoldInput> prefix;
      for (std::size_t k = 0; k < i; ++k) {
        if (records[k].offset > applied_) prefix.push_back(records[k]);
      }
      Status s = Process(prefix);
      held_ = head;
      return s;
    }
    digest_ = ChainDigest(digest_, canon);
    if (pending_records_ == 0) first_ = r.offset;
    last_ = r.offset;
    last_append_ = r.append_micros;
    ++pending_records_;
    ++counters_.records;
    if (cuts || pending_records_ >= options_.batch_max || AtCut(r.offset)) {
      if (Status s = CommitPending(); !s.ok()) return s;
    }
  }
  return CommitPending();
}

bool Fold::AtCut(std::int64_t offset) const {
  const auto& c = options_.cut_offsets;
  return !c.empty() && offset <= c.back() && std::binary_search(c.begin(), c.end(), offset);
}

void Fold::RecordMessage(std::int64_t offset, int sub, MessageResult& m, MicrosSinceEpoch now,
                         std::string* canon) {
  Outcome& o = m.outcome;
  o.last_error = BoundUtf8(std::move(o.last_error), kMaxLastError);
  // A replayable DEAD outcome keeps the identity it was decided with (never
  // bound), so that its replay binds that key, whatever the tracker says by
  // then (docs/fold.md#identity).
  if (o.state == OutcomeState::kDead && Replayable(o.error_class) && o.identity_key.empty()) {
    o.identity_key = m.identity_key;
  }
  switch (o.state) {
    case OutcomeState::kSucceeded:
      ++counters_.succeeded;
      break;
    case OutcomeState::kSkipped:
      ++counters_.skipped;
      break;
    case OutcomeState::kDead:
      ++counters_.dead;
      break;
  }
  canon->append(",\"m\":[");
  canon->append(std::to_string(sub));
  canon->push_back(',');
  AppendOutcomeCanonical(o, canon);
  canon->push_back(',');
  AppendDecisionCanonical(m.decision, active_->zone(), canon);
  canon->push_back(']');
  if (observer_) observer_(offset, sub, o, m.decision);
  pending_.AddMessage(offset, sub, o, m.decision, m.source, m.times, now);
  overlay_.PutOutcome(o);
}

Status Fold::FoldOne(const FoldInput& r, std::string* canon) {
  canon->append("{\"offset\":");
  canon->append(std::to_string(r.offset));
  const std::optional<std::string> quarantined =
      log_ ? log_->QuarantineReason(r.offset) : std::nullopt;
  if (quarantined) {
    ++counters_.quarantined;
    canon->append(",\"quarantined\":1");
    if (!r.command) {
      MessageResult m;
      m.outcome.mailbox_id = r.mailbox_id;
      m.outcome.state = OutcomeState::kDead;
      m.outcome.error_class = "QUARANTINED";
      m.outcome.last_error = "quarantined:" + *quarantined;
      m.outcome.log_offset = r.offset;
      m.outcome.message_offset = r.offset;
      m.outcome.decided_micros = r.append_micros;
      m.source.mailbox_id = r.mailbox_id;
      m.times = {r.received_micros, r.append_micros};
      Logger("fold")->error("{}", WithTrace(std::to_string(r.mailbox_id), m.outcome.last_error));
      RecordMessage(r.offset, 0, m, r.append_micros, canon);
    }
    canon->push_back('}');
    return {};
  }
  // From here on, a fatal signal is this record's fault (crash poison,
  // docs/crash-safety.md#crash-poison); the test-only failpoint lets the
  // crash tests make one.
  CrashGuard::SetCurrent(r.offset);
  if (!r.command) MSGX_FAILPOINT("fold.record", std::to_string(r.mailbox_id));
  Status s;
  if (r.command) {
    std::visit(
        [&](const auto& c) {
          using T = std::decay_t<decltype(c)>;
          if constexpr (std::is_same_v<T, ReplayCommand>) {
            s = Replay(r, c, canon);
          } else if constexpr (std::is_same_v<T, QuarantineCommand>) {
            canon->append(",\"quarantine\":");
            canon->append(std::to_string(c.offset));
            if (c.sub >= 0) {  // absent before subs: old logs' digests stand
              canon->append(",\"sub\":");
              canon->append(std::to_string(c.sub));
            }
          } else if constexpr (std::is_same_v<T, HistorySweepCommand>) {
            s = Sweep(r, c, canon);
          } else if constexpr (std::is_same_v<T, ExhaustCommand>) {
            // Consulted at the exhausted message's offset, like quarantine.
            canon->append(",\"exhaust\":");
            canon->append(std::to_string(c.offset));
          } else if constexpr (std::is_same_v<T, SettingsCommand>) {
            s = TakeSettings(r, c, canon);
          } else {
            s = Expire(r, c, canon);
          }
        },
        *r.command);
  } else {
    auto m = DecideMessage(r, r.offset, r.append_micros, nullptr);
    if (!m.ok()) return m.status();
    if (active_->values().retry_deterministic && m->outcome.state == OutcomeState::kDead) {
      // Seed mode (docs/fold.md#seed-mode): hold the head, unless its retries
      // ran out.
      Outcome& o = m->outcome;
      if (auto reason = log_ ? log_->ExhaustReason(r.offset) : std::nullopt) {
        o.last_error = "exhausted:" + *reason + ": " + o.error_class + ": " + o.last_error;
        o.error_class = "EXHAUSTED";
      } else {
        held_ = HeldHead{r.offset, r.mailbox_id, o.error_class, o.last_error};
        return {};
      }
    }
    RecordMessage(r.offset, 0, *m, r.append_micros, canon);
  }
  canon->push_back('}');
  return s;
}

Result<Fold::MessageResult> Fold::DecideMessage(const FoldInput& message,
                                                std::int64_t decide_offset, MicrosSinceEpoch now,
                                                const Outcome* first) {
  const std::string_view raw = message.raw;
  const std::int64_t mailbox_id = message.mailbox_id;
  MessageResult m;
  m.source.mailbox_id = mailbox_id;
  m.times = {message.received_micros, message.append_micros};
  Outcome& o = m.outcome;
  o.mailbox_id = mailbox_id;
  o.log_offset = decide_offset;
  o.message_offset = message.offset;
  o.decided_micros = now;
  o.attempts = 1;
  const std::string trace = std::to_string(mailbox_id);
  auto dead = [&](const Status& st) {
    o.state = OutcomeState::kDead;
    o.error_class = DeadClass(st);
    o.last_error = st.message();
    Logger("fold")->warn("{}", WithTrace(trace, "DEAD " + o.error_class + ": " + st.message()));
  };

  // Decoded ahead with these very settings (FoldInput::decoded), or here.
  const DecodedAhead* ahead = UsableAhead(message, first);
  std::unique_ptr<MessageDecoder::Pending> pending;
  std::optional<Result<sis::Meta>> own_meta;
  const Result<sis::Meta>& meta =
      ahead != nullptr ? *ahead->meta
                       : own_meta.emplace(active_->decoder().DecodeMeta(raw, &pending));
  if (!meta.ok()) {
    dead(meta.status());
    return m;
  }
  m.source.type = meta->type;
  m.source.styp = meta->styp;
  m.source.seqn = meta->seqn;
  m.source.dttm_micros = meta->dttm_utc_micros;
  if (auto rule = active_->ignore().Match(meta->type, meta->styp)) {
    ++counters_.ignored;
    o.state = OutcomeState::kSkipped;
    o.last_error = "ignored:" + *rule;
    return m;
  }

  // The identity this message is decided with (docs/fold.md#identity). A
  // first decision takes its epoch from the sender's tracker; a replay keeps
  // the key of its first decision and never moves the tracker.
  std::optional<SenderSeqn> tracker_update;
  if (first && !first->identity_key.empty()) {
    m.identity_key = first->identity_key;
  } else {
    std::int32_t epoch = 0;
    if (meta->seqn_number) {
      auto tracker = overlay_.GetSender(meta->sndr);
      if (!tracker.ok()) return tracker.status();
      EpochStep step = NextEpoch(*tracker, *meta->seqn_number);
      epoch = step.epoch;
      if (!first) tracker_update = step.update;
    }
    m.identity_key = EpochIdentityKey(*meta, active_->values().include_day_boundary, epoch);
  }

  std::optional<Result<sis::DecodedMessage>> own_msg;
  if (ahead == nullptr) {
    own_msg.emplace(active_->decoder().DecodeBody(raw, std::move(pending)));
  } else if (!ahead->body) {
    // DecodeAhead leaves the body out only where META failed or an ignore
    // rule matched, and the same settings returned above in both cases.
    return Status::Internal("fold: a message decoded ahead has no body at offset " +
                            std::to_string(message.offset));
  }
  const Result<sis::DecodedMessage>& msg = own_msg ? *own_msg : *ahead->body;
  if (!msg.ok()) {
    dead(msg.status());
    return m;
  }

  // Identity binds only after a full decode; only then does the tracker move.
  if (tracker_update) overlay_.PutSender(meta->sndr, *tracker_update);
  o.identity_key = m.identity_key;
  auto binding = overlay_.GetBinding(o.identity_key);
  if (!binding.ok()) return binding.status();
  const std::string body_hash = own_msg ? BodyHash(raw) : ahead->body_hash;
  if (*binding && (*binding)->mailbox_id != mailbox_id) {
    ++counters_.duplicates;
    o.state = OutcomeState::kSkipped;
    o.last_error = "duplicate-of:" + std::to_string((*binding)->mailbox_id);
    if ((*binding)->body_hash != body_hash) {
      ++counters_.duplicate_body_differs;
      Logger("fold")->warn(
          "{}", WithTrace(trace, "duplicate identity " + o.identity_key + " of mailbox id " +
                                     std::to_string((*binding)->mailbox_id) +
                                     " with a different body (SEQN wrap or sender fault?)"));
    }
    return m;
  }

  DecideContext ctx;
  ctx.now_micros = now;
  ctx.offset = decide_offset;
  ctx.zone = &active_->zone();
  ctx.snapshot_clear_missing = active_->values().snapshot_clear_missing;
  auto d = (options_.decide != nullptr ? options_.decide : &Decide)(overlay_, *msg, ctx);
  if (!d.ok()) {
    if (d.status().error_class() == ErrorClass::kInfra) return d.status();
    dead(d.status());
    return m;
  }
  if (!*binding) overlay_.PutBinding({o.identity_key, mailbox_id, body_hash, now});
  m.decision = std::move(*d);
  overlay_.Apply(m.decision);
  if (m.decision.new_generation) ++generation_;
  o.state = m.decision.state;
  o.last_error = m.decision.reason;
  counters_.rejected_records += static_cast<std::int64_t>(m.decision.rejected.size());
  for (const Rejection& rj : m.decision.rejected) {
    Logger("fold")->info(
        "{}", WithTrace(trace, "rejected record " + std::to_string(rj.record_index) + " (" +
                                   rj.key + "): " + rj.reason));
  }
  // Records of a message skipped for a routine reason (an unknown flight, a
  // FLTR before the day) are counted, and logged at debug only: a stream
  // can carry them by the hundred thousand, and the outcome's reason and the
  // decision in the audit digest keep them (docs/operations.md#fold-logs).
  counters_.skipped_records += static_cast<std::int64_t>(m.decision.skipped.size());
  for (const Rejection& sk : m.decision.skipped) {
    Logger("fold")->debug(
        "{}", WithTrace(trace, "skipped record " + std::to_string(sk.record_index) + " (" + sk.key +
                                   "): " + sk.reason));
  }
  return m;
}

const DecodedAhead* Fold::UsableAhead(const FoldInput& message, const Outcome* first) {
  const DecodedAhead* a = message.decoded.get();
  if (a == nullptr || first != nullptr) return nullptr;  // a replay decides its own
  if (a->settings != verified_ahead_) {
    // Compared once per settings object: the since offset and every value.
    if (a->settings->since() != active_->since() || a->settings->values() != active_->values()) {
      return nullptr;
    }
    verified_ahead_ = a->settings;
  }
  return a;
}

Status Fold::Replay(const FoldInput& cmd, const ReplayCommand& replay, std::string* canon) {
  canon->append(",\"replay\":1");
  int sub = 0;
  for (std::int64_t id : replay.mailbox_ids) {
    ++counters_.replays;
    auto prev = overlay_.GetOutcome(id);
    if (!prev.ok()) return prev.status();
    std::optional<FoldInput> rec;
    if (*prev && (*prev)->state == OutcomeState::kDead && Replayable((*prev)->error_class) &&
        log_) {
      auto r = log_->ReadAt((*prev)->message_offset);
      if (!r.ok()) return r.status();
      rec = std::move(*r);
    }
    if (!rec || rec->is_command()) {
      // Silently refused (docs/fold.md#replay): not DEAD, not replayable, or
      // unknown.
      ++counters_.replays_refused;
      canon->append(",\"refused\":");
      canon->append(std::to_string(id));
      Logger("fold")->info("{}", WithTrace(std::to_string(id), "replay refused"));
      ++sub;
      continue;
    }
    rec->mailbox_id = id;
    const std::string prev_error = (*prev)->error_class + ": " + (*prev)->last_error;
    if (auto reason = log_->QuarantineReason(cmd.offset, sub)) {
      // This message of the replay crashed the processor
      // (docs/crash-safety.md#crash-poison): not decided, the rest are.
      ++counters_.quarantined;
      MessageResult m;
      m.identity_key = (*prev)->identity_key;  // kept for a later replay
      m.source.mailbox_id = id;
      m.times = {rec->received_micros, rec->append_micros};
      Outcome& o = m.outcome;
      o.mailbox_id = id;
      o.state = OutcomeState::kDead;
      o.error_class = "QUARANTINED";
      o.last_error = "quarantined:" + *reason;
      o.prev_error = prev_error;
      o.log_offset = cmd.offset;
      o.message_offset = rec->offset;
      o.decided_micros = cmd.append_micros;
      Logger("fold")->error("{}", WithTrace(std::to_string(id), o.last_error));
      RecordMessage(cmd.offset, sub, m, cmd.append_micros, canon);
      ++sub;
      continue;
    }
    // A death from here until the message is recorded is this message's
    // fault, not the whole command's (docs/crash-safety.md#crash-poison).
    CrashGuard::SetCurrent(cmd.offset, sub);
    MSGX_FAILPOINT("fold.replay", std::to_string(id));
    auto m = DecideMessage(*rec, cmd.offset, cmd.append_micros, &**prev);
    if (!m.ok()) return m.status();
    m->outcome.prev_error = prev_error;
    RecordMessage(cmd.offset, sub, *m, cmd.append_micros, canon);
    CrashGuard::SetCurrent(cmd.offset);  // between messages: the command's
    ++sub;
  }
  return {};
}

Status Fold::Sweep(const FoldInput& cmd, const HistorySweepCommand& sweep, std::string* canon) {
  MicrosSinceEpoch cutoff = sweep.cutoff;
  if (cutoff == 0) {
    cutoff = StartOfAirportDay(cmd.append_micros, active_->zone()) -
             static_cast<MicrosSinceEpoch>(active_->values().history_keep_days) * 86'400'000'000LL;
  }
  auto old = overlay_.FlightsBySodt(std::numeric_limits<MicrosSinceEpoch>::min(), cutoff - 1);
  if (!old.ok()) return old.status();
  Decision d;
  for (const std::string& flid : *old) {
    auto f = overlay_.GetFlight(flid);
    if (!f.ok()) return f.status();
    if (!*f) continue;
    FlightChange c;
    c.op = ChangeOp::kDelete;
    c.flid = flid;
    c.changes = DiffRecords((*f)->data, Record{});
    c.flight = std::make_shared<const Flight>(std::move(**f));
    c.cause = "history-sweep";
    d.flights.push_back(std::move(c));
  }
  counters_.flights_swept += static_cast<std::int64_t>(d.flights.size());
  overlay_.Apply(d);
  canon->append(",\"sweep\":");
  canon->append(std::to_string(cutoff));
  canon->push_back(',');
  AppendDecisionCanonical(d, active_->zone(), canon);
  pending_.AddSweep(cmd.offset, d, cmd.append_micros);
  if (observer_) {
    Outcome none;
    none.log_offset = cmd.offset;
    observer_(cmd.offset, 0, none, d);
  }
  return {};
}

Status Fold::Expire(const FoldInput& cmd, const IdentityExpiryCommand& expiry, std::string* canon) {
  MicrosSinceEpoch before = expiry.before;
  if (before == 0) before = cmd.append_micros - active_->values().identity_window.count() * 1000;
  auto bindings = store_->BindingsBoundBefore(before);
  if (!bindings.ok()) return bindings.status();
  canon->append(",\"expire\":");
  canon->append(std::to_string(before));
  canon->append(",\"keys\":[");
  bool first = true;
  for (const IdentityBinding& b : *bindings) {
    overlay_.DeleteBinding(b.key);
    if (!first) canon->push_back(',');
    first = false;
    AppendJsonString(b.key, canon);
  }
  canon->push_back(']');
  counters_.identities_expired += static_cast<std::int64_t>(bindings->size());
  return {};
}

void Fold::PendPerActiveSettings() {
  pending_.set_zone(&active_->zone());
  pending_.set_event_flight(active_->values().omit_event_flight ? EventFlight::kOmitted
                                                                : EventFlight::kFull);
}

Status Fold::TakeSettings(const FoldInput& cmd, const SettingsCommand& c, std::string* canon) {
  canon->append(",\"settings\":");
  canon->append(CanonicalSettings(c.settings));
  auto next =
      ActiveSettings::Make(c.settings, cmd.offset, options_.make_decoder, decoder_, options_.zone);
  if (!next.ok()) {
    // Validated before it was appended: a record that does not parse is a
    // corrupt log or a newer writer.
    return Status::Internal("settings record at offset " + std::to_string(cmd.offset) +
                            " cannot be used: " + next.status().message());
  }
  if (active_->values() != c.settings) {
    Logger("fold")->info("settings in force from offset {}: {}", cmd.offset,
                         DescribeSettingsChange(active_->values(), c.settings));
  }
  active_ = std::move(*next);
  verified_ahead_.reset();
  PendPerActiveSettings();
  return {};
}

}  // namespace msgx
