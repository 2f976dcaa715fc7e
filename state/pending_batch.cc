#include "state/pending_batch.h"

#include <flatbuffers/flatbuffers.h>

#include <unordered_map>

#include "schemas/pending_generated.h"
#include "state/verified_root.h"

namespace msgx {
namespace {

namespace fp = ::msgx::fbpending;

using flatbuffers::FlatBufferBuilder;

Status Corrupt() { return Status::Internal("pending batch: corrupt record"); }

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

template <typename T, typename F>
auto BuildVector(FlatBufferBuilder& b, const std::vector<T>& in, F build) {
  std::vector<decltype(build(in.front()))> out;
  out.reserve(in.size());
  for (const T& x : in) out.push_back(build(x));
  return b.CreateVector(out);
}

// The encoded size, roughly from above: the strings and a fixed cost per
// row, so the builder grows its buffer (copying it) rarely, if ever.
std::size_t EstimatedSize(const PendingBatch& p) {
  std::size_t n = 1024;
  for (const OutcomeRow& r : p.outcomes) {
    const Outcome& o = r.outcome;
    n += 160 + o.error_class.size() + o.last_error.size() + o.identity_key.size() +
         o.prev_error.size();
  }
  for (const EventRow& e : p.events) {
    n += 128 + e.event_key.size() + e.target.size() + e.partition_key.size() + e.event_type.size() +
         e.payload_json.size();
  }
  for (const ReferenceRow& r : p.references) {
    n += 128 + r.rtype.size() + r.rkey.size() + r.payload_json.size() + r.source.size();
  }
  for (const HistoryRow& h : p.history) {
    n +=
        160 + h.flid.size() + h.alcd.size() + h.flno.size() + h.mvin.size() + h.payload_json.size();
  }
  // Flight rows' JSON mostly points into an event (Build): not counted.
  for (const FlightRow& f : p.flights) n += 64 + f.flid.size();
  return n;
}

// Builds `p` into `b`, which is empty.
void Build(const PendingBatch& p, FlatBufferBuilder& b) {
  auto outcomes = BuildVector(b, p.outcomes, [&](const OutcomeRow& r) {
    const Outcome& o = r.outcome;
    return fp::CreateOutcomeRow(
        b, o.mailbox_id, b.CreateString(OutcomeStateName(o.state)), b.CreateString(o.error_class),
        b.CreateString(o.last_error), b.CreateString(o.identity_key), o.log_offset, o.attempts,
        b.CreateString(o.prev_error), o.decided_micros, r.received_micros, r.enqueued_micros);
  });
  auto events = BuildVector(b, p.events, [&](const EventRow& e) {
    return fp::CreateEventRow(b, b.CreateString(e.event_key), b.CreateString(e.target),
                              b.CreateString(e.partition_key), b.CreateString(e.event_type),
                              e.state_version, b.CreateString(e.payload_json), e.source_msg_id,
                              e.created_micros);
  });
  auto refs = BuildVector(b, p.references, [&](const ReferenceRow& r) {
    return fp::CreateReferenceRow(b, b.CreateString(r.rtype), b.CreateString(r.rkey), r.deleted,
                                  b.CreateString(r.payload_json), b.CreateString(r.source),
                                  r.state_version, r.refreshed_micros);
  });
  auto history = BuildVector(b, p.history, [&](const HistoryRow& h) {
    return fp::CreateHistoryRow(b, b.CreateString(h.flid), h.state_version, b.CreateString(h.alcd),
                                b.CreateString(h.flno), b.CreateString(h.mvin), h.sodt.has_value(),
                                h.sodt.value_or(0), b.CreateString(h.payload_json), h.swept_micros);
  });
  // A flight's JSON is nearly always inside the payload of its last event
  // in the batch: the row then points there instead of holding a copy.
  std::unordered_map<std::string_view, std::size_t> last_event;
  last_event.reserve(p.events.size());
  for (std::size_t i = 0; i < p.events.size(); ++i) last_event[p.events[i].partition_key] = i;
  auto flights = BuildVector(b, p.flights, [&](const FlightRow& f) {
    if (f.json) {
      if (auto e = last_event.find(f.flid); e != last_event.end()) {
        const std::string& payload = p.events[e->second].payload_json;
        if (const std::size_t at = payload.find(*f.json); at != std::string::npos) {
          return fp::CreateFlightRow(
              b, b.CreateString(f.flid), false, 0, static_cast<std::int32_t>(e->second),
              static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(f.json->size()));
        }
      }
    }
    return fp::CreateFlightRow(b, b.CreateString(f.flid), !f.json.has_value(),
                               b.CreateString(f.json.value_or("")));
  });
  auto digest =
      b.CreateVector(reinterpret_cast<const std::uint8_t*>(p.digest.data()), p.digest.size());
  b.Finish(fp::CreateBatch(b, p.first_offset, p.last_offset, p.fold_version, p.generation, digest,
                           p.last_append_micros, outcomes, events, refs, history, flights));
}

}  // namespace

std::string EncodePendingBatch(const PendingBatch& p) {
  FlatBufferBuilder b(EstimatedSize(p));
  Build(p, b);
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

struct PendingBatchEncoder::Buffer {
  FlatBufferBuilder builder{1 << 20};
};

PendingBatchEncoder::PendingBatchEncoder() : buffer_(std::make_unique<Buffer>()) {}
PendingBatchEncoder::~PendingBatchEncoder() = default;

std::string_view PendingBatchEncoder::Encode(const PendingBatch& p) {
  FlatBufferBuilder& b = buffer_->builder;
  b.Clear();  // keeps the buffer
  Build(p, b);
  return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
}

Result<std::pair<std::int64_t, std::int64_t>> PendingBatchRange(std::string_view bytes) {
  std::string aligned;
  const fp::Batch* in = VerifiedRoot<fp::Batch>(bytes, &aligned);
  if (in == nullptr) return Corrupt();
  return std::make_pair(in->first_offset(), in->last_offset());
}

Result<MicrosSinceEpoch> PendingBatchLastAppend(std::string_view bytes) {
  std::string aligned;
  const fp::Batch* in = VerifiedRoot<fp::Batch>(bytes, &aligned);
  if (in == nullptr) return Corrupt();
  return in->last_append_micros();
}

Result<PendingBatch> DecodePendingBatch(std::string_view bytes) {
  std::string aligned;
  const fp::Batch* in = VerifiedRoot<fp::Batch>(bytes, &aligned);
  if (in == nullptr) return Corrupt();
  PendingBatch p;
  p.first_offset = in->first_offset();
  p.last_offset = in->last_offset();
  p.fold_version = in->fold_version();
  p.generation = in->generation();
  if (in->digest()) p.digest.assign(in->digest()->begin(), in->digest()->end());
  p.last_append_micros = in->last_append_micros();
  if (in->outcomes()) {
    for (const fp::OutcomeRow* r : *in->outcomes()) {
      OutcomeRow row;
      Outcome& o = row.outcome;
      o.mailbox_id = r->mailbox_id();
      if (!ParseOutcomeState(Str(r->state()), &o.state)) {
        return Status::Internal("pending batch: bad outcome state " + Str(r->state()));
      }
      o.error_class = Str(r->error_class());
      o.last_error = Str(r->last_error());
      o.identity_key = Str(r->identity_key());
      o.log_offset = r->log_offset();
      o.attempts = r->attempts();
      o.prev_error = Str(r->prev_error());
      o.decided_micros = r->decided_micros();
      row.received_micros = r->received_micros();
      row.enqueued_micros = r->enqueued_micros();
      p.outcomes.push_back(std::move(row));
    }
  }
  if (in->events()) {
    for (const fp::EventRow* e : *in->events()) {
      p.events.push_back({Str(e->event_key()), Str(e->target()), Str(e->partition_key()),
                          Str(e->event_type()), e->state_version(), Str(e->payload_json()),
                          e->source_msg_id(), e->created_micros()});
    }
  }
  if (in->references()) {
    for (const fp::ReferenceRow* r : *in->references()) {
      p.references.push_back({Str(r->rtype()), Str(r->rkey()), r->deleted(), Str(r->payload_json()),
                              Str(r->source()), r->state_version(), r->refreshed_micros()});
    }
  }
  if (in->history()) {
    for (const fp::HistoryRow* h : *in->history()) {
      HistoryRow row{Str(h->flid()), h->state_version(), Str(h->alcd()),         Str(h->flno()),
                     Str(h->mvin()), std::nullopt,       Str(h->payload_json()), h->swept_micros()};
      if (h->has_sodt()) row.sodt = h->sodt_micros();
      p.history.push_back(std::move(row));
    }
  }
  if (in->flights()) {
    for (const fp::FlightRow* f : *in->flights()) {
      FlightRow row{Str(f->flid()), std::nullopt};
      if (f->json_event() >= 0) {
        const auto e = static_cast<std::size_t>(f->json_event());
        if (e >= p.events.size() || f->json_at() > p.events[e].payload_json.size() ||
            f->json_size() > p.events[e].payload_json.size() - f->json_at()) {
          return Status::Internal("pending batch: flight row " + row.flid +
                                  " points outside its event");
        }
        row.json = p.events[e].payload_json.substr(f->json_at(), f->json_size());
      } else if (!f->deleted()) {
        row.json = Str(f->json());
      }
      p.flights.push_back(std::move(row));
    }
  }
  return p;
}

}  // namespace msgx
