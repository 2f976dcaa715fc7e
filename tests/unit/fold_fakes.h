// Test doubles for the fold: a tiny stand-in for the SIS decoder that reads
// a compact text form, an in-memory log, builders for decoded messages, and
// airport-time helpers. Header-only; used by the fold and handler tests.
//
// Fake message bytes:  <META>SNDR|SEQN|DTTM|TYPE|STYP</META>BODY
//   BODY "!MALFORMED" / "!PROTOCOL" / "!CODEC" fails the body decode with
//   that class; a STYP in FakeDecoder::unsupported fails it UNSUPPORTED;
//   bytes not starting with "<META>" fail META decoding (MALFORMED).
//   FLOP:  "FLID=VALUE;FLID=VALUE"  (text payload; time payload for the
//          time STYPs: VALUE = micros, "" = empty, "?" = unparsable;
//          FDEL: VALUE "" = empty <FDEL/>, anything else non-empty)
//   SCHD:  "FLID,SODT_MICROS,ACFT;..."  (ACFT "-" = missing required)
//   reference types: "KEY=NAME;..."
#pragma once

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "codecs/sis_message.h"
#include "stream/fold/fold_input.h"

namespace msgx::testing {

inline std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

// Airport (+08:00) local time → UTC micros.
inline MicrosSinceEpoch Local(int y, unsigned m, unsigned d, int hh = 0, int mm = 0) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const long days = era * 146097 + static_cast<long>(doe) - 719468;
  return (days * 86400 + hh * 3600 + mm * 60 - 8 * 3600) * 1'000'000LL;
}

inline sis::TextField Text(const std::string& v) {
  sis::TextField t;
  t.presence = v.empty() ? sis::Presence::kEmpty : sis::Presence::kValue;
  t.value = v;
  return t;
}
inline sis::TextField Missing() { return {}; }

inline sis::TimeField Time(MicrosSinceEpoch us) {
  sis::TimeField t;
  t.state = sis::TimeState::kValue;
  t.utc_micros = us;
  t.raw = std::to_string(us);
  return t;
}
inline sis::TimeField EmptyTime() {
  sis::TimeField t;
  t.state = sis::TimeState::kEmpty;
  return t;
}

inline sis::Element Leaf(const std::string& name, const std::string& text) {
  sis::Element e;
  e.name = name;
  e.text = text;
  return e;
}
inline sis::Element TimeLeaf(const std::string& name, MicrosSinceEpoch us) {
  sis::Element e = Leaf(name, std::to_string(us));
  e.time = Time(us);
  return e;
}

inline bool IsTimeStyp(const std::string& s) {
  static const std::set<std::string> k = {"APPT", "BOTM", "CNCL", "EGSR", "EGST", "FINT",
                                          "LACL", "COBT", "CTOT", "EOBT", "IEST", "NAAT",
                                          "NEAT", "PADT", "PEDT", "TOBT"};
  return k.count(s) > 0;
}

inline sis::ScheduleRecord Fltr(int index, const std::string& flid, MicrosSinceEpoch sodt,
                                const std::string& acft) {
  sis::ScheduleRecord r;
  r.index = index;
  r.flid = Text(flid);
  r.sodt = Time(sodt);
  r.fields.push_back(Leaf("FLID", flid));
  r.fields.push_back(Leaf("ALCD", "CA"));
  r.fields.push_back(Leaf("FLNO", "CA" + flid));
  r.fields.push_back(Leaf("MVIN", "A"));
  r.fields.push_back(TimeLeaf("SODT", sodt));
  r.fields.push_back(Leaf("FLTY", "J"));
  r.fields.push_back(Leaf("FLIN", "I"));
  if (acft == "-") {
    r.missing_required.push_back("ACFT");
  } else {
    r.fields.push_back(Leaf("ACFT", acft));
  }
  return r;
}

class FakeDecoder final : public MessageDecoder {
 public:
  std::set<std::string> unsupported;

  Result<sis::Meta> DecodeMeta(std::string_view raw,
                               std::unique_ptr<Pending>* /*pending*/) const override {
    return ParseMeta(raw);
  }

  static Result<sis::Meta> ParseMeta(std::string_view raw) {
    const std::string s(raw);
    if (s.rfind("<META>", 0) != 0) return Status::Malformed("no META");
    const std::size_t end = s.find("</META>");
    if (end == std::string::npos) return Status::Malformed("no META end");
    auto parts = Split(s.substr(6, end - 6), '|');
    if (parts.size() != 5 || parts[3].empty() || parts[4].empty()) {
      return Status::Malformed("META incomplete");
    }
    sis::Meta m;
    m.sndr = parts[0];
    m.seqn = parts[1];
    if (!m.seqn.empty() && m.seqn.find_first_not_of("0123456789") == std::string::npos) {
      m.seqn_number = std::stoll(m.seqn);
    }
    m.dttm = parts[2];
    m.type = parts[3];
    m.styp = parts[4];
    return m;
  }

