#include "stream/dispatch/kafka_publisher.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>

#include "base/log.h"
#include "stream/dispatch/kafka_threads.h"

namespace msgx {
namespace {

// The producer safety settings (docs/dispatch.md#producer-safety-settings):
// the three settings, their aliases, and what is strong enough.
struct SafetyRule {
  const char* name;
  std::vector<std::string> aliases;
  bool (*strong)(const std::string&);
  const char* want;
};

const std::array<SafetyRule, 3>& SafetyRules() {
  static const std::array<SafetyRule, 3> rules{{
      {"acks",
       {"acks", "request.required.acks"},
       [](const std::string& v) { return v == "all" || v == "-1"; },
       "all"},
      {"enable.idempotence",
       {"enable.idempotence"},
       [](const std::string& v) { return v == "true"; },
       "true"},
      {"max.in.flight.requests.per.connection",
       {"max.in.flight.requests.per.connection", "max.in.flight"},
       [](const std::string& v) { return v == "1"; },
       "1"},
  }};
  return rules;
}

Status SafetyViolation(const std::string& key, const std::string& value, const char* want) {
  return Status::Config("kafka.producer." + key + ": \"" + value +
                        "\" weakens the producer safety settings (must be " + want +
                        "; docs/dispatch.md#producer-safety-settings)");
}

// librdkafka's own log lines go through msgx's JSON logger (syslog levels).
void OnLog(const rd_kafka_t* /*rk*/, int level, const char* fac, const char* buf) {
  auto lg = Logger("kafka");
  if (level <= 3) {
    lg->error("{}: {}", fac, buf);
  } else if (level == 4) {
    lg->warn("{}: {}", fac, buf);
  } else if (level <= 6) {
    lg->info("{}: {}", fac, buf);
  } else {
    lg->debug("{}: {}", fac, buf);
  }
}

std::string ErrorText(rd_kafka_error_t* e) {
  std::string s = rd_kafka_error_name(e);
  s += ": ";
  s += rd_kafka_error_string(e);
  return s;
}

}  // namespace

bool IsPermanentKafkaError(int err) {
  switch (static_cast<rd_kafka_resp_err_t>(err)) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
    case RD_KAFKA_RESP_ERR__BAD_MSG:
      return true;
    default:
      return false;
  }
}

KafkaPublisherOptions KafkaPublisherOptions::FromConfig(const Config& config,
                                                        std::string transactional_id) {
  KafkaPublisherOptions o;
  o.bootstrap_servers = config.kafka_bootstrap_servers;
  o.producer = config.kafka_producer;
  o.transactional_id = std::move(transactional_id);
  return o;
}

Result<std::unique_ptr<KafkaPublisher>> KafkaPublisher::Create(KafkaPublisherOptions options) {
  if (options.bootstrap_servers.empty()) {
    return Status::Config("kafka.bootstrap-servers: not configured");
  }
  // Refuse a weakened safety setting before librdkafka sees it, naming the
  // key as given.
  for (const SafetyRule& rule : SafetyRules()) {
    for (const std::string& alias : rule.aliases) {
      auto it = options.producer.find(alias);
      if (it != options.producer.end() && !rule.strong(it->second)) {
        return SafetyViolation(alias, it->second, rule.want);
      }
    }
  }
  std::unique_ptr<KafkaPublisher> p(new KafkaPublisher(std::move(options)));
  Status s = p->Build();
  if (!s.ok()) return s;
  // And read the effective values back from the producer itself.
  for (const SafetyRule& rule : SafetyRules()) {
    std::string v = p->EffectiveProperty(rule.name);
    if (!rule.strong(v)) return SafetyViolation(rule.name, v, rule.want);
  }
  return p;
}

KafkaPublisher::KafkaPublisher(KafkaPublisherOptions options) : options_(std::move(options)) {}

KafkaPublisher::~KafkaPublisher() { Destroy(); }

void KafkaPublisher::Destroy() {
  if (rk_ != nullptr) {
    rd_kafka_flush(rk_, 1000);
    rd_kafka_destroy(rk_);
  }
  rk_ = nullptr;
  txn_ready_ = false;
}

