// The decoded form of one Unisys AODB SIS message (docs/codec.md#the-messages).
//
// This is what the SIS decoder (codecs/sis_decoder.h) produces and what the
// fold's pure handlers consume. It is designed so that a handler can apply
// its rules (docs/fold.md) without ever looking at XML again:
//   - every value keeps its three states apart: missing (no element),
//     empty (element present, no text) and a value;
//   - times are parsed to UTC microseconds in the airport zone, and keep the
//     raw text;
//   - nothing in the message is silently dropped: elements the typed model
//     does not name are kept in `extras` (generic Element trees, document
//     order), and every record/entry also keeps its full Element.
//
// Guarantees of a DecodedMessage returned OK by the decoder (the decoder
// enforces them; handlers may rely on them):
//   - meta.type and meta.styp are non-empty and upper-cased (ASCII), so they
//     compare equal to the upper-case names of docs/codec.md#the-messages;
//   - the body alternative matches meta.type (FlopBody for FLOP, ScheduleBody
//     for SCHD and SCHS, ReferenceBody for the 23 reference types);
//   - every FlopRecord has a non-empty FLID; every SCHD FLTR has a non-empty
//     FLID; every ReferenceRecord has a non-empty key;
//   - for DNLD/RESP (snapshots) RECS equals the number of records carried;
//   - a TimeField is kUnparsable only where the FLOP table says "unparsable
//     ⇒ reject" (FLOP COBT CTOT EOBT IEST NAAT NEAT PADT PEDT TOBT, see
//     docs/fold.md#flop-updates); anywhere else a bad time made the whole
//     decode MALFORMED;
//   - CharPayload values are at most one character; IntField values fit in
//     int64.
//
// Thread-safety: plain values; distinct objects may be used from distinct
// threads, a const object from many.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/clock.h"

namespace msgx::sis {

// Whether an element (or attribute) was there, and whether it had text.
enum class Presence : std::uint8_t {
  kMissing = 0,  // no such element / attribute
  kEmpty,        // present, text empty after trimming ASCII whitespace
  kValue,        // present with non-empty text
};

// A text value. `value` is the text with leading/trailing ASCII whitespace
// trimmed (inner text, including Chinese, is kept byte for byte, UTF-8).
struct TextField {
  Presence presence = Presence::kMissing;
  std::string value;

  bool has_value() const { return presence == Presence::kValue; }
  // Missing or empty: the cases the FLOP table calls "empty".
  bool blank() const { return presence != Presence::kValue; }
};

// An integer value (MAXP, HNAG parts, RECS). A present value that is not a
// decimal integer (optional sign) makes the decode MALFORMED, so when
// presence == kValue, `value` holds it and `raw` the text as given.
struct IntField {
  Presence presence = Presence::kMissing;
  std::int64_t value = 0;
  std::string raw;

  bool has_value() const { return presence == Presence::kValue; }
};

// The formats of docs/codec.md#times, all in local airport time.
enum class TimeFormat : std::uint8_t {
  kDateTime14 = 0,  // yyyyMMddHHmmss (META/DTTM)
  kDayTime,         // ddMMMyyHHmm  (15DEC031805), yy = 20yy
  kDate,            // ddMMMyy      (10SEP20), midnight local
  kHhmm,            // HHMM, a duration or time of day; minutes = H*60+M
};

enum class TimeState : std::uint8_t {
  kMissing = 0,  // no element
  kEmpty,        // element present, empty
  kValue,        // parsed
  kUnparsable,   // present but not the expected shape (only where allowed,
                 // see the file comment; `raw` holds the text)
};

// A parsed time. For kDateTime14/kDayTime/kDate, `utc_micros` is the instant
// (local airport time converted with the TimeZone given to the decoder;
// a local time in a DST gap is moved forward by the gap, an ambiguous one
// takes the earlier instant). For kHhmm, `minutes` is H*60+M and
// `utc_micros` is 0.
struct TimeField {
  TimeState state = TimeState::kMissing;
  TimeFormat format = TimeFormat::kDayTime;
  std::string raw;  // trimmed text as given
  MicrosSinceEpoch utc_micros = 0;
  std::int32_t minutes = 0;

  bool has_value() const { return state == TimeState::kValue; }
  bool blank() const { return state == TimeState::kMissing || state == TimeState::kEmpty; }
};

struct Attribute {
  std::string name;
  std::string value;  // as given (entity references resolved), not trimmed
};

// A generic element: kept for everything the typed model does not name, and
// for repeated entries and schedule/reference records. Children are in
// document order. `text` is the element's own character data (PCDATA and
// CDATA concatenated), trimmed of ASCII whitespace. If the element's name is
// a known time field in its context (codecs/sis_fields.h), `time` holds the
// parsed value (state != kMissing); otherwise time.state == kMissing.
struct Element {
  std::string name;
  std::vector<Attribute> attributes;
  std::string text;
  std::vector<Element> children;
  TimeField time;

