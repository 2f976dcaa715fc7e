// The handler tables of docs/fold.md that the decoder needs, in one place:
// FLOP STYP payload kinds, reference-data record keys, supported schedule
// STYPs, and which element names are times in which format.
//
// Pure lookups over static tables; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "codecs/sis_message.h"

namespace msgx::sis {

enum class FlopKind {
  kText,        // ACFT RENO TRML STND RUNW REMC FTSS
  kTimeClear,   // APPT BOTM CNCL EGSR EGST FINT LACL
  kTimeReject,  // COBT CTOT EOBT IEST NAAT NEAT PADT PEDT TOBT
  kChar,        // FLIN FLTY
  kInt,         // MAXP
  kHnag,
  kVipp,
  kTaop,
  kExss,
  kFdiv,
  kFret,
  kFlab,
  kPort,
  kList,  // GTDT PSDT CLDT CHDT CHOT ABTM CKDT ERUT SRVT VIPF PSHT TIPT
  kDely,
  kFdel,
};

struct FlopStypInfo {
  FlopKind kind;
  // kList only: the entry key, an attribute (GTNO ...) or a child (SRTC ...).
  std::string_view key_name;
  bool key_is_attribute = true;
};

// The row of the FLOP table (docs/fold.md#flop-updates) for `styp`, or
// nullptr (UNSUPPORTED).
const FlopStypInfo* FindFlopStyp(std::string_view styp);

// The record key of a reference TYPE (AIRC → ITAT), or "" when `type` is not
// one of the 23 reference types.
std::string_view ReferenceKeyField(std::string_view type);

// Whether the decoder has a handler shape for TYPE/STYP (SCHD: DNLD RESP DEL
// ADFT ADD UPD; SCHS: DNLD RESP ADD UPD; reference types: ADD UPD DEL DNLD
// RESP; FLOP: FindFlopStyp).
bool IsSupported(std::string_view type, std::string_view styp);

// Where an element sits, which decides the format of a time field.
enum class FieldContext {
  kNone,  // kept as given: no time parsing (extras, META extras, reference records)
  kFlop,
  kSchd,
  kSchs,
};

// The time format of element `name` under a parent named `parent` in
// `context`, or nullopt when it is not a time field (always for kNone). E.g. SCAT under ROUT is
// ddMMMyyHHmm in SCHD but HHMM in SCHS; STDT/EDDT/SDAT/EDAT are ddMMMyy.
std::optional<TimeFormat> TimeFormatOf(FieldContext context, std::string_view parent,
                                       std::string_view name);

}  // namespace msgx::sis