Status KafkaPublisher::Build() {
  std::array<char, 512> err{};
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& k, const std::string& v, bool user) -> Status {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err.data(), err.size()) != RD_KAFKA_CONF_OK) {
      return Status::Config((user ? "kafka.producer." : "kafka.") + k + ": " + err.data());
    }
    return Status::Ok();
  };
  std::vector<std::pair<std::string, std::string>> settings{
      {"bootstrap.servers", options_.bootstrap_servers},
      {"acks", "all"},
      {"enable.idempotence", "true"},
      {"max.in.flight.requests.per.connection", "1"},
      {"transactional.id", options_.transactional_id},
      {"log_level", "4"},
  };
  for (const auto& [k, v] : settings) {
    Status s = set(k, v, false);
    if (!s.ok()) {
      rd_kafka_conf_destroy(conf);
      return s;
    }
  }
  for (const auto& [k, v] : options_.producer) {
    Status s = set(k, v, true);
    if (!s.ok()) {
      rd_kafka_conf_destroy(conf);
      return s;
    }
  }
  if (Status s = PrepareKafkaThreads(conf); !s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_dr_msg_cb(conf, &KafkaPublisher::OnDelivery);
  rd_kafka_conf_set_log_cb(conf, OnLog);
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err.data(), err.size());
  if (rk_ == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::Config(std::string("kafka.producer: ") + err.data());
  }
  needs_rebuild_ = false;
  return Status::Ok();
}

void KafkaPublisher::OnDelivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m, void* opaque) {
  auto* self = static_cast<KafkaPublisher*>(opaque);
  const auto n = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(m->_private));
  if (n >= self->delivery_base_ && n - self->delivery_base_ < self->delivery_.size()) {
    self->delivery_[n - self->delivery_base_] = static_cast<int>(m->err);
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->offset < 0) ++self->unplaced_;
  }
}

std::string KafkaPublisher::EffectiveProperty(const std::string& name) const {
  if (rk_ == nullptr) return "";
  std::array<char, 512> buf{};
  size_t size = buf.size();
  if (rd_kafka_conf_get(rd_kafka_conf(rk_), name.c_str(), buf.data(), &size) != RD_KAFKA_CONF_OK) {
    return "";
  }
  return std::string(buf.data());
}

std::string KafkaPublisher::TxnFailure(rd_kafka_error_t* e, const char* step) {
  std::string text = std::string(step) + ": " + ErrorText(e);
  if (rd_kafka_error_is_fatal(e) != 0) needs_rebuild_ = true;
  rd_kafka_error_destroy(e);
  return text;
}

Status KafkaPublisher::Prepare() {
  if (needs_rebuild_ || rk_ == nullptr) {
    Destroy();
    Status s = Build();
    if (!s.ok()) return Status::Infra("kafka: " + s.message());
  }
  if (!txn_ready_) {
    const int timeout_ms = static_cast<int>(options_.txn_timeout.count());
    if (rd_kafka_error_t* e = rd_kafka_init_transactions(rk_, timeout_ms)) {
      return Status::Infra("kafka: " + TxnFailure(e, "init_transactions"));
    }
    txn_ready_ = true;
  }
  return Status::Ok();
}

