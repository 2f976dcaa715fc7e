// BenchTraffic: the messages `msgx bench` writes into the mailbox, shaped as
// an upstream AODB would send them for a schedule of flights
// (docs/performance.md#msgx-bench).
//
// Shape:
//   - Setup(): SCHD ADD messages of up to 50 FLTRs each that create the
//     bench's flights (FLID 800000001.., ALCD MX, SODT tomorrow airport time
//     from 06:00 on, one a minute). ADD upserts and never deletes, so flights
//     already in the state are left alone (a snapshot would delete the ones
//     in its window).
//   - Next(): steady traffic, in blocks of 20: 18 FLOP, 1 SCHD UPD and
//     1 STTS UPD (reference). FLOP j goes to flight j % flights and sets,
//     on that flight's visit v = j / flights, the field STND/RENO/RUNW/REMC/
//     TRML[v % 5] (the corpus's FLOP-<STYP>-1.xml, FLID and FFID replaced) to
//     the template's value with the digit (v / 5) % 10 appended, so every FLOP
//     changes its flight and yields one KAFKA:msg event. SCHD UPD k re-sends
//     flight k % flights with the next ACFT of a cycle of five (a change, one
//     KAFKA:schd event, pushed in batches); STTS UPD r upserts status code
//     BX<r % 20> with a new description (one KAFKA:ref event).
//   - SEQN: consecutive from `first_seqn`, wrapping 999999 -> 1 as the
//     corpus loader does; DTTM: the `now` given to each call.
//
// Every message is a valid change: tests/unit/bench_traffic_test.cc folds
// them and checks each ends SUCCEEDED with its one event.
//
// Thread-safety: a generator is not thread-safe; LoadTrafficTemplates is.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "tools/corpus_loader.h"

namespace msgx::app {

enum class TrafficKind { kFlop, kSchedule, kReference };

struct TrafficMessage {
  TrafficKind kind = TrafficKind::kFlop;
  std::string xml;
  std::string sndr = "AODB", type, styp;
  int seqn = 0;
  std::string dttm;  // yyyyMMddHHmmss
  std::string flid;  // FLOP: the flight it changes
};

// The corpus files the traffic is built from: FLOP-{STND,RENO,RUNW,REMC,
// TRML}-1.xml. kConfig when one is missing.
struct TrafficTemplates {
  std::map<std::string, std::string> flop;  // STYP -> XML
};
Result<TrafficTemplates> LoadTrafficTemplates(const std::string& corpus_dir);

class TrafficGenerator {
 public:
  // REQUIRES: flights >= 1, 1 <= first_seqn <= 999999, templates complete.
  TrafficGenerator(TrafficTemplates templates, int flights, int first_seqn);

  // The messages that create the flights; `now` is airport local time.
  std::vector<TrafficMessage> Setup(const LocalTime& now);
  // The next message of steady traffic.
  TrafficMessage Next(const LocalTime& now);

  int flights() const { return flights_; }

 private:
  struct Flight {
    std::string flid, flno, mvin, sodt;  // sodt ddMMMyyHHmm
  };
  int TakeSeqn();
  std::string Fltr(const Flight& f, const std::string& acft) const;

  TrafficTemplates t_;
  int flights_;
  int seqn_;
  std::vector<Flight> schedule_;
  std::int64_t count_ = 0, flops_ = 0, schds_ = 0, refs_ = 0;
};

}  // namespace msgx::app
