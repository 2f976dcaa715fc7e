#include "tools/corpus_loader.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>

#include "base/mariadb_url.h"
#include "stream/mariadb/mariadb_session.h"

namespace msgx::app {
namespace {

namespace fs = std::filesystem;
using std::chrono::days;
using std::chrono::sys_days;
using std::chrono::year_month_day;

constexpr const char* kMonths[12] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                     "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr int kSeqnMax = 999999;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
int Digits(const std::string& s, size_t pos, size_t n) {
  int v = 0;
  for (size_t i = 0; i < n; ++i) v = v * 10 + (s[pos + i] - '0');
  return v;
}

// A `ddMMMyy` or `ddMMMyyHHmm` token in a message.
struct DateToken {
  size_t pos = 0;
  size_t len = 0;  // 7 or 11
  sys_days date;
};

std::optional<DateToken> DateTokenAt(const std::string& s, size_t i) {
  if (i + 7 > s.size()) return std::nullopt;
  if (i > 0 && IsAlnum(s[i - 1])) return std::nullopt;
  if (!IsDigit(s[i]) || !IsDigit(s[i + 1]) || !IsDigit(s[i + 5]) || !IsDigit(s[i + 6])) {
    return std::nullopt;
  }
  int month = 0;
  for (int m = 0; m < 12; ++m) {
    if (s.compare(i + 2, 3, kMonths[m]) == 0) month = m + 1;
  }
  if (month == 0) return std::nullopt;
  size_t len = 7;
  if (i + 11 <= s.size() && IsDigit(s[i + 7]) && IsDigit(s[i + 8]) && IsDigit(s[i + 9]) &&
      IsDigit(s[i + 10])) {
    if (Digits(s, i + 7, 2) > 23 || Digits(s, i + 9, 2) > 59) return std::nullopt;
    len = 11;
  }
  if (i + len < s.size() && IsAlnum(s[i + len])) return std::nullopt;
  year_month_day ymd{std::chrono::year{2000 + Digits(s, i + 5, 2)},
                     std::chrono::month{static_cast<unsigned>(month)},
                     std::chrono::day{static_cast<unsigned>(Digits(s, i, 2))}};
  if (!ymd.ok()) return std::nullopt;
  return DateToken{i, len, sys_days{ymd}};
}

std::vector<DateToken> FindDateTokens(const std::string& s) {
  std::vector<DateToken> out;
  for (size_t i = 0; i + 7 <= s.size(); ++i) {
    if (std::optional<DateToken> t = DateTokenAt(s, i)) {
      out.push_back(*t);
      i += t->len - 1;
    }
  }
  return out;
}

std::string FormatDdMmmYy(sys_days d) {
  year_month_day ymd{d};
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%02u%s%02d", static_cast<unsigned>(ymd.day()),
                kMonths[static_cast<unsigned>(ymd.month()) - 1],
                static_cast<int>(ymd.year()) % 100);
  return buf;
}

sys_days ToDays(const LocalTime& t) {
  return sys_days{year_month_day{std::chrono::year{t.year},
                                 std::chrono::month{static_cast<unsigned>(t.month)},
                                 std::chrono::day{static_cast<unsigned>(t.day)}}};
}

// `now` minus `back` seconds, as local wall-clock fields (no zone rules
// needed: it only moves the clock face back).
LocalTime SecondsBefore(const LocalTime& now, int back) {
  std::chrono::sys_seconds t = ToDays(now) + std::chrono::hours(now.hour) +
                               std::chrono::minutes(now.minute) +
                               std::chrono::seconds(now.second - back);
  sys_days d = std::chrono::floor<days>(t);
  year_month_day ymd{d};
  std::chrono::hh_mm_ss<std::chrono::seconds> hms{t - d};
  return LocalTime{static_cast<int>(ymd.year()),
                   static_cast<int>(static_cast<unsigned>(ymd.month())),
                   static_cast<int>(static_cast<unsigned>(ymd.day())),
                   static_cast<int>(hms.hours().count()),
                   static_cast<int>(hms.minutes().count()),
                   static_cast<int>(hms.seconds().count())};
}

std::string Dttm(const LocalTime& t) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04d%02d%02d%02d%02d%02d", t.year, t.month, t.day, t.hour,
                t.minute, t.second);
  return buf;
}

std::string SqlTimestamp(const LocalTime& t) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d", t.year, t.month, t.day, t.hour,
                t.minute, t.second);
  return buf;
}