  // The first child / attribute of that name, or nullptr.
  const Element* Child(std::string_view child_name) const;
  const Attribute* Attr(std::string_view attr_name) const;
  // The first child's text as a TextField (kMissing if there is none).
  TextField ChildText(std::string_view child_name) const;
  // The attribute as a TextField (kMissing if there is none).
  TextField AttrText(std::string_view attr_name) const;
  // No attribute with a non-empty value, no text, and every child blank.
  bool IsBlank() const;
};

// ---------------------------------------------------------------- META ----

struct Meta {
  std::string sndr;
  std::string seqn;                         // as given (trimmed)
  std::optional<std::int64_t> seqn_number;  // when seqn is all decimal digits
  std::string dttm;                         // as given (trimmed)
  MicrosSinceEpoch dttm_utc_micros = 0;     // DTTM (yyyyMMddHHmmss, airport time)
  std::string type;
  std::string styp;
  // META children other than SNDR SEQN DTTM TYPE STYP, in document order.
  std::vector<Element> extra;
};

// ---------------------------------------------------------------- FLOP ----
// One payload alternative per row kind of the FLOP table
// (docs/fold.md#flop-updates).

// ACFT RENO TRML STND RUNW REMC FTSS: one text value (the element named like
// the STYP). Handler: empty ⇒ reject.
struct TextPayload {
  TextField value;
};

// APPT BOTM CNCL EGSR EGST FINT LACL (clear on empty/missing; a bad time is
// MALFORMED at decode) and COBT CTOT EOBT IEST NAAT NEAT PADT PEDT TOBT
// (reject_unparsable = true: a bad time arrives as TimeState::kUnparsable).
struct TimePayload {
  TimeField value;
  bool reject_unparsable = false;
};

// FLIN FLTY: one character (more than one is MALFORMED). Empty ⇒ reject.
struct CharPayload {
  TextField value;
};

// MAXP. Empty ⇒ reject.
struct IntPayload {
  IntField value;
};

// HNAG: FHAG PHAG MHAG, each independent; empty ⇒ clear that one.
struct HnagPayload {
  IntField fhag;
  IntField phag;
  IntField mhag;
};

// VIPP: VIPP VIPR (text), each independent; empty ⇒ clear.
struct VippPayload {
  TextField vipp;
  TextField vipr;
};

// TAOP: linked flight TAOP TAFL TAID; any empty ⇒ clear all three.
struct TaopPayload {
  TextField taop;
  TextField tafl;
  TextField taid;
};

// EXSS: EXSC (status code) + EXSR (comment). EXSC missing ⇒ reject.
struct ExssPayload {
  TextField exsc;
  TextField exsr;
};

// FDIV DDES="" DDIR="TO|FROM" text=reason. `element` says whether <FDIV>
// was there at all. Handler: empty/DDES empty ⇒ clear; bad DDIR ⇒ reject.
struct FdivPayload {
  Presence element = Presence::kMissing;
  TextField ddes;
  TextField ddir;  // as given; the handler checks TO/FROM
  TextField reason;
};

// FRET REID="A|G" text=reason. Empty ⇒ clear; bad REID ⇒ reject.
struct FretPayload {
  Presence element = Presence::kMissing;
  TextField reid;
  TextField reason;
};

// FLAB ARES="O|G" text=reason. Empty ⇒ clear; bad ARES ⇒ reject.
struct FlabPayload {
  Presence element = Presence::kMissing;
  TextField ares;
  TextField reason;
};

// PORT{POTM,POID}. POTM empty ⇒ clear; POID missing ⇒ reject.
struct PortPayload {
  Presence element = Presence::kMissing;
  TimeField potm;
  TextField poid;
};

// One entry of a repeated list. `key` is the entry's key: the sequence
// attribute (GTNO PSNO CLNO CHNO CSNO ASNO CKNO RTNO PSHN) or, for SRVT
// VIPF TIPT, the key child (SRTC VPCD TRST). `element` is the whole entry,
// times of known time children parsed.
struct ListEntry {
  TextField key;
  Element element;
};

// GTDT PSDT CLDT CHDT CHOT ABTM (replace the list; empty ⇒ reject), CKDT
// (replace), ERUT (upsert by RTNO; all-empty deletes all), SRVT (upsert by
// SRTC; all-empty deletes all), VIPF (add/update by VPCD), PSHT (by PSHN;
// applies to the stand entry whose code = PUST), TIPT (keyed by TRST).
struct ListPayload {
  std::string element_name;        // GTDT, ERUT, ...
  std::string key_name;            // GTNO, RTNO, SRTC, ...
  std::vector<ListEntry> entries;  // document order
  // True when there are no entries or every entry IsBlank() (e.g. <SRVT/>).
  bool all_blank = true;
};

// One DELY@CODE@STRT@DURA(HHMM) text=comment.
struct DelayEntry {
  TextField code;
  TimeField strt;  // kDayTime
  TimeField dura;  // kHhmm; minutes = H*60+M
  TextField comment;
  std::vector<Attribute> other_attributes;  // attributes not named above
};

// DELY: upsert by CODE, others kept. `delete_all` is set when the payload is
// exactly one bare <DELY/> (no attributes with values, no text); then
// `entries` is empty.
struct DelyPayload {
  std::vector<DelayEntry> entries;
  bool delete_all = false;
};

// FDEL: `<FDEL/>` must be empty; non-empty ⇒ reject (the handler decides).
struct FdelPayload {
  Presence element = Presence::kMissing;
  bool empty = true;  // no attributes, no text, no children
};

using FlopPayload = std::variant<TextPayload, TimePayload, CharPayload, IntPayload, HnagPayload,
                                 VippPayload, TaopPayload, ExssPayload, FdivPayload, FretPayload,
                                 FlabPayload, PortPayload, ListPayload, DelyPayload, FdelPayload>;

// One <FLOP> record.
struct FlopRecord {
  int index = 0;     // 1-based position among the FLOP records
  std::string flid;  // non-empty (required; missing/empty is MALFORMED)
  TextField ffid;    // not required by the decoder
  FlopPayload payload;
  // Children of <FLOP> the payload of this STYP does not name, in order.
  std::vector<Element> extras;
};

struct FlopBody {
  std::vector<FlopRecord> records;  // at least one
  std::vector<Element> extras;      // MSG children after META other than FLOP
};

// ------------------------------------------------------- SCHD and SCHS ----

// One <FLTR>. `fields` are all its children in document order (child lists
// such as ROUT, ERUT, PSDT stay as repeated Elements with their attributes),
// times parsed per codecs/sis_fields.h.
struct ScheduleRecord {
  int index = 0;   // 1-based position among the FLTRs
  TextField flid;  // SCHD: always has_value(); SCHS: usually missing
  TimeField sodt;  // SCHD: the FLTR's SODT (kDayTime), if any
  std::vector<Attribute> attributes;
  std::vector<Element> fields;
  // SCHD only: names of the required fields (ALCD FLNO MVIN SODT FLTY FLIN
  // ACFT, docs/fold.md#schedules) that are missing or empty, in that order.
  // The handler skips such a FLTR and logs it; FLID is enforced by the
  // decoder.
  std::vector<std::string> missing_required;

