// WorkingSet: a handler's private view of the flights and reference records
// it has already changed within one message, layered over the StateView, so
// that a message with two records for one flight sees its own first change.
// It also turns "before → after" into the Decision's change entries,
// emitting nothing when nothing changed (unchanged ⇒ no event:
// docs/fold.md#decision).
//
// Thread-safety: single-threaded; lives for one decide() call.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "codecs/sis_message.h"
#include "state/state_view.h"
#include "stream/fold/handlers/decision.h"

namespace msgx {

class WorkingSet {
 public:
  WorkingSet(const StateView& view, Decision* decision, std::int64_t offset)
      : view_(view), decision_(decision), offset_(offset) {}

  // The flight as of this message so far; nullptr when absent. The pointer
  // is valid until the next call that changes this flight.
  Result<const Flight*> FindFlight(const std::string& flid);
  // A copy of it; nullopt when absent.
  Result<std::optional<Flight>> GetFlight(const std::string& flid);
  // Sorted FLIDs whose SODT is in [from, to], including this message's
  // changes so far.
  Result<std::vector<std::string>> FlightsBySodt(MicrosSinceEpoch from, MicrosSinceEpoch to);
  // Records an upsert of `after` (before = current state); no-op when equal.
  // Returns true when something changed.
  Result<bool> PutFlight(Flight after);
  // Records a delete; no-op when absent.
  Result<bool> DeleteFlight(const std::string& flid, const std::string& cause);

  Result<std::optional<ReferenceRecord>> GetReference(const std::string& type,
                                                      const std::string& key);
  Result<std::vector<std::string>> ReferenceKeys(const std::string& type);
  Result<bool> PutReference(ReferenceRecord after);
  Result<bool> DeleteReference(const std::string& type, const std::string& key);

 private:
  const StateView& view_;
  Decision* decision_;
  std::int64_t offset_;
  // Flights read or changed by this message (nullptr: absent/deleted).
  std::map<std::string, std::shared_ptr<const Flight>> flights_;
  std::map<std::pair<std::string, std::string>, std::optional<ReferenceRecord>> refs_;
};

// Element → Value: a parsed time (kHhmm ⇒ integer minutes); MAXP FHAG PHAG
// MHAG as integers; else the text;
// empty text ⇒ null.
Value ElementValue(const sis::Element& e);
// An entry (list element) as an ordered field map: attributes, then
// children; a repeated child name gets "#2", "#3", ... suffixes; a child
// with children of its own is flattened as "CHILD.GRANDCHILD".
Fields EntryFields(const sis::Element& e);
// Adds the children of a record (FLTR, reference record) to `rec`: a leaf
// child without attributes becomes a field (null ⇒ not stored), anything
// else an entry of the list named like it. `skip` names are left out.
void AddRecordChildren(const std::vector<sis::Element>& children, Record* rec,
                       std::string_view skip1 = {}, std::string_view skip2 = {});
// Stores `v` under `name`, or erases the field when v is null.
void SetField(Record* rec, const std::string& name, Value v);

}  // namespace msgx
