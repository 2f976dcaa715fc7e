#include "state/digest.h"

#include <openssl/evp.h>

#include <cstdlib>

namespace msgx {
namespace {

std::string Hash(std::string_view a, std::string_view b) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  // Failures here mean OpenSSL is broken or out of memory: a bug, not a
  // message problem, so the process stops.
  if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx, a.data(), a.size()) != 1 ||
      EVP_DigestUpdate(ctx, b.data(), b.size()) != 1 || EVP_DigestFinal_ex(ctx, out, &len) != 1) {
    std::abort();
  }
  EVP_MD_CTX_free(ctx);
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
