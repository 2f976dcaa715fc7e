#include "codecs/transcode.h"

#include <iconv.h>

#include <cerrno>
#include <cstring>

namespace msgx::sis {
namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool IsUtf8Name(std::string_view enc) {
  const std::string l = Lower(enc);
  return l == "utf-8" || l == "utf8";
}

Status Invalid(std::string_view enc, std::size_t offset, std::string_view why) {
  return Status::Malformed("invalid " + std::string(enc) + " bytes at offset " +
                           std::to_string(offset) + ": " + std::string(why));
}

// A UTF-8 copy, checked, without a UTF-8 BOM.
Result<std::string> CheckedUtf8(std::string_view s) {
  if (s.substr(0, 3) == kUtf8Bom) s.remove_prefix(3);
  const std::size_t bad = FindInvalidUtf8(s);
  if (bad != std::string_view::npos) return Invalid("UTF-8", bad, "not a UTF-8 sequence");
  return std::string(s);
}

}  // namespace

std::string DeclaredEncoding(std::string_view bytes) {
  if (bytes.substr(0, 3) == kUtf8Bom) bytes.remove_prefix(3);
  if (bytes.substr(0, 5) != "<?xml") return "";
  std::string_view prolog = bytes.substr(0, 256);
  const std::size_t end = prolog.find("?>");
  if (end == std::string_view::npos) return "";
  prolog = prolog.substr(0, end);
  const std::size_t at = prolog.find("encoding");
  if (at == std::string_view::npos) return "";
  std::size_t i = at + 8;
  while (i < prolog.size() && (prolog[i] == ' ' || prolog[i] == '\t')) ++i;
  if (i >= prolog.size() || prolog[i] != '=') return "";
  ++i;
  while (i < prolog.size() && (prolog[i] == ' ' || prolog[i] == '\t')) ++i;
  if (i >= prolog.size() || (prolog[i] != '"' && prolog[i] != '\'')) return "";
  const char q = prolog[i++];
  const std::size_t close = prolog.find(q, i);
  if (close == std::string_view::npos) return "";
  return std::string(prolog.substr(i, close - i));
}

std::size_t FindInvalidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // Fast path over ASCII, 8 bytes at a time.
    while (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    std::uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

Result<std::string> TranscodeToUtf8(std::string_view bytes, std::string_view encoding) {
  if (IsUtf8Name(encoding)) return CheckedUtf8(bytes);
  const std::string enc(encoding);
  iconv_t cd = iconv_open("UTF-8", enc.c_str());
  if (cd ==
      reinterpret_cast<iconv_t>(-1)) {  // NOLINT(performance-no-int-to-ptr): iconv's error value
    return Status::CodecError("cannot transcode from encoding \"" + enc + "\"");
  }
  std::string out;
  out.resize(bytes.size() * 2 + 16);
  char* in_ptr = const_cast<char*>(bytes.data());
  std::size_t in_left = bytes.size();
  char* out_ptr = out.data();
  std::size_t out_left = out.size();
  Status error;
  while (in_left > 0) {
    const std::size_t rc = iconv(cd, &in_ptr, &in_left, &out_ptr, &out_left);
    if (rc != static_cast<std::size_t>(-1)) break;
    const std::size_t offset = bytes.size() - in_left;
    if (errno == E2BIG) {
      const std::size_t used = out.size() - out_left;
      out.resize(out.size() * 2);
      out_ptr = out.data() + used;
      out_left = out.size() - used;
      continue;
    }
    error = Invalid(enc, offset,
                    errno == EINVAL ? "incomplete multibyte sequence at end" : "invalid sequence");
    break;
  }
  iconv_close(cd);
  if (!error.ok()) return error;
  out.resize(out.size() - out_left);
  return CheckedUtf8(out);
}

Result<std::string> ToUtf8(std::string_view bytes, InputOrigin origin,
                           std::string_view encoding_override) {
  if (origin == InputOrigin::kUnicodeText) return CheckedUtf8(bytes);
  if (bytes.substr(0, 3) == kUtf8Bom) return CheckedUtf8(bytes);
  if (bytes.substr(0, 2) == "\xFF\xFE") return TranscodeToUtf8(bytes.substr(2), "UTF-16LE");
  if (bytes.substr(0, 2) == "\xFE\xFF") return TranscodeToUtf8(bytes.substr(2), "UTF-16BE");
  std::string enc(encoding_override);
  if (enc.empty()) enc = DeclaredEncoding(bytes);
  if (enc.empty()) return CheckedUtf8(bytes);
  return TranscodeToUtf8(bytes, enc);
}

}  // namespace msgx::sis