// Moves every date token: the message's earliest date → today, later ones
// → tomorrow; time of day kept.
std::string MoveDates(const std::string& xml, sys_days today) {
  std::vector<DateToken> tokens = FindDateTokens(xml);
  if (tokens.empty()) return xml;
  sys_days first = tokens.front().date;
  for (const DateToken& t : tokens) first = std::min(first, t.date);
  std::string out;
  size_t at = 0;
  for (const DateToken& t : tokens) {
    out.append(xml, at, t.pos - at);
    sys_days moved = t.date > first ? today + days{1} : today;
    out += FormatDdMmmYy(moved);
    if (t.len == 11) out.append(xml, t.pos + 7, 4);
    at = t.pos + t.len;
  }
  out.append(xml, at, std::string::npos);
  return out;
}

// The trimmed text of the first <tag>…</tag>, if any.
std::optional<std::string> ElementText(const std::string& xml, const std::string& tag,
                                       size_t from = 0, size_t* end = nullptr) {
  const std::string open = "<" + tag + ">";
  const std::string close = "</" + tag + ">";
  size_t a = xml.find(open, from);
  if (a == std::string::npos) return std::nullopt;
  size_t b = xml.find(close, a);
  if (b == std::string::npos) return std::nullopt;
  if (end != nullptr) *end = b + close.size();
  std::string v = xml.substr(a + open.size(), b - a - open.size());
  size_t s = v.find_first_not_of(" \t\r\n");
  size_t e = v.find_last_not_of(" \t\r\n");
  return s == std::string::npos ? std::string() : v.substr(s, e - s + 1);
}

// Replaces the content of the first <tag>…</tag>; unchanged if absent.
std::string ReplaceElement(const std::string& xml, const std::string& tag,
                           const std::string& value) {
  const std::string open = "<" + tag + ">";
  const std::string close = "</" + tag + ">";
  size_t a = xml.find(open);
  if (a == std::string::npos) return xml;
  size_t b = xml.find(close, a);
  if (b == std::string::npos) return xml;
  return xml.substr(0, a + open.size()) + value + xml.substr(b);
}

struct FlightSeed {
  std::string flid, alcd, flno, mvin, flin;
  int hour = 12, minute = 0;
};

// ALCD-FLNO-MVIN-SODT-FLIN, e.g. CA-CA101-A-12DEC031345-D.
FlightSeed SeedFromFfid(const std::string& flid, const std::string& ffid) {
  FlightSeed seed{flid, "MX", "MX" + flid.substr(flid.size() > 4 ? flid.size() - 4 : 0), "A", "D"};
  std::vector<std::string> parts;
  std::stringstream ss(ffid);
  std::string part;
  while (std::getline(ss, part, '-')) parts.push_back(part);
  if (parts.size() != 5 || parts[0].empty() || parts[1].empty()) return seed;
  if (parts[2] != "A" && parts[2] != "D") return seed;
  if (parts[4].size() != 1) return seed;
  std::optional<DateToken> sodt = DateTokenAt(parts[3], 0);
  if (!sodt || sodt->len != 11 || parts[3].size() != 11) return seed;
  seed.alcd = parts[0];
  seed.flno = parts[1];
  seed.mvin = parts[2];
  seed.flin = parts[4];
  seed.hour = Digits(parts[3], 7, 2);
  seed.minute = Digits(parts[3], 9, 2);
  return seed;
}

std::string GeneratedSchedule(const std::vector<FlightSeed>& flights, const LocalTime& now) {
  sys_days today = ToDays(now);
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<MSG>\n\t<META>\n\t\t<SNDR>AODB</SNDR>\n"
    << "\t\t<SEQN>0</SEQN>\n\t\t<DTTM>00000000000000</DTTM>\n\t\t<TYPE>SCHD</TYPE>\n"
    << "\t\t<STYP>DNLD</STYP>\n\t</META>\n\t<SCHD>\n\t\t<RECS>" << flights.size() << "</RECS>\n";
  for (const FlightSeed& f : flights) {
    bool passed = f.hour * 60 + f.minute <= now.hour * 60 + now.minute;
    char sodt[32];
    std::snprintf(sodt, sizeof(sodt), "%s%02d%02d",
                  FormatDdMmmYy(passed ? today + days{1} : today).c_str(), f.hour, f.minute);
    x << "\t\t<FLTR>\n"
      << "\t\t\t<FLID>" << f.flid << "</FLID>\n"
      << "\t\t\t<ALCD>" << f.alcd << "</ALCD>\n"
      << "\t\t\t<FLNO>" << f.flno << "</FLNO>\n"
      << "\t\t\t<MVIN>" << f.mvin << "</MVIN>\n"
      << "\t\t\t<SODT>" << sodt << "</SODT>\n"
      << "\t\t\t<FLTY>W</FLTY>\n"
      << "\t\t\t<FLIN>" << f.flin << "</FLIN>\n"
      << "\t\t\t<ACFT>320</ACFT>\n"
      << "\t\t</FLTR>\n";
  }
  x << "\t</SCHD>\n</MSG>\n";
  return x.str();
}

