#include "stream/fold/state_overlay.h"

#include <set>

namespace msgx {

Result<std::optional<Flight>> StateOverlay::GetFlight(std::string_view flid) const {
  auto f = FindFlight(flid);
  if (!f.ok()) return f.status();
  if (!*f) return std::optional<Flight>();
  return std::optional<Flight>(**f);
}

Result<std::shared_ptr<const Flight>> StateOverlay::FindFlight(std::string_view flid) const {
  if (auto it = pending_.flights.find(std::string(flid)); it != pending_.flights.end()) {
    return it->second;
  }
  if (!base_) return std::shared_ptr<const Flight>();
  if (auto cached = committed_flights_.Find(flid)) return *std::move(cached);
  auto stored = base_->GetFlight(flid);
  if (!stored.ok()) return stored.status();
  std::shared_ptr<const Flight> f;
  if (*stored) f = std::make_shared<const Flight>(std::move(**stored));
  committed_flights_.Put(flid, f);
  return f;
}

void StateOverlay::Committed(const BatchWrite& write) {
  for (const auto& [flid, f] : write.flights) committed_flights_.Put(flid, f);
}

Result<std::vector<std::string>> StateOverlay::FlightsBySodt(MicrosSinceEpoch from,
                                                             MicrosSinceEpoch to) const {
  std::set<std::string> out;
  if (base_) {
    auto b = base_->FlightsBySodt(from, to);
    if (!b.ok()) return b.status();
    for (std::string& f : *b) {
      if (!pending_.flights.count(f)) out.insert(std::move(f));
    }
  }
  for (const auto& [flid, f] : pending_.flights) {
    if (!f) continue;
    auto sodt = f->Sodt();
    if (sodt && *sodt >= from && *sodt <= to) out.insert(flid);
  }
  return std::vector<std::string>(out.begin(), out.end());
}

Result<std::optional<ReferenceRecord>> StateOverlay::GetReference(std::string_view type,
                                                                  std::string_view key) const {
  auto it = pending_.references.find({std::string(type), std::string(key)});
  if (it != pending_.references.end()) return it->second;
  if (!base_) return std::optional<ReferenceRecord>();
  return base_->GetReference(type, key);
}

Result<std::vector<std::string>> StateOverlay::ReferenceKeys(std::string_view type) const {
  std::set<std::string> out;
  if (base_) {
    auto b = base_->ReferenceKeys(type);
    if (!b.ok()) return b.status();
    out.insert(b->begin(), b->end());
  }
  const std::string t(type);
  for (auto it = pending_.references.lower_bound({t, std::string()});
       it != pending_.references.end() && it->first.first == t; ++it) {
    if (it->second) {
      out.insert(it->first.second);
    } else {
      out.erase(it->first.second);
    }
  }
  return std::vector<std::string>(out.begin(), out.end());
}

Result<std::optional<IdentityBinding>> StateOverlay::GetBinding(const std::string& key) const {
  if (auto it = pending_.bindings.find(key); it != pending_.bindings.end()) return it->second;
  if (!base_) return std::optional<IdentityBinding>();
  return base_->GetBinding(key);
}

Result<std::optional<SenderSeqn>> StateOverlay::GetSender(const std::string& sndr) const {
  if (auto it = pending_.senders.find(sndr); it != pending_.senders.end()) {
    return std::optional<SenderSeqn>(it->second);
  }
  if (!base_) return std::optional<SenderSeqn>();
  return base_->GetSender(sndr);
}

Result<std::optional<Outcome>> StateOverlay::GetOutcome(std::int64_t mailbox_id) const {
  if (auto it = pending_.outcomes.find(mailbox_id); it != pending_.outcomes.end()) {
    return std::optional<Outcome>(it->second);
  }
  if (!base_) return std::optional<Outcome>();
  return base_->GetOutcome(mailbox_id);
}

void StateOverlay::Apply(const Decision& d) {
  for (const FlightChange& c : d.flights) {
    pending_.flights[c.flid] = c.op == ChangeOp::kUpsert ? c.flight : nullptr;
  }
  for (const ReferenceChange& c : d.references) {
    if (c.op == ChangeOp::kUpsert) {
      pending_.references[{c.type, c.key}] = c.record;
    } else {
      pending_.references[{c.type, c.key}] = std::nullopt;
    }
  }
}

void StateOverlay::PutBinding(IdentityBinding b) {
  std::string key = b.key;
  pending_.bindings[std::move(key)] = std::move(b);
}

void StateOverlay::DeleteBinding(const std::string& key) { pending_.bindings[key] = std::nullopt; }

void StateOverlay::PutSender(const std::string& sndr, SenderSeqn s) { pending_.senders[sndr] = s; }

void StateOverlay::PutOutcome(Outcome o) {
  const std::int64_t id = o.mailbox_id;
  pending_.outcomes[id] = std::move(o);
}

BatchWrite StateOverlay::TakeBatch(const StateMeta& meta) {
  BatchWrite out = std::move(pending_);
  pending_ = BatchWrite();
  out.meta = meta;
  // The cache holds only committed state, so where it knows a flight it
  // knows the SODT the store indexes it under: the commit need not read
  // the flight back for it.
  for (const auto& [flid, f] : out.flights) {
    if (auto cached = committed_flights_.Find(flid)) {
      out.old_sodts.emplace(flid, *cached ? (*cached)->Sodt() : std::nullopt);
    }
  }
  return out;
}

}  // namespace msgx
