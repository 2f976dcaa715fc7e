// MariaDbUrl: mailbox.url for a MariaDB or MySQL mailbox, parsed
// (docs/operations.md#running-against-mariadbmysql).
//
//   mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?OPTION=VALUE&…]
//   mariadb://…   (the same)
//
// USER, PASSWORD and DATABASE are percent-decoded. HOST may be a name, an
// IPv4 address or a bracketed IPv6 address; PORT defaults to 3306. Options:
//   ssl-mode         disabled | preferred (default) | required | verify-ca |
//                    verify-identity
//   ssl-ca, ssl-cert, ssl-key   file paths (verify-* needs ssl-ca)
//   socket           a unix socket path (then HOST is ignored by the client)
//   connect-timeout  seconds, 1..3600 (default 10)
// Anything else, an empty user or database, a bad port: kConfig, with the
// password never repeated in the message.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace msgx {

enum class SslMode { kDisabled, kPreferred, kRequired, kVerifyCa, kVerifyIdentity };

struct MariaDbUrl {
  std::string user;
  std::string password;
  std::string host;
  int port = 3306;
  std::string database;
  SslMode ssl_mode = SslMode::kPreferred;
  std::string ssl_ca;
  std::string ssl_cert;
  std::string ssl_key;
  std::string socket;
  int connect_timeout_s = 10;
};

// True when `url` starts with mysql:// or mariadb://.
bool IsMariaDbUrl(std::string_view url);

Result<MariaDbUrl> ParseMariaDbUrl(std::string_view url);

}  // namespace msgx
