#include "base/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "base/heap_metrics.h"
#include "base/process_metrics.h"
#include "tests/support/exposition.h"

namespace msgx {
namespace {

using testing::ParseExposition;

TEST(MetricsTest, RendersCountersGaugesAndHistogramsInTheTextFormat) {
  Metrics m;
  m.GetCounter("msgx_messages_total", "Outcomes", {{"state", "DEAD"}, {"error_class", "MALFORMED"}})
      ->Add(2);
  m.GetCounter("msgx_messages_total", "Outcomes", {{"state", "SUCCEEDED"}, {"error_class", "none"}})
      ->Add();
  m.GetGauge("msgx_stage_lag_records", "Lag", {{"stage", "say \"hi\"\n\\"}})->Set(1.5);
  // The same series again, labels in another order, is the same counter.
  Counter* again = m.GetCounter("msgx_messages_total", "Outcomes",
                                {{"error_class", "MALFORMED"}, {"state", "DEAD"}});
  again->Add(1);
  EXPECT_EQ(again->value(), 3);
  Histogram* h = m.GetHistogram("msgx_fold_batch_records", "Batch", {1, 10, 100}, {{"x", "y"}});
  h->Observe(1);
  h->Observe(5);
  h->Observe(500);

  const std::string text = m.Render();
  auto e = ParseExposition(text);
  ASSERT_TRUE(e.ok()) << e.status().ToString() << "\n" << text;
  const auto* messages = e->Find("msgx_messages_total");
  ASSERT_NE(messages, nullptr) << text;
  EXPECT_EQ(messages->type, "counter");
  EXPECT_EQ(messages->help, "Outcomes");
  auto dead = e->Samples("msgx_messages_total", {{"state", "DEAD"}, {"error_class", "MALFORMED"}});
  ASSERT_EQ(dead.size(), 1U);
  EXPECT_EQ(dead[0].value, 3);
  auto lag = e->Samples("msgx_stage_lag_records");
  ASSERT_EQ(lag.size(), 1U);
  EXPECT_EQ(lag[0].labels.at("stage"), "say \"hi\"\n\\");  // escaped and read back
  EXPECT_EQ(lag[0].value, 1.5);
  EXPECT_EQ(e->Find("msgx_stage_lag_records")->type, "gauge");

  ASSERT_NE(e->Find("msgx_fold_batch_records"), nullptr);
  EXPECT_EQ(e->Find("msgx_fold_batch_records")->type, "histogram");
  auto le = [&](const std::string& bound) {
    auto b = e->Samples("msgx_fold_batch_records_bucket", {{"x", "y"}, {"le", bound}});
    return b.size() == 1 ? b[0].value : -1;
  };
  EXPECT_EQ(le("1"), 1);
  EXPECT_EQ(le("10"), 2);
  EXPECT_EQ(le("100"), 2);
  EXPECT_EQ(le("+Inf"), 3);
  EXPECT_EQ(e->Samples("msgx_fold_batch_records_count")[0].value, 3);
  EXPECT_EQ(e->Samples("msgx_fold_batch_records_sum")[0].value, 506);
}

TEST(MetricsTest, RefusesNamesPrometheusRefuses) {
  Metrics m;
  EXPECT_THROW(m.GetCounter("bad name", "x"), std::invalid_argument);
  m.GetGauge("msgx_twice", "x");
  EXPECT_THROW(m.GetCounter("msgx_twice", "x"), std::invalid_argument);
}

TEST(MetricsTest, ScrapeHooksRunAtEachRenderUntilRemoved) {
  Metrics m;
  int runs = 0;
  Gauge* g = m.GetGauge("msgx_hooked", "x");
  const int id = m.AddScrapeHook([&] { g->Set(++runs); });
  EXPECT_NE(m.Render().find("msgx_hooked 1\n"), std::string::npos);
  EXPECT_NE(m.Render().find("msgx_hooked 2\n"), std::string::npos);
  m.RemoveScrapeHook(id);
  m.Render();
  EXPECT_EQ(runs, 2);
}

TEST(MetricsTest, TheGlobalRegistryCarriesTheProcessFamilies) {
  auto e = ParseExposition(Metrics::Global().Render());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  for (const char* name : {"process_cpu_seconds_total", "process_resident_memory_bytes",
                           "process_virtual_memory_bytes", "process_start_time_seconds",
                           "process_open_fds", "process_max_fds", "process_threads"}) {
    ASSERT_NE(e->Find(name), nullptr) << name;
    ASSERT_EQ(e->Find(name)->samples.size(), 1U) << name;
  }
  EXPECT_EQ(e->Find("process_cpu_seconds_total")->type, "counter");
  EXPECT_GT(e->Find("process_resident_memory_bytes")->samples[0].value, 0);
  EXPECT_GT(e->Find("process_open_fds")->samples[0].value, 2);  // stdin, stdout, stderr at least
  EXPECT_GT(e->Find("process_start_time_seconds")->samples[0].value, 1.5e9);
}

TEST(HeapMetricsTest, InUseFollowsAnAllocationAndItsFree) {
  constexpr std::size_t kBytes = std::size_t{48} << 20;
  constexpr std::size_t kSlack = std::size_t{4} << 20;  // what other threads may do meanwhile
  const HeapFigures before = ReadHeapFigures();
  void* volatile block = std::malloc(kBytes);
  EXPECT_NE(block, nullptr);
  const HeapFigures during = ReadHeapFigures();
  std::free(block);
  const HeapFigures after = ReadHeapFigures();
  EXPECT_GE(during.in_use + kSlack, before.in_use + kBytes);
  EXPECT_LE(after.in_use + kBytes, during.in_use + kSlack);

  // The global registry reports the same figures.
  auto e = ParseExposition(Metrics::Global().Render());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  for (const char* name :
       {"msgx_malloc_in_use_bytes", "msgx_malloc_free_bytes", "msgx_malloc_arena_bytes"}) {
    ASSERT_NE(e->Find(name), nullptr) << name;
    EXPECT_EQ(e->Find(name)->type, "gauge") << name;
  }
  EXPECT_GT(e->Find("msgx_malloc_in_use_bytes")->samples[0].value, 0);
  EXPECT_GT(e->Find("msgx_malloc_arena_bytes")->samples[0].value, 0);
}

TEST(ProcessMetricsTest, ParsesProcStatWithAnAwkwardCommandName) {
  // Fields: pid (comm) state ppid ... utime=14 stime=15 ... threads=20,
  // starttime=22, vsize=23, rss=24.
  const std::string stat =
      "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 1000 "
      "123456789 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
  auto s = ParseProcStat(stat, 1'700'000'000, 100, 4096);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);
  EXPECT_DOUBLE_EQ(s->threads, 7);
  EXPECT_DOUBLE_EQ(s->start_time_seconds, 1'700'000'010.0);
  EXPECT_DOUBLE_EQ(s->virtual_bytes, 123456789);
  EXPECT_DOUBLE_EQ(s->resident_bytes, 300.0 * 4096);
  EXPECT_FALSE(ParseProcStat("4242 (cmd) S 1 2 3", 0, 100, 4096).has_value());
  EXPECT_FALSE(ParseProcStat("no parenthesis", 0, 100, 4096).has_value());
  EXPECT_EQ(ParseBootTime("cpu 1 2 3\nbtime 1796111696\nprocesses 9\n"), 1796111696);
  EXPECT_FALSE(ParseBootTime("cpu 1 2 3\n").has_value());
}

TEST(ExpositionTest, AcceptsWhatTheFormatAllows) {
  auto e = ParseExposition(
      "# a comment\n"
      "\n"
      "# HELP x_total Help with \\\\ and \\n.\n"
      "# TYPE x_total counter\n"
      "x_total{a=\"1\",b=\"\",} 3 1700000000000\n"
      "x_total{a=\"2\"} 1e3\n"
      "untyped_one NaN\n"
      "# TYPE h histogram\n"
      "h_bucket{le=\"0.5\"} 1\n"
      "h_bucket{le=\"+Inf\"} 2\n"
      "h_sum 1.5\n"
      "h_count 2\n"
      "# TYPE s summary\n"
      "s{quantile=\"0.5\"} 1\n"
      "s_sum 1\n"
      "s_count 1\n");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->Find("untyped_one")->type, "untyped");
  EXPECT_EQ(e->Samples("x_total", {{"a", "2"}})[0].value, 1000);
  EXPECT_EQ(e->Find("h")->samples.size(), 4U);
}

// Each text breaks one rule of the format, and is refused.
TEST(ExpositionTest, RefusesEachBrokenRule) {
  const char* const kNotAscending =
      "# TYPE h histogram\nh_bucket{le=\"2\"} 2\nh_bucket{le=\"1\"} 1\n"
      "h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n";
  const char* const kCountsFall =
      "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
      "h_sum 1\nh_count 1\n";
  const char* const kBroken[] = {
      "x 1",                                                                // no final newline
      "1x 1\n",                                                             // bad name
      "x{1a=\"v\"} 1\n",                                                    // bad label name
      "x{__a=\"v\"} 1\n",                                                   // reserved label name
      "x{a=v} 1\n",                                                         // unquoted value
      "x{a=\"v\" b=\"w\"} 1\n",                                             // no comma
      "x{a=\"v\",a=\"w\"} 1\n",                                             // label twice
      "x{a=\"\\t\"} 1\n",                                                   // bad escape
      "x{a=\"v} 1\n",                                                       // unterminated value
      "x one\n",                                                            // bad value
      "x 1 soon\n",                                                         // bad timestamp
      "x\n",                                                                // no value
      "x 1\nx 2\n",                                                         // series twice
      "# TYPE x counter\n# TYPE x counter\nx 1\n",                          // TYPE twice
      "# HELP x a\n# HELP x b\nx 1\n",                                      // HELP twice
      "# TYPE x thing\nx 1\n",                                              // unknown type
      "x 1\n# TYPE x gauge\n",                                              // TYPE after samples
      "# TYPE x gauge\nx 1\ny 1\nx{a=\"b\"} 2\n",                           // interleaved
      "# TYPE x counter\nx -1\n",                                           // negative counter
      "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",     // no +Inf
      "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",  // count differs
      "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",           // no _sum
      "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\n",             // no _count
      "# TYPE h histogram\nh_bucket 1\nh_sum 1\nh_count 1\n",               // no le
      kNotAscending,
      kCountsFall,
      "# TYPE s summary\ns 1\ns_sum 1\ns_count 1\n",  // no quantile
  };
  for (const char* text : kBroken) {
    EXPECT_FALSE(ParseExposition(text).ok()) << text;
  }
}

}  // namespace
}  // namespace msgx