  const Element* Field(std::string_view name) const;
};

// SCHD: <SCHD><RECS/><FLTR/>*</SCHD>; SCHS adds SNAM APCD SDAT EDAT.
struct ScheduleBody {
  bool seasonal = false;  // SCHS
  IntField recs;
  // True for an upsert-only STYP whose RECS differs from records.size()
  // (only logged, docs/codec.md#error-classes). For DNLD/RESP a mismatch is
  // PROTOCOL instead.
  bool recs_mismatch = false;
  TextField snam;  // SCHS only
  TextField apcd;  // SCHS only
  TimeField sdat;  // SCHS only, kDate
  TimeField edat;  // SCHS only, kDate
  std::vector<ScheduleRecord> records;
  // Children of <SCHD>/<SCHS> not named above, and MSG children after META
  // other than the body element, in document order.
  std::vector<Element> extras;
};

// ------------------------------------------------------ reference data ----

// One record of a reference type, e.g. <AIRC>. Its key
// (docs/fold.md#reference-data: AIRC:ITAT, ...) is non-empty. `fields` are
// all other children in document order, kept as given (Y/N flags are not
// interpreted: "only Y is true" is the handler's rule).
struct ReferenceRecord {
  int index = 0;         // 1-based position among the records
  std::string key_name;  // ITAT, ABCD, ...
  std::string key;       // trimmed, non-empty
  std::vector<Attribute> attributes;
  std::vector<Element> fields;

  const Element* Field(std::string_view name) const;
};

struct ReferenceBody {
  std::string type;  // = meta.type
  IntField recs;
  bool recs_mismatch = false;  // as in ScheduleBody
  std::vector<ReferenceRecord> records;
  std::vector<Element> extras;  // MSG children other than META/RECS/records
};

// ---------------------------------------------------------- the message ----

using MessageBody = std::variant<FlopBody, ScheduleBody, ReferenceBody>;

struct DecodedMessage {
  Meta meta;
  MessageBody body;
};

// The snapshot STYPs (DNLD, RESP; docs/fold.md#schedules).
bool IsSnapshotStyp(std::string_view styp);

}  // namespace msgx::sis
