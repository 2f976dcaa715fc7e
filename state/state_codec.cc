#include "state/state_codec.h"

#include <flatbuffers/flatbuffers.h>

#include <vector>

#include "schemas/state_generated.h"
#include "state/compact_flight.h"
#include "state/verified_root.h"

namespace msgx {
namespace {

namespace fs = ::msgx::fbstate;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

std::string Finish(FlatBufferBuilder& b) {
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

Offset<flatbuffers::Vector<Offset<fs::Value>>> BuildFields(FlatBufferBuilder& b,
                                                           const Fields& fields) {
  std::vector<Offset<fs::Value>> out;
  out.reserve(fields.size());
  for (const auto& [name, v] : fields) {
    auto n = b.CreateString(name);
    auto t = v.kind == Value::Kind::kText ? b.CreateString(v.text) : Offset<flatbuffers::String>();
    out.push_back(fs::CreateValue(b, n, static_cast<std::uint8_t>(v.kind), t, v.number));
  }
  return b.CreateVector(out);
}

Offset<fs::Record> BuildRecord(FlatBufferBuilder& b, const Record& r) {
  auto fields = BuildFields(b, r.fields);
  std::vector<Offset<fs::List>> lists;
  for (const auto& [name, entries] : r.lists) {
    std::vector<Offset<fs::Entry>> es;
    es.reserve(entries.size());
    for (const Fields& e : entries) es.push_back(fs::CreateEntry(b, BuildFields(b, e)));
    auto ev = b.CreateVector(es);
    lists.push_back(fs::CreateList(b, b.CreateString(name), ev));
  }
  auto lv = b.CreateVector(lists);
  return fs::CreateRecord(b, fields, lv);
}

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

Status ReadFields(const flatbuffers::Vector<Offset<fs::Value>>* in, Fields* out) {
  if (!in) return {};
  for (const fs::Value* v : *in) {
    Value val;
    if (v->kind() > 3) return Status::Internal("state: bad value kind");
    val.kind = static_cast<Value::Kind>(v->kind());
    if (val.kind == Value::Kind::kText) val.text = Str(v->text());
    if (val.kind == Value::Kind::kInt || val.kind == Value::Kind::kTime) val.number = v->number();
    out->emplace(Str(v->name()), std::move(val));
  }
  return {};
}

Status ReadRecord(const fs::Record* in, Record* out) {
  if (!in) return {};
  if (Status s = ReadFields(in->fields(), &out->fields); !s.ok()) return s;
  if (in->lists()) {
    for (const fs::List* l : *in->lists()) {
      Entries& entries = out->lists[Str(l->name())].Mutable();
      if (!l->entries()) continue;
      for (const fs::Entry* e : *l->entries()) {
        Fields f;
        if (Status s = ReadFields(e->fields(), &f); !s.ok()) return s;
        entries.push_back(std::move(f));
      }
    }
  }
  return {};
}

}  // namespace

std::string EncodeFlight(const Flight& f) { return EncodeCompactFlight(f); }

std::string EncodeFlatbufferFlight(const Flight& f) {
  FlatBufferBuilder b(512);
  auto flid = b.CreateString(f.flid);
  auto rec = BuildRecord(b, f.data);
  b.Finish(fs::CreateFlight(b, flid, rec, f.version));
  return Finish(b);
}

Result<Flight> DecodeFlight(std::string_view bytes) {
  if (IsCompactFlight(bytes)) return DecodeCompactFlight(bytes);
  std::string aligned;
  const fs::Flight* in = VerifiedRoot<fs::Flight>(bytes, &aligned);
  if (!in) return Status::Internal("state: flight record does not verify");
  Flight f;
  f.flid = Str(in->flid());
  f.version = in->version();
  if (Status s = ReadRecord(in->data(), &f.data); !s.ok()) return s;
  return f;
}

bool SameStoredFlight(std::string_view a, std::string_view b) {
  if (a == b) return true;
  if (IsCompactFlight(a) == IsCompactFlight(b)) return false;  // one form: canonical bytes
  auto x = DecodeFlight(a);
  auto y = DecodeFlight(b);
  return x.ok() && y.ok() && *x == *y;
}

Result<std::optional<MicrosSinceEpoch>> StoredFlightSodt(std::string_view bytes) {
  if (IsCompactFlight(bytes)) return CompactFlightSodt(bytes);
  std::string aligned;
  const fs::Flight* in = VerifiedRoot<fs::Flight>(bytes, &aligned);
  if (!in) return Status::Internal("state: flight record does not verify");
  if (in->data() && in->data()->fields()) {
    for (const fs::Value* v : *in->data()->fields()) {
      if (v->name() && v->name()->string_view() == "SODT") {
        if (v->kind() == static_cast<std::uint8_t>(Value::Kind::kTime)) {
          return std::optional<MicrosSinceEpoch>(v->number());
        }
        break;
      }
    }
  }
  return std::optional<MicrosSinceEpoch>();
}

std::string EncodeReference(const ReferenceRecord& r) {
  FlatBufferBuilder b(256);
  auto type = b.CreateString(r.type);
  auto key = b.CreateString(r.key);
  auto source = b.CreateString(r.source);
  auto rec = BuildRecord(b, r.data);
  b.Finish(fs::CreateReference(b, type, key, source, rec, r.version));
  return Finish(b);
}

Result<ReferenceRecord> DecodeReference(std::string_view bytes) {
  std::string aligned;
  const fs::Reference* in = VerifiedRoot<fs::Reference>(bytes, &aligned);
  if (!in) return Status::Internal("state: reference record does not verify");
  ReferenceRecord r;
  r.type = Str(in->type());
  r.key = Str(in->key());
  r.source = Str(in->source());
  r.version = in->version();
  if (Status s = ReadRecord(in->data(), &r.data); !s.ok()) return s;
  return r;
}

std::string EncodeOutcome(const Outcome& o) {
  FlatBufferBuilder b(256);
  auto st = b.CreateString(OutcomeStateName(o.state));
  auto ec = b.CreateString(o.error_class);
  auto le = b.CreateString(o.last_error);
  auto ik = b.CreateString(o.identity_key);
  auto pe = b.CreateString(o.prev_error);
  b.Finish(fs::CreateOutcome(b, o.mailbox_id, st, ec, le, ik, o.log_offset, o.attempts, pe,
                             o.message_offset, o.decided_micros));
  return Finish(b);
}

Result<Outcome> DecodeOutcome(std::string_view bytes) {
  std::string aligned;
  const fs::Outcome* in = VerifiedRoot<fs::Outcome>(bytes, &aligned);
  if (!in) return Status::Internal("state: outcome does not verify");
  Outcome o;
  o.mailbox_id = in->mailbox_id();
  if (!ParseOutcomeState(Str(in->state()), &o.state)) {
    return Status::Internal("state: bad outcome state");
  }
  o.error_class = Str(in->error_class());
  o.last_error = Str(in->last_error());
  o.identity_key = Str(in->identity_key());
  o.log_offset = in->log_offset();
  o.attempts = in->attempts();
  o.prev_error = Str(in->prev_error());
  o.message_offset = in->message_offset();
  o.decided_micros = in->decided_micros();
  return o;
}

std::string EncodeBinding(const IdentityBinding& x) {
  FlatBufferBuilder b(128);
  auto key = b.CreateString(x.key);
  auto hash =
      b.CreateVector(reinterpret_cast<const std::uint8_t*>(x.body_hash.data()), x.body_hash.size());
  b.Finish(fs::CreateBinding(b, key, x.mailbox_id, hash, x.bound_micros));
  return Finish(b);
}

Result<IdentityBinding> DecodeBinding(std::string_view bytes) {
  std::string aligned;
  const fs::Binding* in = VerifiedRoot<fs::Binding>(bytes, &aligned);
  if (!in) return Status::Internal("state: identity binding does not verify");
  IdentityBinding x;
  x.key = Str(in->key());
  x.mailbox_id = in->mailbox_id();
  if (in->body_hash()) {
    x.body_hash.assign(reinterpret_cast<const char*>(in->body_hash()->data()),
                       in->body_hash()->size());
  }
  x.bound_micros = in->bound_micros();
  return x;
}

std::string EncodeSender(const SenderSeqn& s) {
  FlatBufferBuilder b(32);
  b.Finish(fs::CreateSender(b, s.last_seqn, s.epoch));
  return Finish(b);
}

Result<SenderSeqn> DecodeSender(std::string_view bytes) {
  std::string aligned;
  const fs::Sender* in = VerifiedRoot<fs::Sender>(bytes, &aligned);
  if (!in) return Status::Internal("state: sender does not verify");
  return SenderSeqn{in->last_seqn(), in->epoch()};
}

}  // namespace msgx
