// The pure model of fold state: flights (keyed by FLID) and reference-data
// records (keyed by type and key), docs/fold.md#model.
//
// A Record is a set of named fields plus named child lists:
//   - field names are the XML element names (ALCD, FLNO, SODT, ...);
//   - a Value is null ("clear"), text, an integer or a time (UTC micros,
//     rendered in airport time);
//   - a child list (GTDT, PSDT, DELY, ...) is an ordered vector of entries,
//     each an ordered field map. The order is decided by the handler from
//     the message alone (docs/fold.md), so it is deterministic.
// Sorted maps everywhere (state/sorted_map.h: a sorted vector, cheap to copy
// whole): iteration order is the key order, so serialisation and comparison
// never depend on hashing or pointers.
//
// Canonical JSON (used by Redis and Kafka payloads and by the decision
// digest): one object, keys sorted byte-wise, fields and lists merged (a
// list named like a field is emitted after it under the same key is
// impossible by construction: handlers never use one name for both), times
// as ISO-8601 with the airport offset, no insignificant whitespace, strings
// escaped per RFC 8259 with only '"', '\\' and control characters escaped.
//
// Thread-safety: plain values.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "state/airport_zone.h"
#include "state/sorted_map.h"

namespace msgx {

struct Value {
  enum class Kind : std::uint8_t { kNull = 0, kText = 1, kInt = 2, kTime = 3 };
  Kind kind = Kind::kNull;
  std::string text;         // kText
  std::int64_t number = 0;  // kInt: the integer; kTime: UTC micros

  static Value Null() { return {}; }
  static Value Text(std::string s) { return {Kind::kText, std::move(s), 0}; }
  static Value Int(std::int64_t n) { return {Kind::kInt, {}, n}; }
  static Value Time(MicrosSinceEpoch us) { return {Kind::kTime, {}, us}; }

  bool is_null() const { return kind == Kind::kNull; }
  bool operator==(const Value&) const = default;
};

using Fields = SortedMap<Value>;
using Entries = std::vector<Fields>;

// SharedEntries: a record's child list, shared by the versions of a record
// until one of them changes it: copy on write.
//
// The fold copies a flight whole each time a message changes it
// (docs/fold.md#model, WorkingSet), and most messages change a field, not
// a list. A flight's lists (stands, gates, delays, counters) hold most of
// its allocations: one per entry. Shared, a flight's copy costs one
// reference count per list instead, and dropping the old version frees
// nothing of them (docs/performance.md#shared-lists).
//
// Reads see the entries as `const Entries&`: iteration, size, indexing,
// and comparison by content (the same list compares equal without looking
// at it). A change goes through Mutable(), which copies the entries first
// unless this holder is their only one, so no other version ever sees it.
// No entries and an empty list are the same value.
//
// Renderings kept with the entries (AppendRendering): a list's canonical
// JSON and its compact stored form are made once for the entries and kept
// with them, for every version that shares them, until Mutable() changes
// them (docs/performance.md#kept-renderings). A rendering is a pure
// function of the entries (and of a key: the zone of a JSON one), so what
// is kept is what would be made again.
//
// Thread-safety: as std::shared_ptr: holders may be copied and dropped
// on any thread; Mutable() only by the thread that owns this holder, and
// only while no other thread reads through it. AppendRendering is a read:
// two threads may render the same entries at once, and one rendering is
// kept.
class SharedEntries {
 public:
  // The renderings a list keeps, one slot each.
  enum class Rendering : std::uint8_t { kJson = 0, kCompact = 1 };

  SharedEntries() = default;
  // A list is its entries: assigning an Entries to a list takes it over.
  SharedEntries(Entries entries)  // NOLINT(google-explicit-constructor)
      : p_(entries.empty() ? nullptr : std::make_shared<Node>(std::move(entries))) {}

  const Entries& get() const { return p_ ? p_->entries : Empty(); }
  operator const Entries&() const { return get(); }  // NOLINT(google-explicit-constructor)
  Entries::const_iterator begin() const { return get().begin(); }
  Entries::const_iterator end() const { return get().end(); }
  std::size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  const Fields& operator[](std::size_t i) const { return get()[i]; }