Result<std::optional<std::string>> KafkaPublisher::ReadProgress(const std::string& topic,
                                                                const std::string& key) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + options_.txn_timeout;
  const int timeout_ms = static_cast<int>(options_.txn_timeout.count());
  const std::string where = "kafka: progress of " + key + " in " + topic + ": ";
  std::array<char, 512> err{};
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::vector<std::pair<std::string, std::string>> settings{
      {"bootstrap.servers", options_.bootstrap_servers},
      {"group.id", "msgx-progress-reader"},  // never joined: the partition is assigned
      {"isolation.level", "read_committed"},
      {"enable.auto.commit", "false"},
      {"auto.offset.reset", "earliest"},
      {"enable.partition.eof", "true"},
      {"fetch.wait.max.ms", "50"},
      {"log_level", "4"},
  };
  for (const auto& [k, v] : options_.producer) {
    for (const char* prefix :
         {"security.", "sasl.", "ssl.", "socket.", "client.dns.", "broker.address."}) {
      if (k.rfind(prefix, 0) == 0) settings.emplace_back(k, v);
    }
  }
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err.data(), err.size()) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status::Config("kafka.producer." + k + ": " + err.data());
    }
  }
  if (Status s = PrepareKafkaThreads(conf); !s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  rd_kafka_conf_set_log_cb(conf, OnLog);
  rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err.data(), err.size());
  if (c == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::Config(std::string("kafka: progress reader: ") + err.data());
  }
  struct Closer {
    rd_kafka_t* c;
    ~Closer() {
      rd_kafka_consumer_close(c);
      rd_kafka_destroy(c);
    }
  } closer{c};

  // Does the topic exist? Without it nothing was ever committed through it.
  {
    rd_kafka_topic_t* t = rd_kafka_topic_new(c, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(c, 0, t, &md, timeout_ms);
    rd_kafka_topic_destroy(t);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) return Status::Infra(where + rd_kafka_err2str(e));
    const rd_kafka_resp_err_t te = md->topic_cnt == 1 ? md->topics[0].err : e;
    const int partitions = md->topic_cnt == 1 ? md->topics[0].partition_cnt : 0;
    rd_kafka_metadata_destroy(md);
    if (te == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) return std::optional<std::string>();
    if (te != RD_KAFKA_RESP_ERR_NO_ERROR) return Status::Infra(where + rd_kafka_err2str(te));
    if (partitions == 0) return std::optional<std::string>();
  }
  std::int64_t low = 0;
  std::int64_t high = 0;
  if (const rd_kafka_resp_err_t e =
          rd_kafka_query_watermark_offsets(c, topic.c_str(), 0, &low, &high, timeout_ms)) {
    return Status::Infra(where + rd_kafka_err2str(e));
  }
  // Read the partition's tail to its end (for read_committed: the last
  // stable offset), widening the tail until the key shows or the partition
  // is read whole. The last value of the key wins.
  std::string last_error = "timed out";
  for (std::int64_t window = 64; high > low; window *= 16) {
    const std::int64_t start = std::max(low, high - window);
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), 0)->offset = start;
    const rd_kafka_resp_err_t ae = rd_kafka_assign(c, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    if (ae != RD_KAFKA_RESP_ERR_NO_ERROR) return Status::Infra(where + rd_kafka_err2str(ae));
    std::optional<std::string> value;
    bool at_end = false;
    while (!at_end) {
      if (Clock::now() >= deadline) return Status::Infra(where + last_error);
      rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 100);
      if (m == nullptr) continue;
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        at_end = true;
      } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        last_error = rd_kafka_message_errstr(m);
      } else if (m->key_len == key.size() &&
                 (key.empty() || std::memcmp(m->key, key.data(), key.size()) == 0)) {
        value.emplace(static_cast<const char*>(m->payload), m->len);
      }
      rd_kafka_message_destroy(m);
    }
    if (value || start == low) return value;
  }
  return std::optional<std::string>();
}