// Every FLID that the FLOP messages name, in first-seen order, with the
// FFID of its first record.
std::vector<FlightSeed> FlopFlights(const std::vector<CorpusFile>& files) {
  std::vector<FlightSeed> seeds;
  for (const CorpusFile& f : files) {
    if (ElementText(f.bytes, "TYPE").value_or("") != "FLOP") continue;
    size_t at = 0;
    for (;;) {
      size_t end = 0;
      std::optional<std::string> flid = ElementText(f.bytes, "FLID", at, &end);
      if (!flid) break;
      at = end;
      if (flid->empty()) continue;
      bool seen = std::any_of(seeds.begin(), seeds.end(),
                              [&](const FlightSeed& s) { return s.flid == *flid; });
      if (seen) continue;
      size_t next_flid = f.bytes.find("<FLID>", at);
      size_t ffid_end = 0;
      std::optional<std::string> ffid = ElementText(f.bytes, "FFID", at, &ffid_end);
      if (ffid && (next_flid == std::string::npos || ffid_end < next_flid)) {
        seeds.push_back(SeedFromFfid(*flid, *ffid));
      } else {
        seeds.push_back(SeedFromFfid(*flid, ""));
      }
    }
  }
  return seeds;
}

}  // namespace

LocalTime AirportLocalTime(MicrosSinceEpoch t, const TimeZone& zone) {
  std::int64_t utc = t >= 0 ? t / 1000000 : (t - 999999) / 1000000;
  std::chrono::sys_seconds local{std::chrono::seconds(utc + zone.OffsetAt(utc))};
  sys_days d = std::chrono::floor<days>(local);
  year_month_day ymd{d};
  std::chrono::hh_mm_ss<std::chrono::seconds> hms{local - d};
  return LocalTime{static_cast<int>(ymd.year()),
                   static_cast<int>(static_cast<unsigned>(ymd.month())),
                   static_cast<int>(static_cast<unsigned>(ymd.day())),
                   static_cast<int>(hms.hours().count()),
                   static_cast<int>(hms.minutes().count()),
                   static_cast<int>(hms.seconds().count())};
}

LoadPlan PlanCorpusLoad(std::vector<CorpusFile> files, const LocalTime& now, int first_seqn) {
  std::sort(files.begin(), files.end(),
            [](const CorpusFile& a, const CorpusFile& b) { return a.name < b.name; });
  // Flight deletes last, so they do not orphan the FLOPs behind them.
  std::stable_partition(files.begin(), files.end(), [](const CorpusFile& f) {
    return !(ElementText(f.bytes, "TYPE").value_or("") == "FLOP" &&
             ElementText(f.bytes, "STYP").value_or("") == "FDEL");
  });

  LoadPlan plan;
  std::vector<FlightSeed> flights = FlopFlights(files);
  for (const FlightSeed& f : flights) plan.created_flids.push_back(f.flid);

  std::vector<CorpusFile> ordered;
  ordered.push_back({"generated:SCHD-DNLD", GeneratedSchedule(flights, now)});
  for (CorpusFile& f : files) {
    f.bytes = MoveDates(f.bytes, ToDays(now));
    ordered.push_back(std::move(f));
  }

  const int n = static_cast<int>(ordered.size());
  int seqn = first_seqn < 1 || first_seqn > kSeqnMax ? 1 : first_seqn;
  for (int i = 0; i < n; ++i) {
    MailboxRow row;
    row.source = ordered[i].name;
    LocalTime sent = SecondsBefore(now, n - 1 - i);
    row.seqn = seqn;
    row.dttm = Dttm(sent);
    row.sent_at = SqlTimestamp(sent);
    row.xml = ReplaceElement(ordered[i].bytes, "SEQN", std::to_string(seqn));
    row.xml = ReplaceElement(row.xml, "DTTM", row.dttm);
    row.sndr = ElementText(row.xml, "SNDR").value_or("");
    row.type = ElementText(row.xml, "TYPE").value_or("");
    row.styp = ElementText(row.xml, "STYP").value_or("");
    plan.rows.push_back(std::move(row));
    seqn = seqn % kSeqnMax + 1;
  }
  return plan;
}

