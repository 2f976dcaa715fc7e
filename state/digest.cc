#include "state/digest.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <memory>

namespace msgx {
namespace {

// OpenSSL 3 looks the algorithm up in its providers at every
// EVP_DigestInit_ex(EVP_sha256()) (an "implicit fetch", with locks): 39% of
// each hash of a record's size (bench/digest_bench.cc), and a fold hashes
// every record twice. The algorithm is fetched once and each thread reuses
// one context.
const EVP_MD* Sha256Md() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

struct CtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::string Hash(std::string_view a, std::string_view b) {
  thread_local std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // Failures here mean OpenSSL is broken or out of memory: a bug, not a
  // message problem, so the process stops.
  if (!ctx || Sha256Md() == nullptr || EVP_DigestInit_ex(ctx.get(), Sha256Md(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), a.data(), a.size()) != 1 ||
      EVP_DigestUpdate(ctx.get(), b.data(), b.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), out, &len) != 1) {
    std::abort();
  }
  return std::string(reinterpret_cast<const char*>(out), len);
}

}  // namespace

std::string GenesisDigest() { return std::string(kDigestSize, '\0'); }
std::string Sha256(std::string_view bytes) { return Hash(bytes, {}); }
std::string ChainDigest(std::string_view prev, std::string_view bytes) { return Hash(prev, bytes); }

std::string ToHex(std::string_view bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(kHex[u >> 4]);
    out.push_back(kHex[u & 15]);
  }
  return out;
}

}  // namespace msgx
