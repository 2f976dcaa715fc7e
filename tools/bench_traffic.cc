#include "tools/bench_traffic.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace msgx::app {
namespace {

constexpr int kSeqnMax = 999999;
constexpr int kFltrsPerAdd = 50;
constexpr const char* kFields[] = {"STND", "RENO", "RUNW", "REMC", "TRML"};
constexpr const char* kAcft[] = {"320", "321", "333", "738", "789"};
constexpr const char* kMonths[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                   "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};

std::string Dttm(const LocalTime& t) {
  char b[32];
  std::snprintf(b, sizeof(b), "%04d%02d%02d%02d%02d%02d", t.year, t.month, t.day, t.hour, t.minute,
                t.second);
  return b;
}

// Replaces the content of the first <tag>…</tag>, or appends `suffix` to it.
std::string Patch(std::string xml, const std::string& tag, const std::string& value,
                  bool append = false) {
  const std::string open = "<" + tag + ">";
  const std::size_t a = xml.find(open);
  if (a == std::string::npos) return xml;
  const std::size_t from = a + open.size();
  const std::size_t b = xml.find("</" + tag + ">", from);
  if (b == std::string::npos) return xml;
  if (append) return xml.insert(b, value);
  return xml.replace(from, b - from, value);
}

std::string Head(const std::string& type, const std::string& styp, int seqn,
                 const std::string& dttm) {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<MSG>\n\t<META>\n\t\t<SNDR>AODB</SNDR>\n"
    << "\t\t<SEQN>" << seqn << "</SEQN>\n\t\t<DTTM>" << dttm << "</DTTM>\n\t\t<TYPE>" << type
    << "</TYPE>\n\t\t<STYP>" << styp << "</STYP>\n\t</META>\n";
  return x.str();
}

TrafficMessage Message(TrafficKind kind, const std::string& type, const std::string& styp, int seqn,
                       const std::string& dttm, std::string xml) {
  TrafficMessage m;
  m.kind = kind;
  m.type = type;
  m.styp = styp;
  m.seqn = seqn;
  m.dttm = dttm;
  m.xml = std::move(xml);
  return m;
}

}  // namespace

Result<TrafficTemplates> LoadTrafficTemplates(const std::string& corpus_dir) {
  TrafficTemplates t;
  for (const char* styp : kFields) {
    const std::string path = corpus_dir + "/FLOP-" + styp + "-1.xml";
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::Config("bench traffic template " + path + " is missing");
    std::stringstream ss;
    ss << in.rdbuf();
    t.flop[styp] = ss.str();
  }
  return t;
}

TrafficGenerator::TrafficGenerator(TrafficTemplates templates, int flights, int first_seqn)
    : t_(std::move(templates)), flights_(flights), seqn_(first_seqn) {}

int TrafficGenerator::TakeSeqn() {
  const int s = seqn_;
  seqn_ = seqn_ >= kSeqnMax ? 1 : seqn_ + 1;
  return s;
}

std::string TrafficGenerator::Fltr(const Flight& f, const std::string& acft) const {
  std::ostringstream x;
  x << "\t\t<FLTR>\n\t\t\t<FLID>" << f.flid << "</FLID>\n\t\t\t<ALCD>MX</ALCD>\n\t\t\t<FLNO>"
    << f.flno << "</FLNO>\n\t\t\t<MVIN>" << f.mvin << "</MVIN>\n\t\t\t<SODT>" << f.sodt
    << "</SODT>\n\t\t\t<FLTY>W</FLTY>\n\t\t\t<FLIN>D</FLIN>\n\t\t\t<ACFT>" << acft
    << "</ACFT>\n\t\t</FLTR>\n";
  return x.str();
}

std::vector<TrafficMessage> TrafficGenerator::Setup(const LocalTime& now) {
  using namespace std::chrono;
  const sys_days tomorrow = sys_days{year{now.year} / month{static_cast<unsigned>(now.month)} /
                                     day{static_cast<unsigned>(now.day)}} +
                            days{1};
  schedule_.clear();
  for (int k = 0; k < flights_; ++k) {
    const int minute_of_day = 6 * 60 + k % (18 * 60);
    const year_month_day d{tomorrow};
    char sodt[16];
    std::snprintf(sodt, sizeof(sodt), "%02u%s%02d%02d%02d", static_cast<unsigned>(d.day()),
                  kMonths[static_cast<unsigned>(d.month()) - 1], static_cast<int>(d.year()) % 100,
                  minute_of_day / 60, minute_of_day % 60);
    schedule_.push_back({std::to_string(800000001 + k), "MX" + std::to_string(1000 + k),
                         k % 2 == 0 ? "A" : "D", sodt});
  }
  std::vector<TrafficMessage> out;
  const std::string dttm = Dttm(now);
  for (int from = 0; from < flights_; from += kFltrsPerAdd) {
    const int to = std::min(flights_, from + kFltrsPerAdd);
    const int seqn = TakeSeqn();
    std::string xml = Head("SCHD", "ADD", seqn, dttm) + "\t<SCHD>\n\t\t<RECS>" +
                      std::to_string(to - from) + "</RECS>\n";
    for (int k = from; k < to; ++k) xml += Fltr(schedule_[static_cast<std::size_t>(k)], kAcft[0]);
    xml += "\t</SCHD>\n</MSG>\n";
    out.push_back(Message(TrafficKind::kSchedule, "SCHD", "ADD", seqn, dttm, std::move(xml)));
  }
  return out;
}

TrafficMessage TrafficGenerator::Next(const LocalTime& now) {
  const std::int64_t slot = count_++ % 20;
  const int seqn = TakeSeqn();
  const std::string dttm = Dttm(now);
  if (slot == 9) {
    const std::int64_t k = schds_++;
    const Flight& f = schedule_[static_cast<std::size_t>(k % flights_)];
    const std::int64_t visit = k / flights_;
    std::string xml = Head("SCHD", "UPD", seqn, dttm) + "\t<SCHD>\n\t\t<RECS>1</RECS>\n" +
                      Fltr(f, kAcft[(visit + 1) % 5]) + "\t</SCHD>\n</MSG>\n";
    TrafficMessage m = Message(TrafficKind::kSchedule, "SCHD", "UPD", seqn, dttm, std::move(xml));
    m.flid = f.flid;
    return m;
  }
  if (slot == 19) {
    const std::int64_t r = refs_++;
    std::string xml = Head("STTS", "UPD", seqn, dttm) + "\t<RECS>1</RECS>\n\t<STTS>\n\t\t<STTC>BX" +
                      std::to_string(r % 20) + "</STTC>\n\t\t<STTD>bench status " +
                      std::to_string(r / 20) + "</STTD>\n\t\t<ABNS>N</ABNS>\n\t</STTS>\n</MSG>\n";
    return Message(TrafficKind::kReference, "STTS", "UPD", seqn, dttm, std::move(xml));
  }
  const std::int64_t j = flops_++;
  const Flight& f = schedule_[static_cast<std::size_t>(j % flights_)];
  const std::int64_t visit = j / flights_;
  const std::string field = kFields[visit % 5];
  std::string xml = t_.flop.at(field);
  xml = Patch(std::move(xml), "SEQN", std::to_string(seqn));
  xml = Patch(std::move(xml), "DTTM", dttm);
  xml = Patch(std::move(xml), "FLID", f.flid);
  xml = Patch(std::move(xml), "FFID", "MX-" + f.flno + "-" + f.mvin + "-" + f.sodt + "-D");
  xml = Patch(std::move(xml), field, std::to_string((visit / 5) % 10), true);
  TrafficMessage m = Message(TrafficKind::kFlop, "FLOP", field, seqn, dttm, std::move(xml));
  m.flid = f.flid;
  return m;
}

}  // namespace msgx::app