  Result<sis::DecodedMessage> DecodeBody(std::string_view raw,
                                         std::unique_ptr<Pending> /*pending*/) const override {
    auto meta = ParseMeta(raw);
    if (!meta.ok()) return meta.status();
    const std::string s(raw);
    const std::string body = s.substr(s.find("</META>") + 7);
    if (body == "!MALFORMED") return Status::Malformed("broken body");
    if (body == "!PROTOCOL") return Status::Protocol("RECS mismatch");
    if (body == "!CODEC") return Status::CodecError("too big");
    if (unsupported.count(meta->styp)) return Status::Unsupported("no handler " + meta->styp);
    sis::DecodedMessage m;
    m.meta = *meta;
    if (meta->type == "FLOP") {
      sis::FlopBody fb;
      int i = 0;
      for (const std::string& rec : Split(body, ';')) {
        const std::size_t eq = rec.find('=');
        sis::FlopRecord r;
        r.index = ++i;
        r.flid = rec.substr(0, eq);
        const std::string v = eq == std::string::npos ? "" : rec.substr(eq + 1);
        if (meta->styp == "FDEL") {
          r.payload = sis::FdelPayload{sis::Presence::kEmpty, v.empty()};
        } else if (IsTimeStyp(meta->styp)) {
          sis::TimePayload p;
          p.reject_unparsable = true;
          if (v.empty()) {
            p.value = EmptyTime();
          } else if (v == "?" || v.find_first_not_of("0123456789") != std::string::npos) {
            p.value.state = sis::TimeState::kUnparsable;
            p.value.raw = "?";
          } else {
            p.value = Time(std::stoll(v));
          }
          r.payload = p;
        } else {
          r.payload = sis::TextPayload{Text(v)};
        }
        fb.records.push_back(r);
      }
      if (fb.records.empty()) return Status::Malformed("no FLOP");
      m.body = fb;
    } else if (meta->type == "SCHD") {
      sis::ScheduleBody sb;
      int i = 0;
      for (const std::string& rec : Split(body, ';')) {
        auto f = Split(rec, ',');
        if (f.size() != 3 || f[1].empty() ||
            f[1].find_first_not_of("0123456789") != std::string::npos) {
          return Status::Malformed("bad FLTR");
        }
        sb.records.push_back(Fltr(++i, f[0], std::stoll(f[1]), f[2]));
      }
      m.body = sb;
    } else {
      sis::ReferenceBody rb;
      rb.type = meta->type;
      int i = 0;
      for (const std::string& rec : Split(body, ';')) {
        const std::size_t eq = rec.find('=');
        sis::ReferenceRecord r;
        r.index = ++i;
        r.key_name = "K";
        r.key = rec.substr(0, eq);
        r.fields.push_back(Leaf("K", r.key));
        r.fields.push_back(Leaf("NAME", rec.substr(eq + 1)));
        rb.records.push_back(r);
      }
      m.body = rb;
    }
    return m;
  }
};

inline std::string Raw(const std::string& sndr, const std::string& seqn, const std::string& type,
                       const std::string& styp, const std::string& body) {
  return "<META>" + sndr + "|" + seqn + "|20261130100000|" + type + "|" + styp + "</META>" + body;
}

// An in-memory log: records by offset, plus the quarantine index.
class VectorLog final : public LogSource {
 public:
  std::vector<FoldInput> records;
  std::map<std::int64_t, std::string> quarantine;                      // whole records
  std::map<std::pair<std::int64_t, int>, std::string> quarantine_sub;  // {replay offset, k}
  std::map<std::int64_t, std::string> exhausted;  // seed mode: EXHAUST commands

  FoldInput& AddMessage(std::int64_t mailbox_id, MicrosSinceEpoch t, std::string raw) {
    FoldInput in;
    in.offset = static_cast<std::int64_t>(records.size());
    in.mailbox_id = mailbox_id;
    in.append_micros = t;
    in.raw = std::move(raw);
    records.push_back(std::move(in));
    return records.back();
  }
  FoldInput& AddCommand(MicrosSinceEpoch t, FoldCommand c) {
    FoldInput in;
    in.offset = static_cast<std::int64_t>(records.size());
    in.append_micros = t;
    in.command = std::move(c);
    records.push_back(std::move(in));
    return records.back();
  }
  Result<std::optional<FoldInput>> ReadAt(std::int64_t offset) const override {
    if (offset < 0 || offset >= static_cast<std::int64_t>(records.size())) {
      return std::optional<FoldInput>();
    }
    return std::optional<FoldInput>(records[static_cast<std::size_t>(offset)]);
  }
  std::optional<std::string> QuarantineReason(std::int64_t offset, int sub) const override {
    if (sub >= 0) {
      auto it = quarantine_sub.find({offset, sub});
      if (it == quarantine_sub.end()) return std::nullopt;
      return it->second;
    }
    auto it = quarantine.find(offset);
    if (it == quarantine.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> ExhaustReason(std::int64_t offset) const override {
    auto it = exhausted.find(offset);
    if (it == exhausted.end()) return std::nullopt;
    return it->second;
  }
};

// A fresh temporary directory, removed at destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "msgx-fold-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace msgx::testing
