#include "stream/dispatch/kafka_publisher.h"

#include <librdkafka/rdkafka.h>

#include <array>

#include "base/log.h"

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

PublishResult KafkaPublisher::Publish(std::span<const OutgoingMessage> batch) {
  PublishResult result;
  const int timeout_ms = static_cast<int>(options_.txn_timeout.count());
  auto outage = [&](const std::string& what) {
    result.outage = Status::Infra("kafka: " + what);
    return result;
  };
  // Handles a failed transactional call: fatal errors rebuild the producer.
  auto failed = [&](rd_kafka_error_t* e, const char* step) {
    std::string text = std::string(step) + ": " + ErrorText(e);
    if (rd_kafka_error_is_fatal(e) != 0) needs_rebuild_ = true;
    rd_kafka_error_destroy(e);
    return text;
  };

  if (needs_rebuild_ || rk_ == nullptr) {
    Destroy();
    Status s = Build();
    if (!s.ok()) return outage(s.message());
  }
  if (!txn_ready_) {
    if (rd_kafka_error_t* e = rd_kafka_init_transactions(rk_, timeout_ms)) {
      return outage(failed(e, "init_transactions"));
    }
    txn_ready_ = true;
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
    std::vector<rd_kafka_vu_t> vus(5 + m.headers.size());
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
    for (size_t h = 0; h < m.headers.size(); ++h) {
      rd_kafka_vu_t& vu = vus[5 + h];
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
    result.committed = true;
    return result;
  }
  // An abortable error is aborted here. A retriable one (a timeout) leaves
  // the commit running inside librdkafka, where an abort would conflict, so
  // the producer is rebuilt instead: the new instance's init_transactions
  // fences the old one and aborts its transaction.
  const bool abortable = rd_kafka_error_txn_requires_abort(e) != 0;
  if (rd_kafka_error_is_retriable(e) != 0) needs_rebuild_ = true;
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
