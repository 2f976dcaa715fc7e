#include "codecs/sis_flatbuffer.h"

#include <type_traits>
#include <utility>
#include <vector>

#include "base/aligned_bytes.h"
#include "schemas/sis_message_generated.h"

namespace msgx::sis {
namespace {

namespace fb = ::msgx::fb::sis;
using Builder = flatbuffers::FlatBufferBuilder;
template <typename T>
using Off = flatbuffers::Offset<T>;

// ------------------------------------------------------------ writing ----

Off<flatbuffers::String> Str(Builder& b, const std::string& s) {
  return s.empty() ? Off<flatbuffers::String>() : b.CreateString(s);
}

fb::Presence P(Presence p) { return static_cast<fb::Presence>(static_cast<std::uint8_t>(p)); }

Off<fb::TextField> W(Builder& b, const TextField& f) {
  auto v = Str(b, f.value);
  return fb::CreateTextField(b, P(f.presence), v);
}

Off<fb::IntField> W(Builder& b, const IntField& f) {
  auto raw = Str(b, f.raw);
  return fb::CreateIntField(b, P(f.presence), f.value, raw);
}

Off<fb::TimeField> W(Builder& b, const TimeField& t) {
  auto raw = Str(b, t.raw);
  return fb::CreateTimeField(b, static_cast<fb::TimeState>(static_cast<std::uint8_t>(t.state)),
                             static_cast<fb::TimeFormat>(static_cast<std::uint8_t>(t.format)), raw,
                             t.utc_micros, t.minutes);
}

Off<flatbuffers::Vector<Off<fb::Attribute>>> W(Builder& b, const std::vector<Attribute>& attrs) {
  if (attrs.empty()) return {};
  std::vector<Off<fb::Attribute>> v;
  v.reserve(attrs.size());
  for (const Attribute& a : attrs) {
    auto n = Str(b, a.name);
    auto val = Str(b, a.value);
    v.push_back(fb::CreateAttribute(b, n, val));
  }
  return b.CreateVector(v);
}

Off<fb::Element> W(Builder& b, const Element& e);

Off<flatbuffers::Vector<Off<fb::Element>>> W(Builder& b, const std::vector<Element>& es) {
  if (es.empty()) return {};
  std::vector<Off<fb::Element>> v;
  v.reserve(es.size());
  for (const Element& e : es) v.push_back(W(b, e));
  return b.CreateVector(v);
}

Off<fb::Element> W(Builder& b, const Element& e) {
  auto children = W(b, e.children);
  auto attrs = W(b, e.attributes);
  auto name = Str(b, e.name);
  auto text = Str(b, e.text);
  auto time = e.time.state == TimeState::kMissing ? Off<fb::TimeField>() : W(b, e.time);
  return fb::CreateElement(b, name, attrs, text, children, time);
}

Off<void> Payload(Builder& b, const FlopPayload& payload) {
  return std::visit(
      [&b](const auto& p) -> Off<void> {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, TextPayload>) {
          return fb::CreateTextPayload(b, W(b, p.value)).Union();
        } else if constexpr (std::is_same_v<T, TimePayload>) {
          return fb::CreateTimePayload(b, W(b, p.value), p.reject_unparsable).Union();
        } else if constexpr (std::is_same_v<T, CharPayload>) {
          return fb::CreateCharPayload(b, W(b, p.value)).Union();
        } else if constexpr (std::is_same_v<T, IntPayload>) {
          return fb::CreateIntPayload(b, W(b, p.value)).Union();
        } else if constexpr (std::is_same_v<T, HnagPayload>) {
          auto f = W(b, p.fhag);
          auto ph = W(b, p.phag);
          auto m = W(b, p.mhag);
          return fb::CreateHnagPayload(b, f, ph, m).Union();
        } else if constexpr (std::is_same_v<T, VippPayload>) {
          auto v = W(b, p.vipp);
          auto r = W(b, p.vipr);
          return fb::CreateVippPayload(b, v, r).Union();
        } else if constexpr (std::is_same_v<T, TaopPayload>) {
          auto o = W(b, p.taop);
          auto f = W(b, p.tafl);
          auto i = W(b, p.taid);
          return fb::CreateTaopPayload(b, o, f, i).Union();
        } else if constexpr (std::is_same_v<T, ExssPayload>) {
          auto c = W(b, p.exsc);
          auto r = W(b, p.exsr);
          return fb::CreateExssPayload(b, c, r).Union();
        } else if constexpr (std::is_same_v<T, FdivPayload>) {
          auto d = W(b, p.ddes);
          auto r = W(b, p.ddir);
          auto why = W(b, p.reason);
          return fb::CreateFdivPayload(b, P(p.element), d, r, why).Union();
        } else if constexpr (std::is_same_v<T, FretPayload>) {
          auto r = W(b, p.reid);
          auto why = W(b, p.reason);
          return fb::CreateFretPayload(b, P(p.element), r, why).Union();
        } else if constexpr (std::is_same_v<T, FlabPayload>) {
          auto a = W(b, p.ares);
          auto why = W(b, p.reason);
          return fb::CreateFlabPayload(b, P(p.element), a, why).Union();
        } else if constexpr (std::is_same_v<T, PortPayload>) {
          auto t = W(b, p.potm);
          auto i = W(b, p.poid);
          return fb::CreatePortPayload(b, P(p.element), t, i).Union();
        } else if constexpr (std::is_same_v<T, ListPayload>) {
          std::vector<Off<fb::ListEntry>> entries;
          for (const ListEntry& e : p.entries) {
            auto k = W(b, e.key);
            auto el = W(b, e.element);
            entries.push_back(fb::CreateListEntry(b, k, el));
          }
          auto en = Str(b, p.element_name);
          auto kn = Str(b, p.key_name);
          auto ev = b.CreateVector(entries);
          return fb::CreateListPayload(b, en, kn, ev, p.all_blank).Union();
        } else if constexpr (std::is_same_v<T, DelyPayload>) {
          std::vector<Off<fb::DelayEntry>> entries;
          for (const DelayEntry& d : p.entries) {
            auto c = W(b, d.code);
            auto s = W(b, d.strt);
            auto du = W(b, d.dura);
            auto cm = W(b, d.comment);
            auto oa = W(b, d.other_attributes);
            entries.push_back(fb::CreateDelayEntry(b, c, s, du, cm, oa));
          }
          auto ev = b.CreateVector(entries);
          return fb::CreateDelyPayload(b, ev, p.delete_all).Union();
        } else {
          static_assert(std::is_same_v<T, FdelPayload>);
          return fb::CreateFdelPayload(b, P(p.element), p.empty).Union();
        }
      },
      payload);
}

Off<void> Body(Builder& b, const FlopBody& body) {
  std::vector<Off<fb::FlopRecord>> recs;
  for (const FlopRecord& r : body.records) {
    auto flid = Str(b, r.flid);
    auto ffid = W(b, r.ffid);
    auto payload = Payload(b, r.payload);
    auto extras = W(b, r.extras);
    recs.push_back(fb::CreateFlopRecord(b, r.index, flid, ffid,
                                        static_cast<fb::FlopPayload>(r.payload.index() + 1),
                                        payload, extras));
  }
  auto rv = b.CreateVector(recs);
  auto ex = W(b, body.extras);
  return fb::CreateFlopBody(b, rv, ex).Union();
}

Off<void> Body(Builder& b, const ScheduleBody& body) {
  std::vector<Off<fb::ScheduleRecord>> recs;
  for (const ScheduleRecord& r : body.records) {
    auto flid = W(b, r.flid);
    auto sodt = W(b, r.sodt);
    auto attrs = W(b, r.attributes);
    auto fields = W(b, r.fields);
    auto missing = r.missing_required.empty() ? Off<flatbuffers::Vector<Off<flatbuffers::String>>>()
                                              : b.CreateVectorOfStrings(r.missing_required);
    recs.push_back(fb::CreateScheduleRecord(b, r.index, flid, sodt, attrs, fields, missing));
  }
  auto recs_f = W(b, body.recs);
  auto snam = W(b, body.snam);
  auto apcd = W(b, body.apcd);
  auto sdat = W(b, body.sdat);
  auto edat = W(b, body.edat);
  auto rv = b.CreateVector(recs);
  auto ex = W(b, body.extras);
  return fb::CreateScheduleBody(b, body.seasonal, recs_f, body.recs_mismatch, snam, apcd, sdat,
                                edat, rv, ex)
      .Union();
}

Off<void> Body(Builder& b, const ReferenceBody& body) {
  std::vector<Off<fb::ReferenceRecord>> recs;
  for (const ReferenceRecord& r : body.records) {
    auto kn = Str(b, r.key_name);
    auto k = Str(b, r.key);
    auto attrs = W(b, r.attributes);
    auto fields = W(b, r.fields);
    recs.push_back(fb::CreateReferenceRecord(b, r.index, kn, k, attrs, fields));
  }
  auto type = Str(b, body.type);
  auto recs_f = W(b, body.recs);
  auto rv = b.CreateVector(recs);
  auto ex = W(b, body.extras);
  return fb::CreateReferenceBody(b, type, recs_f, body.recs_mismatch, rv, ex).Union();
}

// ------------------------------------------------------------ reading ----

std::string S(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

Presence R(fb::Presence p) { return static_cast<Presence>(static_cast<std::uint8_t>(p)); }

TextField R(const fb::TextField* f) {
  TextField out;
  if (f == nullptr) return out;
  out.presence = R(f->presence());
  out.value = S(f->value());
  return out;
}

IntField R(const fb::IntField* f) {
  IntField out;
  if (f == nullptr) return out;
  out.presence = R(f->presence());
  out.value = f->value();
  out.raw = S(f->raw());
  return out;
}

TimeField R(const fb::TimeField* t) {
  TimeField out;
  if (t == nullptr) return out;
  out.state = static_cast<TimeState>(static_cast<std::uint8_t>(t->state()));
  out.format = static_cast<TimeFormat>(static_cast<std::uint8_t>(t->format()));
  out.raw = S(t->raw());
  out.utc_micros = t->utc_micros();
  out.minutes = t->minutes();
  return out;
}

std::vector<Attribute> R(const flatbuffers::Vector<Off<fb::Attribute>>* v) {
  std::vector<Attribute> out;
  if (v == nullptr) return out;
  for (const fb::Attribute* a : *v) out.push_back({S(a->name()), S(a->value())});
  return out;
}

Element R(const fb::Element* e);

std::vector<Element> R(const flatbuffers::Vector<Off<fb::Element>>* v) {
  std::vector<Element> out;
  if (v == nullptr) return out;
  out.reserve(v->size());
  for (const fb::Element* e : *v) out.push_back(R(e));
  return out;
}

Element R(const fb::Element* e) {
  Element out;
  if (e == nullptr) return out;
  out.name = S(e->name());
  out.attributes = R(e->attributes());
  out.text = S(e->text());
  out.children = R(e->children());
  out.time = R(e->time());
  return out;
}

Result<FlopPayload> ReadPayload(const fb::FlopRecord* r) {
  switch (r->payload_type()) {
    case fb::FlopPayload::TextPayload:
      return FlopPayload(TextPayload{R(r->payload_as_TextPayload()->value())});
    case fb::FlopPayload::TimePayload: {
      auto* p = r->payload_as_TimePayload();
      return FlopPayload(TimePayload{R(p->value()), p->reject_unparsable()});
    }
    case fb::FlopPayload::CharPayload:
      return FlopPayload(CharPayload{R(r->payload_as_CharPayload()->value())});
    case fb::FlopPayload::IntPayload:
      return FlopPayload(IntPayload{R(r->payload_as_IntPayload()->value())});
    case fb::FlopPayload::HnagPayload: {
      auto* p = r->payload_as_HnagPayload();
      return FlopPayload(HnagPayload{R(p->fhag()), R(p->phag()), R(p->mhag())});
    }
    case fb::FlopPayload::VippPayload: {
      auto* p = r->payload_as_VippPayload();
      return FlopPayload(VippPayload{R(p->vipp()), R(p->vipr())});
    }
    case fb::FlopPayload::TaopPayload: {
      auto* p = r->payload_as_TaopPayload();
      return FlopPayload(TaopPayload{R(p->taop()), R(p->tafl()), R(p->taid())});
    }
    case fb::FlopPayload::ExssPayload: {
      auto* p = r->payload_as_ExssPayload();
      return FlopPayload(ExssPayload{R(p->exsc()), R(p->exsr())});
    }
    case fb::FlopPayload::FdivPayload: {
      auto* p = r->payload_as_FdivPayload();
      return FlopPayload(FdivPayload{R(p->element()), R(p->ddes()), R(p->ddir()), R(p->reason())});
    }
    case fb::FlopPayload::FretPayload: {
      auto* p = r->payload_as_FretPayload();
      return FlopPayload(FretPayload{R(p->element()), R(p->reid()), R(p->reason())});
    }
    case fb::FlopPayload::FlabPayload: {
      auto* p = r->payload_as_FlabPayload();
      return FlopPayload(FlabPayload{R(p->element()), R(p->ares()), R(p->reason())});
    }
    case fb::FlopPayload::PortPayload: {
      auto* p = r->payload_as_PortPayload();
      return FlopPayload(PortPayload{R(p->element()), R(p->potm()), R(p->poid())});
    }
    case fb::FlopPayload::ListPayload: {
      auto* p = r->payload_as_ListPayload();
      ListPayload out;
      out.element_name = S(p->element_name());
      out.key_name = S(p->key_name());
      out.all_blank = p->all_blank();
      if (p->entries() != nullptr) {
        for (const fb::ListEntry* e : *p->entries()) {
          out.entries.push_back(ListEntry{R(e->key()), R(e->element())});
        }
      }
      return FlopPayload(std::move(out));
    }
    case fb::FlopPayload::DelyPayload: {
      auto* p = r->payload_as_DelyPayload();
      DelyPayload out;
      out.delete_all = p->delete_all();
      if (p->entries() != nullptr) {
        for (const fb::DelayEntry* d : *p->entries()) {
          out.entries.push_back(DelayEntry{R(d->code()), R(d->strt()), R(d->dura()),
                                           R(d->comment()), R(d->other_attributes())});
        }
      }
      return FlopPayload(std::move(out));
    }
    case fb::FlopPayload::FdelPayload: {
      auto* p = r->payload_as_FdelPayload();
      return FlopPayload(FdelPayload{R(p->element()), p->empty()});
    }
    case fb::FlopPayload::NONE:
      break;
  }
  return Status::CodecError("cached decode: FLOP record without a payload");
}

}  // namespace

std::string ToFlatbuffer(const DecodedMessage& message) {
  Builder b(1024);
  const Meta& m = message.meta;
  auto sndr = Str(b, m.sndr);
  auto seqn = Str(b, m.seqn);
  auto dttm = Str(b, m.dttm);
  auto type = Str(b, m.type);
  auto styp = Str(b, m.styp);
  auto extra = W(b, m.extra);
  auto meta = fb::CreateMeta(b, sndr, seqn, m.seqn_number.has_value(), m.seqn_number.value_or(0),
                             dttm, m.dttm_utc_micros, type, styp, extra);
  auto body = std::visit([&b](const auto& x) { return Body(b, x); }, message.body);
  auto root = fb::CreateDecodedMessage(
      b, kCodecVersion, meta, static_cast<fb::MessageBody>(message.body.index() + 1), body);
  fb::FinishDecodedMessageBuffer(b, root);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

Result<DecodedMessage> FromFlatbuffer(std::string_view bytes) {
  std::string aligned;
  bytes = AlignedBytes(bytes, &aligned);
  flatbuffers::Verifier verifier(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(),
                                 /*max_depth=*/128, /*max_tables=*/10'000'000);
  if (!fb::VerifyDecodedMessageBuffer(verifier)) {
    return Status::CodecError("cached decode: not a valid sis_message buffer");
  }
  const fb::DecodedMessage* root = fb::GetDecodedMessage(bytes.data());
  if (root->codec_version() != kCodecVersion) {
    return Status::CodecError("cached decode: codec version " +
                              std::to_string(root->codec_version()) + ", expected " +
                              std::to_string(kCodecVersion));
  }
  DecodedMessage out;
  if (const fb::Meta* m = root->meta()) {
    out.meta.sndr = S(m->sndr());
    out.meta.seqn = S(m->seqn());
    if (m->has_seqn_number()) out.meta.seqn_number = m->seqn_number();
    out.meta.dttm = S(m->dttm());
    out.meta.dttm_utc_micros = m->dttm_utc_micros();
    out.meta.type = S(m->type());
    out.meta.styp = S(m->styp());
    out.meta.extra = R(m->extra());
  }
  switch (root->body_type()) {
    case fb::MessageBody::FlopBody: {
      const fb::FlopBody* fbody = root->body_as_FlopBody();
      FlopBody body;
      if (fbody->records() != nullptr) {
        for (const fb::FlopRecord* r : *fbody->records()) {
          Result<FlopPayload> payload = ReadPayload(r);
          if (!payload.ok()) return payload.status();
          body.records.push_back(FlopRecord{r->index(), S(r->flid()), R(r->ffid()),
                                            std::move(payload).value(), R(r->extras())});
        }
      }
      body.extras = R(fbody->extras());
      out.body = std::move(body);
      break;
    }
    case fb::MessageBody::ScheduleBody: {
      const fb::ScheduleBody* s = root->body_as_ScheduleBody();
      ScheduleBody body;
      body.seasonal = s->seasonal();
      body.recs = R(s->recs());
      body.recs_mismatch = s->recs_mismatch();
      body.snam = R(s->snam());
      body.apcd = R(s->apcd());
      body.sdat = R(s->sdat());
      body.edat = R(s->edat());
      if (s->records() != nullptr) {
        for (const fb::ScheduleRecord* r : *s->records()) {
          ScheduleRecord rec;
          rec.index = r->index();
          rec.flid = R(r->flid());
          rec.sodt = R(r->sodt());
          rec.attributes = R(r->attributes());
          rec.fields = R(r->fields());
          if (r->missing_required() != nullptr) {
            for (const flatbuffers::String* m : *r->missing_required()) {
              rec.missing_required.push_back(S(m));
            }
          }
          body.records.push_back(std::move(rec));
        }
      }
      body.extras = R(s->extras());
      out.body = std::move(body);
      break;
    }
    case fb::MessageBody::ReferenceBody: {
      const fb::ReferenceBody* rb = root->body_as_ReferenceBody();
      ReferenceBody body;
      body.type = S(rb->type());
      body.recs = R(rb->recs());
      body.recs_mismatch = rb->recs_mismatch();
      if (rb->records() != nullptr) {
        for (const fb::ReferenceRecord* r : *rb->records()) {
          body.records.push_back(ReferenceRecord{r->index(), S(r->key_name()), S(r->key()),
                                                 R(r->attributes()), R(r->fields())});
        }
      }
      body.extras = R(rb->extras());
      out.body = std::move(body);
      break;
    }
    case fb::MessageBody::NONE:
      return Status::CodecError("cached decode: no body");
  }
  return out;
}

}  // namespace msgx::sis
