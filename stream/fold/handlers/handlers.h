// Pure handlers: decide(view, message, context) → Decision (docs/fold.md).
//
// A handler reads state only through the StateView, and uses only the
// message and the DecideContext: no clock, no randomness, no I/O, no
// unordered iteration. Same view + message + context ⇒ same Decision.
//
// Errors: a non-OK Result is either kInfra (a view read failed: the fold
// stalls and retries; nothing is charged to the message), or a message
// class (kUnsupported: no handler for TYPE/STYP; kMalformed: the message is
// missing something the handler needs that the decoder does not enforce).
//
// Thread-safety: free functions; a context and view used by one thread.
#pragma once

#include "base/result.h"
#include "codecs/sis_message.h"
#include "state/airport_zone.h"
#include "state/state_view.h"
#include "stream/fold/handlers/decision.h"

namespace msgx {

struct DecideContext {
  MicrosSinceEpoch now_micros = 0;  // the log record's append time (the clock)
  std::int64_t offset = 0;          // the log offset: the version of changes
  const AirportZone* zone = nullptr;
  bool snapshot_clear_missing = false;  // schd.snapshot-missing-fields: clear
};

// Routes by TYPE/STYP to the handlers below.
Result<Decision> Decide(const StateView& view, const sis::DecodedMessage& msg,
                        const DecideContext& ctx);
// Decide's signature: the fold calls one of these per message.
using DecideFn = Result<Decision> (*)(const StateView& view, const sis::DecodedMessage& msg,
                                      const DecideContext& ctx);

Result<Decision> DecideFlop(const StateView& view, const sis::DecodedMessage& msg,
                            const DecideContext& ctx);
Result<Decision> DecideSchd(const StateView& view, const sis::DecodedMessage& msg,
                            const DecideContext& ctx);
Result<Decision> DecideSchs(const StateView& view, const sis::DecodedMessage& msg,
                            const DecideContext& ctx);
Result<Decision> DecideReference(const StateView& view, const sis::DecodedMessage& msg,
                                 const DecideContext& ctx);

// True for the 23 reference TYPEs (docs/fold.md#reference-data).
bool IsReferenceType(std::string_view type);

}  // namespace msgx
