#include "stream/dispatch/kafka_threads.h"

#include <atomic>
#include <string>

#include "base/fatal_report.h"

namespace msgx {
namespace {

constexpr const char* kInterceptor = "msgx-threads";

std::atomic<std::int64_t> g_with_stack{0};

// On each thread librdkafka starts, before it runs anything of its own.
rd_kafka_resp_err_t OnThreadStart(rd_kafka_t* /*rk*/, rd_kafka_thread_type_t /*type*/,
                                  const char* /*name*/, void* /*opaque*/) {
  PrepareThreadForFatalReport();
  if (ThreadHasSignalStack()) g_with_stack.fetch_add(1, std::memory_order_relaxed);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

// When the client is made from the configuration: adds the thread hook to it.
rd_kafka_resp_err_t OnNew(rd_kafka_t* rk, const rd_kafka_conf_t* /*conf*/, void* /*opaque*/,
                          char* /*errstr*/, size_t /*errstr_size*/) {
  return rd_kafka_interceptor_add_on_thread_start(rk, kInterceptor, &OnThreadStart, nullptr);
}

}  // namespace

Status PrepareKafkaThreads(rd_kafka_conf_t* conf) {
  const rd_kafka_resp_err_t err =
      rd_kafka_conf_interceptor_add_on_new(conf, kInterceptor, &OnNew, nullptr);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__CONFLICT) {
    return Status::Internal(std::string("librdkafka thread interceptor: ") + rd_kafka_err2str(err));
  }
  return Status::Ok();
}

std::int64_t KafkaThreadsWithSignalStack() { return g_with_stack.load(std::memory_order_relaxed); }

}  // namespace msgx
