// The chained digest's SHA-256 (state/digest.h), which a fold computes twice
// per record (the chain and the body hash), against the same hash with
// OpenSSL 3's implicit fetch per call (EVP_sha256() at every
// EVP_DigestInit_ex, what state/digest.cc did before): the baseline.
//   build/bench/msgx_bench --benchmark_filter=Digest
#include <benchmark/benchmark.h>
#include <openssl/evp.h>

#include <string>

#include "state/digest.h"

namespace {

// About the size of one record's canonical decision bytes.
const std::string kCanon(400, 'x');

void BM_Digest_Chain(benchmark::State& state) {
  std::string d = msgx::GenesisDigest();
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop
    d = msgx::ChainDigest(d, kCanon);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Digest_Baseline_ImplicitFetch(benchmark::State& state) {
  std::string d = msgx::GenesisDigest();
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
    EVP_DigestUpdate(ctx, d.data(), d.size());
    EVP_DigestUpdate(ctx, kCanon.data(), kCanon.size());
    EVP_DigestFinal_ex(ctx, out, &len);
    EVP_MD_CTX_free(ctx);
    d.assign(reinterpret_cast<const char*>(out), len);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(BM_Digest_Chain);
BENCHMARK(BM_Digest_Baseline_ImplicitFetch);
