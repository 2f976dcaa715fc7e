// The fold's chained decision digest (docs/fold.md#digest): SHA-256 through
// OpenSSL's EVP interface.
//   d(-1) = 32 zero bytes
//   d(n)  = SHA-256( d(n-1) || canonical bytes of the decision of record n )
// It depends only on the sequence of decisions, never on batching.
//
// Thread-safety: free functions.
#pragma once

#include <string>
#include <string_view>

namespace msgx {

inline constexpr std::size_t kDigestSize = 32;

// The digest before the first record.
std::string GenesisDigest();
// SHA-256 of `bytes` (32 raw bytes).
std::string Sha256(std::string_view bytes);
// SHA-256(prev || bytes).
std::string ChainDigest(std::string_view prev, std::string_view bytes);
// Lower-case hex.
std::string ToHex(std::string_view bytes);

}  // namespace msgx
