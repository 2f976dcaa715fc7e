#include "base/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <array>
#include <chrono>
#include <ctime>
#include <mutex>

namespace msgx {
namespace {

// Marks a message produced by WithTrace: "\x1f<trace>\x1f<message>".
constexpr char kTraceMark = '\x1f';

void AppendJsonString(std::string_view s, spdlog::memory_buf_t& out) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\r':
        out.append(std::string_view("\\r"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      default:
        if (c < 0x20) {
          std::array<char, 8> buf{};
          int n = std::snprintf(buf.data(), buf.size(), "\\u%04x", c);
          out.append(std::string_view(buf.data(), static_cast<size_t>(n)));
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

// The level as the configuration spells it (log.level), not spdlog's
// "warning"; "critical", which msgx does not use, stays spdlog's.
std::string_view LevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return "trace";
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    case spdlog::level::err:
      return "error";
    default: {
      const auto name = spdlog::level::to_string_view(level);
      return {name.data(), name.size()};
    }
  }
}

// One JSON object per line (see log.h).
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using namespace std::chrono;
    const auto us = duration_cast<microseconds>(msg.time.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(us / 1'000'000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    std::array<char, 40> ts{};
    size_t n = std::strftime(ts.data(), ts.size(), "%Y-%m-%dT%H:%M:%S", &tm);
    n += static_cast<size_t>(std::snprintf(ts.data() + n, ts.size() - n, ".%06lldZ",
                                           static_cast<long long>(us % 1'000'000)));

    std::string_view text(msg.payload.data(), msg.payload.size());
    std::string_view trace;
    if (!text.empty() && text.front() == kTraceMark) {
      size_t end = text.find(kTraceMark, 1);
      if (end != std::string_view::npos) {
        trace = text.substr(1, end - 1);
        text = text.substr(end + 1);
      }
    }
    dest.append(std::string_view("{\"ts\":\""));
    dest.append(std::string_view(ts.data(), n));
    dest.append(std::string_view("\",\"level\":"));
    AppendJsonString(LevelName(msg.level), dest);
    dest.append(std::string_view(",\"component\":"));
    AppendJsonString(std::string_view(msg.logger_name.data(), msg.logger_name.size()), dest);
    dest.append(std::string_view(",\"msg\":"));
    AppendJsonString(text, dest);
    if (!trace.empty()) {
      dest.append(std::string_view(",\"trace\":"));
      AppendJsonString(trace, dest);
    }
    dest.append(std::string_view("}\n"));
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

std::mutex g_mu;
spdlog::sink_ptr g_sink;                                  // guarded by g_mu
spdlog::level::level_enum g_level = spdlog::level::info;  // guarded by g_mu

spdlog::sink_ptr SinkLocked() {
  if (!g_sink) {
    g_sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    g_sink->set_formatter(std::make_unique<JsonFormatter>());
  }
  return g_sink;
}

}  // namespace

Status InitLogging(std::string_view level) {
  const std::string l(level);
  spdlog::level::level_enum lv = spdlog::level::from_str(l);
  if (lv == spdlog::level::off && l != "off") {
    return Status::Config("log.level: \"" + l + "\" is not one of trace|debug|info|warn|error|off");
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_level = lv;
  SinkLocked();
  spdlog::apply_all([lv](const std::shared_ptr<spdlog::logger>& lg) { lg->set_level(lv); });
  return Status::Ok();
}

std::shared_ptr<spdlog::logger> Logger(const std::string& component) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto existing = spdlog::get(component)) return existing;
  auto lg = std::make_shared<spdlog::logger>(component, SinkLocked());
  lg->set_level(g_level);
  lg->flush_on(spdlog::level::warn);
  spdlog::register_logger(lg);
  return lg;
}

std::string WithTrace(std::string_view trace, std::string_view message) {
  std::string s;
  s.reserve(trace.size() + message.size() + 2);
  s += kTraceMark;
  s += trace;
  s += kTraceMark;
  s += message;
  return s;
}

}  // namespace msgx
