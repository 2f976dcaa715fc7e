#include "codecs/sis_xml.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <vector>

namespace msgx::sis::xml {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

bool IsData(const xml_node& n) {
  return n.type() == pugi::node_pcdata || n.type() == pugi::node_cdata;
}

std::string TextOf(const xml_node& node) {
  xml_node first;
  int count = 0;
  for (xml_node c = node.first_child(); c; c = c.next_sibling()) {
    if (IsData(c)) {
      if (count++ == 0) first = c;
    }
  }
  return TextOfData(node, first, count);
}

std::string TextOfData(const xml_node& node, const xml_node& first_data, int data_count) {
  if (data_count == 0) return {};
  if (data_count == 1) return std::string(Trim(first_data.value()));
  std::string all;
  for (xml_node c = node.first_child(); c; c = c.next_sibling()) {
    if (IsData(c)) all += c.value();
  }
  return std::string(Trim(all));
}

bool IsRecordName(std::string_view name, std::string_view msg_type) {
  return name == "FLOP" || name == "FLTR" || name == msg_type;
}

std::string PathOf(xml_node node, std::string_view msg_type) {
  std::vector<std::string> parts;
  for (xml_node n = node; n && n.type() == pugi::node_element; n = n.parent()) {
    const std::string_view name = n.name();
    xml_node parent = n.parent();
    if (!parent || parent.type() != pugi::node_element) break;  // MSG itself
    const bool container =
        (name == "SCHD" || name == "SCHS") && std::string_view(parent.name()) == "MSG";
    if (container && n != node) continue;
    int index = 0, total = 0;
    for (xml_node s = parent.child(n.name()); s; s = s.next_sibling(n.name())) {
      ++total;
      if (s == n) index = total;
    }
    std::string part(name);
    if (IsRecordName(name, msg_type) || total > 1) part += "[" + std::to_string(index) + "]";
    parts.push_back(std::move(part));
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out += '/';
    out += *it;
  }
  return out;
}

std::string AttrPath(xml_node node, std::string_view attr, std::string_view msg_type) {
  return PathOf(node, msg_type) + "@" + std::string(attr);
}

std::string Quoted(std::string_view raw) {
  constexpr std::size_t kMax = 64;
  std::string out = "\"";
  out += raw.size() > kMax ? std::string(raw.substr(0, kMax)) + "..." : std::string(raw);
  out += "\"";
  return out;
}

bool ParseInt(std::string_view s, std::int64_t* out) {
  if (s.empty()) return false;
  if (s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && p == end;
}

std::size_t CodePoints(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

bool DepthWithin(const pugi::xml_document& doc, int max_depth) {
  xml_node n = doc.first_child();
  int depth = 1;
  while (n) {
    if (depth > max_depth) return false;
    if (n.first_child()) {
      n = n.first_child();
      ++depth;
      continue;
    }
    while (n && !n.next_sibling()) {
      n = n.parent();
      --depth;
      if (n == doc) return true;
    }
    if (n) n = n.next_sibling();
  }
  return true;
}

namespace {

constexpr std::uint64_t kLowSeven = 0x7F7F7F7F7F7F7F7FULL;
constexpr std::uint64_t kOnes = 0x0101010101010101ULL;

// 0x80 in each byte of `w` that equals `c`, 0 elsewhere (exact: no carry
// crosses a byte, since (b & 0x7F) + 0x7F <= 0xFE).
std::uint64_t BytesEqual(std::uint64_t w, char c) {
  const std::uint64_t x = w ^ (kOnes * static_cast<std::uint8_t>(c));
  return ~(((x & kLowSeven) + kLowSeven) | x | kLowSeven);
}

std::uint64_t Load64(const char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

}  // namespace

std::size_t StartTagBound(std::string_view text, std::size_t stop_at) {
  // Eight bytes a step: the '<' of the word, less those whose next byte
  // (the word one byte on) is '/'. Byte order does not matter, as long as
  // both words are read the same way.
  const char* p = text.data();
  const std::size_t size = text.size();
  std::size_t n = 0;
  std::size_t i = 0;
  for (; i + sizeof(std::uint64_t) < size && n < stop_at; i += sizeof(std::uint64_t)) {
    const std::uint64_t starts =
        BytesEqual(Load64(p + i), '<') & ~BytesEqual(Load64(p + i + 1), '/');
    n += static_cast<std::size_t>(((starts >> 7) * kOnes) >> 56);  // the 0x80 bytes, summed
  }
  for (; i < size && n < stop_at; ++i) {
    n += static_cast<std::size_t>(p[i] == '<' && (i + 1 == size || p[i + 1] != '/'));
  }
  return std::min(n, stop_at);
}

Status CheckCharRefs(std::string_view s) {
  for (std::size_t at = s.find("&#"); at != std::string_view::npos; at = s.find("&#", at + 2)) {
    std::size_t i = at + 2;
    const bool hex = i < s.size() && (s[i] == 'x' || s[i] == 'X');
    if (hex) ++i;
    std::uint64_t cp = 0;
    std::size_t digits = 0;
    for (; i < s.size() && digits < 12; ++i, ++digits) {
      const char c = s[i];
      int v;
      if (c >= '0' && c <= '9') {
        v = c - '0';
      } else if (hex && c >= 'a' && c <= 'f') {
        v = c - 'a' + 10;
      } else if (hex && c >= 'A' && c <= 'F') {
        v = c - 'A' + 10;
      } else {
        break;
      }
      cp = cp * (hex ? 16 : 10) + static_cast<std::uint64_t>(v);
    }
    if (digits == 0 || i >= s.size() || s[i] != ';') continue;  // not a reference
    if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
      return Status::Malformed("invalid character reference " +
                               std::string(s.substr(at, i + 1 - at)) + " at offset " +
                               std::to_string(at));
    }
  }
  return Status::Ok();
}

}  // namespace msgx::sis::xml