  // The entries to change, this holder's own: copied first when another
  // holder shares them. Forgets the kept renderings.
  Entries& Mutable();

  // Appends to `out` what `render(get(), &s)` appends to an empty s. The
  // first call for these entries renders and keeps the result in the
  // `rendering` slot under `key`; later calls with the same key append the
  // kept bytes. A call with another key than the kept one renders and keeps
  // nothing. An empty list is rendered every time (it is cheap).
  template <typename Render>
  void AppendRendering(Rendering rendering, std::uint64_t key, std::string* out,
                       Render&& render) const {
    if (!p_) {
      render(Empty(), out);
      return;
    }
    if (const std::string* kept = p_->Find(rendering, key)) {
      out->append(*kept);
      return;
    }
    std::string made;
    render(p_->entries, &made);
    out->append(made);
    p_->Keep(rendering, key, std::move(made));
  }

  // True when both hold the same entries (the same list, at once).
  friend bool operator==(const SharedEntries& a, const SharedEntries& b) {
    return a.p_ == b.p_ || a.get() == b.get();
  }

 private:
  // The entries and their kept renderings, each a heap block installed once
  // (compare-and-swap from null) and freed with the node or by Forget().
  class Node {
   public:
    explicit Node(Entries e) : entries(std::move(e)) {}
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    ~Node() { Forget(); }

    const std::string* Find(Rendering rendering, std::uint64_t key) const;
    void Keep(Rendering rendering, std::uint64_t key, std::string bytes) const;
    void Forget();

    Entries entries;

   private:
    struct Kept {
      std::uint64_t key;
      std::string bytes;
    };
    mutable std::atomic<Kept*> kept_[2] = {nullptr, nullptr};
  };

  static const Entries& Empty();
  std::shared_ptr<Node> p_;  // null: no entries
};

struct Record {
  Fields fields;
  SortedMap<SharedEntries> lists;

  // The field's value, or null when absent.
  const Value& Get(std::string_view name) const;
  bool operator==(const Record&) const = default;
};

struct Flight {
  std::string flid;
  Record data;
  // Log offset of the record that last changed this flight (its "version").
  std::int64_t version = -1;

  // SODT as UTC micros when the flight has a time SODT.
  std::optional<MicrosSinceEpoch> Sodt() const;
  bool operator==(const Flight&) const = default;
};

// The source recorded for every record the fold creates from SIS messages.
inline constexpr std::string_view kAodbSource = "AODB";

struct ReferenceRecord {
  std::string type;  // ABDG, ..., or SCHS for a stored season
  std::string key;
  std::string source{kAodbSource};
  Record data;
  std::int64_t version = -1;
  bool operator==(const ReferenceRecord&) const = default;
};

// Canonical JSON renderings (see the file comment).
void AppendJsonString(std::string_view s, std::string* out);
void AppendValueJson(const Value& v, const AirportZone& zone, std::string* out);
void AppendFieldsJson(const Fields& f, const AirportZone& zone, std::string* out);
// [{…},{…}]: a child list's entries, in order.
void AppendEntriesJson(const Entries& entries, const AirportZone& zone, std::string* out);
// AppendEntriesJson of a shared list, through its kept JSON rendering for
// `zone` (SharedEntries::AppendRendering).
void AppendListJson(const SharedEntries& list, const AirportZone& zone, std::string* out);
// {"FLID":..., fields and lists merged, sorted}.
std::string FlightJson(const Flight& flight, const AirportZone& zone);
// {"fields":{...},"key":...,"source":...,"type":...}
std::string ReferenceJson(const ReferenceRecord& rec, const AirportZone& zone);
// Fields and lists of a record merged into one sorted object.
void AppendRecordJson(const Record& rec, const AirportZone& zone, std::string* out,
                      std::string_view extra_key = {}, std::string_view extra_value = {});

}  // namespace msgx
