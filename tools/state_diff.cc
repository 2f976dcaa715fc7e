#include "tools/state_diff.h"

#include <set>

#include "state/flight.h"
#include "state/state_codec.h"

namespace msgx::app {
namespace {

// Appends "  NAME: old -> new" for every name of `a` or `b` whose value
// differs; `render(value, &s)` writes one value, "(none)" stands for absent.
template <typename Map, typename Render>
void AppendMapChanges(const Map& a, const Map& b, const Render& render, std::string* out) {
  std::set<std::string_view> names;
  for (const auto& [n, v] : a) names.insert(n);
  for (const auto& [n, v] : b) names.insert(n);
  auto shown = [&](const Map& m, std::string_view n) {
    auto it = m.find(n);
    if (it == m.end()) return std::string("(none)");
    std::string s;
    render(it->second, &s);
    return s;
  };
  for (std::string_view n : names) {
    auto x = a.find(n);
    auto y = b.find(n);
    if (x != a.end() && y != b.end() && x->second == y->second) continue;
    out->append("  ").append(n).append(": ");
    out->append(shown(a, n)).append(" -> ").append(shown(b, n)).append("\n");
  }
}

// The changed fields, then the changed lists, of `a` (live) against `b`
// (refold).
std::string RecordChanges(const Record& a, const Record& b, const AirportZone& zone) {
  std::string out;
  AppendMapChanges(
      a.fields, b.fields, [&](const Value& v, std::string* s) { AppendValueJson(v, zone, s); },
      &out);
  AppendMapChanges(
      a.lists, b.lists, [&](const Entries& e, std::string* s) { AppendEntriesJson(e, zone, s); },
      &out);
  return out;
}

template <typename T>
Result<std::optional<T>> DecodeSide(std::optional<std::string_view> bytes,
                                    Result<T> (*decode)(std::string_view)) {
  if (!bytes) return std::optional<T>();
  auto v = decode(*bytes);
  if (!v.ok()) return v.status();
  return std::optional<T>(std::move(*v));
}

}  // namespace

Status DiffEntries(const StateStore& a, const StateStore& b, const EntryDiffVisitor& visit,
                   std::size_t first_cf, std::size_t end_cf) {
  auto x = a.NewEntryCursor(first_cf, end_cf);
  auto y = b.NewEntryCursor(first_cf, end_cf);
  for (;;) {
    if (!x->status().ok()) return x->status();
    if (!y->status().ok()) return y->status();
    if (!x->Valid() && !y->Valid()) return Status::Ok();
    int order = 0;  // <0: only a has this entry; >0: only b; 0: both
    if (!x->Valid()) {
      order = 1;
    } else if (!y->Valid()) {
      order = -1;
    } else if (x->cf_index() != y->cf_index()) {
      order = x->cf_index() < y->cf_index() ? -1 : 1;
    } else {
      order = x->key().compare(y->key());
    }
    bool more = true;
    if (order < 0) {
      more = visit(x->cf(), x->key(), x->value(), std::nullopt);
      x->Next();
    } else if (order > 0) {
      more = visit(y->cf(), y->key(), std::nullopt, y->value());
      y->Next();
    } else {
      // A flight may be stored in either of two forms (state/state_codec.h).
      const bool same = x->value() == y->value() ||
                        (x->cf() == "flights" && SameStoredFlight(x->value(), y->value()));
      if (!same) more = visit(x->cf(), x->key(), x->value(), y->value());
      x->Next();
      y->Next();
    }
    if (!more) return Status::Ok();
  }
}

std::string DescribeOutcome(const Outcome& o) {
  return std::string(OutcomeStateName(o.state)) +
         (o.error_class.empty() ? "" : " " + o.error_class) +
         (o.last_error.empty() ? "" : " (" + o.last_error + ")") + " at offset " +
         std::to_string(o.log_offset);
}

Result<UpgradeDiffCounts> WriteUpgradeDiff(const StateStore& live, const StateStore& refold,
                                           const AirportZone& zone, std::ostream& out) {
  UpgradeDiffCounts counts;
  Status failed;
  Status walked = DiffEntries(
      live, refold,
      [&](std::string_view cf, std::string_view, std::optional<std::string_view> a,
          std::optional<std::string_view> b) {
        if (cf == "outcomes") {
          auto old_o = DecodeSide(a, &DecodeOutcome);
          auto new_o = DecodeSide(b, &DecodeOutcome);
          if (!old_o.ok() || !new_o.ok()) {
            failed = !old_o.ok() ? old_o.status() : new_o.status();
            return false;
          }
          const Outcome& any = *old_o ? **old_o : **new_o;
          out << "message " << any.mailbox_id << " (offset " << any.message_offset
              << "): " << (*old_o ? DescribeOutcome(**old_o) : "(none)") << " -> "
              << (*new_o ? DescribeOutcome(**new_o) : "(none)") << "\n";
          ++counts.messages;
        } else if (cf == "flights") {
          auto old_f = DecodeSide(a, &DecodeFlight);
          auto new_f = DecodeSide(b, &DecodeFlight);
          if (!old_f.ok() || !new_f.ok()) {
            failed = !old_f.ok() ? old_f.status() : new_f.status();
            return false;
          }
          const std::string changes = RecordChanges(*old_f ? (*old_f)->data : Record{},
                                                    *new_f ? (*new_f)->data : Record{}, zone);
          if (changes.empty()) return true;  // only the version moved
          const Flight& any = *old_f ? **old_f : **new_f;
          out << "flight " << any.flid << (*old_f ? "" : " (only in the refold)")
              << (*new_f ? "" : " (only live)") << "\n"
              << changes;
          ++counts.flights;
        } else if (cf == "reference") {
          auto old_r = DecodeSide(a, &DecodeReference);
          auto new_r = DecodeSide(b, &DecodeReference);
          if (!old_r.ok() || !new_r.ok()) {
            failed = !old_r.ok() ? old_r.status() : new_r.status();
            return false;
          }
          const std::string changes = RecordChanges(*old_r ? (*old_r)->data : Record{},
                                                    *new_r ? (*new_r)->data : Record{}, zone);
          if (changes.empty()) return true;
          const ReferenceRecord& any = *old_r ? **old_r : **new_r;
          out << "reference " << any.type << " " << any.key
              << (*old_r ? "" : " (only in the refold)") << (*new_r ? "" : " (only live)") << "\n"
              << changes;
          ++counts.references;
        }
        return true;
      });
  if (!walked.ok()) return walked;
  if (!failed.ok()) return failed;
  return counts;
}

}  // namespace msgx::app