PublishResult KafkaPublisher::Publish(std::span<const OutgoingMessage> batch) {
  PublishResult result;
  const int timeout_ms = static_cast<int>(options_.txn_timeout.count());
  auto outage = [&](const std::string& what) {
    result.outage = Status::Infra("kafka: " + what);
    return result;
  };
  auto failed = [&](rd_kafka_error_t* e, const char* step) { return TxnFailure(e, step); };

  if (Status s = Prepare(); !s.ok()) {
    result.outage = s;
    return result;
  }
  if (rd_kafka_error_t* e = rd_kafka_begin_transaction(rk_)) {
    needs_rebuild_ = true;  // the transaction state is unknown
    return outage(failed(e, "begin_transaction"));
  }

  // Messages are numbered; a report for a message of an earlier batch (a
  // commit that timed out leaves messages inside librdkafka) is ignored.
  delivery_base_ = next_message_;
  next_message_ += batch.size();
  delivery_.assign(batch.size(), kNoReport);
  unplaced_ = 0;
  const std::vector<int>& delivery = delivery_;
  auto abort_txn = [&] {
    if (rd_kafka_error_t* e = rd_kafka_abort_transaction(rk_, timeout_ms)) {
      Logger("dispatch")->warn("kafka abort_transaction: {}", ErrorText(e));
      rd_kafka_error_destroy(e);
      needs_rebuild_ = true;  // start clean: a new producer fences the old txn
    }
  };

  for (size_t i = 0; i < batch.size(); ++i) {
    const OutgoingMessage& m = batch[i];
    // rd_kafka_produceva with a vu array: the RD_KAFKA_V_* macros use C casts.
    const size_t fixed = m.partition >= 0 ? 6 : 5;
    std::vector<rd_kafka_vu_t> vus(fixed + m.headers.size());
    vus[0].vtype = RD_KAFKA_VTYPE_TOPIC;
    vus[0].u.cstr = m.topic.c_str();
    vus[1].vtype = RD_KAFKA_VTYPE_KEY;
    vus[1].u.mem = {const_cast<char*>(m.key.data()), m.key.size()};  // copied (F_COPY)
    vus[2].vtype = RD_KAFKA_VTYPE_VALUE;
    vus[2].u.mem = {const_cast<char*>(m.value.data()), m.value.size()};  // copied (F_COPY)
    vus[3].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vus[3].u.i = RD_KAFKA_MSG_F_COPY;
    vus[4].vtype = RD_KAFKA_VTYPE_OPAQUE;
    // The opaque is a number, not an address (OnDelivery range-checks it).
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    vus[4].u.ptr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(delivery_base_ + i));
    if (m.partition >= 0) {
      vus[5].vtype = RD_KAFKA_VTYPE_PARTITION;
      vus[5].u.i32 = m.partition;
    }
    for (size_t h = 0; h < m.headers.size(); ++h) {
      rd_kafka_vu_t& vu = vus[fixed + h];
      vu.vtype = RD_KAFKA_VTYPE_HEADER;
      vu.u.header.name = m.headers[h].first.c_str();
      vu.u.header.val = m.headers[h].second.data();
      vu.u.header.size = static_cast<ssize_t>(m.headers[h].second.size());
    }
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (;;) {
      rd_kafka_error_t* pe = rd_kafka_produceva(rk_, vus.data(), vus.size());
      err = pe == nullptr ? RD_KAFKA_RESP_ERR_NO_ERROR : rd_kafka_error_code(pe);
      if (pe != nullptr) rd_kafka_error_destroy(pe);
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) break;
      rd_kafka_poll(rk_, 50);
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      abort_txn();
      if (IsPermanentKafkaError(err)) {
        result.permanent_index = i;
        result.permanent_error = std::string(rd_kafka_err2name(err)) + ": " + rd_kafka_err2str(err);
        return result;
      }
      return outage(std::string("produce: ") + rd_kafka_err2str(err));
    }
  }

  rd_kafka_error_t* e = rd_kafka_commit_transaction(rk_, timeout_ms);
  rd_kafka_poll(rk_, 0);  // serve any remaining delivery reports
  if (e == nullptr) {
    if (unplaced_ > 0) {
      Logger("dispatch")
          ->warn(
              "kafka: the broker acknowledged {} of {} messages of a committed transaction "
              "without an offset (as duplicates of requests it had appended already)",
              unplaced_, batch.size());
    }
    // librdkafka commits only when every message was acknowledged; a report
    // missing or failed here would be a commit that left messages out
    // (docs/crash-safety.md#the-mock-clusters-duplicates).
    int unreported = 0;
    int refused = 0;
    for (const int d : delivery) {
      if (d == kNoReport) {
        ++unreported;
      } else if (d != 0) {
        ++refused;
      }
    }
    if (unreported > 0 || refused > 0) {
      Logger("dispatch")
          ->warn(
              "kafka: a committed transaction of {} messages has {} without a delivery report "
              "and {} whose delivery failed",
              batch.size(), unreported, refused);
    }
    result.committed = true;
    return result;
  }
  // An abortable error is aborted here. A retriable one (a timeout) leaves
  // the commit running inside librdkafka, where an abort would conflict, so
  // the producer is rebuilt instead: the new instance's init_transactions
  // fences the old one and aborts its transaction.
  const bool abortable = rd_kafka_error_txn_requires_abort(e) != 0;
  // Whatever is not aborted here has an unknown outcome: a new producer's
  // init_transactions settles it before the next progress read.
  if (rd_kafka_error_is_retriable(e) != 0 || !abortable) needs_rebuild_ = true;
  std::string text = failed(e, "commit_transaction");
  if (abortable) abort_txn();
  for (size_t i = 0; i < delivery.size(); ++i) {
    // After any failed delivery the idempotent producer's sequence numbers
    // have a gap; its next transaction would fail OUT_OF_ORDER_SEQUENCE.
    if (delivery[i] != kNoReport && delivery[i] != 0) needs_rebuild_ = true;
    if (delivery[i] != kNoReport && IsPermanentKafkaError(delivery[i])) {
      // The idempotent producer skipped the failed sequence numbers; its
      // next transaction would fail OUT_OF_ORDER_SEQUENCE. Start clean.
      needs_rebuild_ = true;
      result.permanent_index = i;
      result.permanent_error =
          std::string(rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(delivery[i]))) + ": " +
          rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(delivery[i]));
      return result;
    }
  }
  return outage(text);
}

}  // namespace msgx
