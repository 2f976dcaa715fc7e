#include "base/mariadb_url.h"

#include <charconv>
#include <optional>

namespace msgx {
namespace {

Status Bad(const std::string& what) { return Status::Config("mailbox.url (mysql://…): " + what); }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> Decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = HexDigit(s[i + 1]);
    const int lo = HexDigit(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::optional<int> ParseInt(std::string_view s, int lo, int hi) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<SslMode> ParseSslMode(std::string_view s) {
  if (s == "disabled") return SslMode::kDisabled;
  if (s == "preferred") return SslMode::kPreferred;
  if (s == "required") return SslMode::kRequired;
  if (s == "verify-ca") return SslMode::kVerifyCa;
  if (s == "verify-identity") return SslMode::kVerifyIdentity;
  return std::nullopt;
}

Status ApplyOption(std::string_view key, const std::string& value, MariaDbUrl* u) {
  if (key == "ssl-mode") {
    auto m = ParseSslMode(value);
    if (!m) {
      return Bad("ssl-mode '" + value +
                 "' is not disabled|preferred|required|verify-ca|verify-identity");
    }
    u->ssl_mode = *m;
  } else if (key == "ssl-ca") {
    u->ssl_ca = value;
  } else if (key == "ssl-cert") {
    u->ssl_cert = value;
  } else if (key == "ssl-key") {
    u->ssl_key = value;
  } else if (key == "socket") {
    u->socket = value;
  } else if (key == "connect-timeout") {
    auto t = ParseInt(value, 1, 3600);
    if (!t) return Bad("connect-timeout '" + value + "' is not 1..3600 seconds");
    u->connect_timeout_s = *t;
  } else {
    return Bad("unknown option '" + std::string(key) +
               "' (ssl-mode, ssl-ca, ssl-cert, ssl-key, socket, connect-timeout)");
  }
  return Status::Ok();
}

}  // namespace

bool IsMariaDbUrl(std::string_view url) {
  return url.rfind("mysql://", 0) == 0 || url.rfind("mariadb://", 0) == 0;
}

Result<MariaDbUrl> ParseMariaDbUrl(std::string_view url) {
  std::string_view rest;
  if (url.rfind("mysql://", 0) == 0) {
    rest = url.substr(8);
  } else if (url.rfind("mariadb://", 0) == 0) {
    rest = url.substr(10);
  } else {
    return Bad("does not start with mysql:// or mariadb://");
  }
  MariaDbUrl u;
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return Bad("no /DATABASE after the host");
  std::string_view authority = rest.substr(0, slash);
  auto db = Decode(rest.substr(slash + 1));
  if (!db || db->empty()) return Bad("the database name is empty or badly percent-encoded");
  if (db->find('/') != std::string::npos) return Bad("the database name has a '/'");
  u.database = *db;

  const auto at = authority.rfind('@');
  if (at == std::string_view::npos) return Bad("no USER@ before the host");
  std::string_view userinfo = authority.substr(0, at);
  std::string_view hostport = authority.substr(at + 1);
  std::string_view user_part = userinfo;
  if (auto colon = userinfo.find(':'); colon != std::string_view::npos) {
    user_part = userinfo.substr(0, colon);
    auto pw = Decode(userinfo.substr(colon + 1));
    if (!pw) return Bad("the password is badly percent-encoded");
    u.password = *pw;
  }
  auto user = Decode(user_part);
  if (!user || user->empty()) return Bad("the user is empty or badly percent-encoded");
  u.user = *user;

  std::string_view port_text;
  bool has_port = false;
  if (!hostport.empty() && hostport.front() == '[') {
    const auto close = hostport.find(']');
    if (close == std::string_view::npos) return Bad("unclosed '[' in the host");
    u.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Bad("junk after ']' in the host");
      port_text = after.substr(1);
      has_port = true;
    }
  } else {
    const auto colon = hostport.find(':');
    u.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = hostport.substr(colon + 1);
      has_port = true;
    }
  }
  if (u.host.empty()) return Bad("the host is empty");
  if (has_port) {
    auto port = ParseInt(port_text, 1, 65535);
    if (!port) return Bad("port '" + std::string(port_text) + "' is not 1..65535");
    u.port = *port;
  }

  while (!query.empty()) {
    const auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos) return Bad("option '" + std::string(pair) + "' has no =");
    auto value = Decode(pair.substr(eq + 1));
    if (!value) return Bad("option '" + std::string(pair.substr(0, eq)) + "' is badly encoded");
    Status s = ApplyOption(pair.substr(0, eq), *value, &u);
    if (!s.ok()) return s;
  }
  if ((u.ssl_mode == SslMode::kVerifyCa || u.ssl_mode == SslMode::kVerifyIdentity) &&
      u.ssl_ca.empty()) {
    return Bad("ssl-mode verify-ca/verify-identity needs ssl-ca=FILE");
  }
  return u;
}

}  // namespace msgx