namespace {

// The same load into a MariaDB/MySQL mailbox, in one transaction; a named
// lock (GET_LOCK, no privilege needed) serialises concurrent loads.
Result<LoadPlan> LoadIntoMariaDb(std::vector<CorpusFile> files, const std::string& mailbox_url,
                                 const std::string& table, const LocalTime& now) {
  Result<MariaDbUrl> url = ParseMariaDbUrl(mailbox_url);
  if (!url.ok()) return url.status();
  MariaDbSession session(std::move(url).value(), MariaDbSession::Options{false, "+00:00"});
  auto run = [&session](const std::string& sql, std::vector<MariaDbRow>* rows = nullptr) {
    return session.Run("load", sql, rows);
  };
  const std::string t = MariaDbSession::QuoteName(table);
  std::vector<MariaDbRow> got;
  if (Status s = run("SELECT GET_LOCK('msgx dev load', 60)", &got); !s.ok()) return s;
  if (got.empty() || got[0].at(0).value_or("0") != "1") {
    return Status::Infra("mailbox: another load holds the lock");
  }
  got.clear();
  Status s = run("START TRANSACTION");
  if (s.ok()) s = run("SELECT COALESCE(MAX(cminmsgs_subsystem_sequence), 0) FROM " + t, &got);
  if (!s.ok()) return s;
  const std::optional<std::int64_t> max = got.empty() ? std::nullopt : MariaDbInt(got[0].at(0));
  if (!max) return Status::Infra("mailbox: no highest SEQN");
  LoadPlan plan = PlanCorpusLoad(std::move(files), now, static_cast<int>(*max % kSeqnMax + 1));
  const std::string received = MariaDbSession::Quote(SqlTimestamp(now));
  for (const MailboxRow& r : plan.rows) {
    std::string sql = "INSERT INTO " + t +
                      " (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_subsystem_name,"
                      " cminmsgs_subsystem_sequence, cminmsgs_subsystem_date_sent,"
                      " cminmsgs_subsystem_subtype, cminmsgs_subsystem_type, cminmsgs_status)"
                      " VALUES (";
    for (const std::string& v :
         {MariaDbSession::Quote(r.xml), received, MariaDbSession::Quote(r.sndr.substr(0, 4)),
          std::to_string(r.seqn),
          r.sent_at.empty() ? std::string("NULL") : MariaDbSession::Quote(r.sent_at),
          MariaDbSession::Quote(r.styp.substr(0, 4)), MariaDbSession::Quote(r.type.substr(0, 4))}) {
      sql += v;
      sql += ", ";
    }
    sql += "'VALID')";
    s = run(sql);
    if (!s.ok()) {
      (void)run("ROLLBACK");
      return s;
    }
  }
  if (s = run("COMMIT"); !s.ok()) return s;
  (void)run("SELECT RELEASE_LOCK('msgx dev load')");
  return plan;
}

}  // namespace

Result<LoadPlan> LoadCorpus(const std::string& corpus_dir, const std::string& mailbox_url,
                            const std::string& table, const std::string& timezone,
                            const Clock& clock) {
  std::vector<CorpusFile> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(corpus_dir, ec)) {
    if (e.path().extension() != ".xml") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    files.push_back({e.path().filename().string(), ss.str()});
  }
  if (ec) return Status::Config("corpus " + corpus_dir + ": " + ec.message());
  if (files.empty()) return Status::Config("corpus " + corpus_dir + ": no *.xml files");

  Result<TimeZone> zone = TimeZone::Load(timezone);
  if (!zone.ok()) return zone.status();
  LocalTime now = AirportLocalTime(clock.NowMicros(), *zone);
  if (IsMariaDbUrl(mailbox_url)) return LoadIntoMariaDb(std::move(files), mailbox_url, table, now);
  try {
    pqxx::connection conn(mailbox_url);
    pqxx::work w(conn);
    // Serialises concurrent loads (SEQNs stay unique); a lock, not DDL.
    w.exec0("LOCK TABLE " + table + " IN SHARE ROW EXCLUSIVE MODE");
    pqxx::row max = w.exec1("SELECT COALESCE(MAX(cminmsgs_subsystem_sequence), 0) FROM " + table);
    int first_seqn = max[0].as<int>() % kSeqnMax + 1;
    LoadPlan plan = PlanCorpusLoad(std::move(files), now, first_seqn);
    const std::string received = SqlTimestamp(now);
    for (const MailboxRow& r : plan.rows) {
      std::optional<std::string> sent;
      if (!r.sent_at.empty()) sent = r.sent_at;
      w.exec_params0("INSERT INTO " + table +
                         " (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_subsystem_name,"
                         " cminmsgs_subsystem_sequence, cminmsgs_subsystem_date_sent,"
                         " cminmsgs_subsystem_subtype, cminmsgs_subsystem_type, cminmsgs_status)"
                         " VALUES ($1, $2, $3, $4, $5, $6, $7, 'VALID')",
                     r.xml, received, r.sndr.substr(0, 4), r.seqn, sent, r.styp.substr(0, 4),
                     r.type.substr(0, 4));
    }
    w.commit();
    return plan;
  } catch (const pqxx::broken_connection& e) {
    return Status::Infra(std::string("mailbox unreachable: ") + e.what());
  } catch (const std::exception& e) {
    return Status::Infra(std::string("loading the mailbox: ") + e.what());
  }
}

}  // namespace msgx::app
