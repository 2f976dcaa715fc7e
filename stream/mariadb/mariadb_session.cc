#include "stream/mariadb/mariadb_session.h"

#include <mysql.h>

#include <charconv>
#include <mutex>

#include "stream/mariadb/mariadb_errors.h"

namespace msgx {

std::optional<std::int64_t> MariaDbInt(const std::optional<std::string>& v) {
  if (!v) return std::nullopt;
  std::int64_t x = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  if (ec != std::errc() || p != v->data() + v->size()) return std::nullopt;
  return x;
}
namespace {

// Client-side bound on one packet (a row): the 1 GiB protocol maximum, so
// the server's max_allowed_packet alone decides.
constexpr unsigned long kMaxPacket = 1024UL * 1024UL * 1024UL;

void LibraryInit() {
  static std::once_flag once;
  std::call_once(once, [] { (void)mysql_library_init(0, nullptr, nullptr); });
}

// Client errors (2000..2999: gone away, lost, cannot connect, …) and the
// server's "killed", "inactive" and "shutting down" leave no usable session.
bool LostConnection(unsigned int code) {
  return code >= 2000 || code == 1927 || code == 4031 || code == 1053;
}

}  // namespace

MariaDbSession::MariaDbSession(MariaDbUrl url, Options options)
    : url_(std::move(url)), options_(std::move(options)) {}

MariaDbSession::~MariaDbSession() { Drop(); }

void MariaDbSession::Drop() {
  if (conn_ != nullptr) mysql_close(conn_);
  conn_ = nullptr;
}

std::string MariaDbSession::QuoteName(std::string_view name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '.') {
      out += "`.`";
    } else if (c == '`') {
      out += "``";
    } else {
      out.push_back(c);
    }
  }
  return out + "`";
}

std::string MariaDbSession::Quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    switch (c) {
      case '\'':
        out += "''";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\0':
        out += "\\0";
        break;
      default:
        out.push_back(c);
    }
  }
  return out + "'";
}

Status MariaDbSession::Connect() {
  LibraryInit();
  conn_ = mysql_init(nullptr);
  if (conn_ == nullptr) return Status::Infra("mailbox connect: mysql_init failed (out of memory)");
  const unsigned int connect_timeout = static_cast<unsigned int>(url_.connect_timeout_s);
  const unsigned int io_timeout = 60;
  mysql_optionsv(conn_, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  mysql_optionsv(conn_, MYSQL_OPT_READ_TIMEOUT, &io_timeout);
  mysql_optionsv(conn_, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout);
  mysql_optionsv(conn_, MYSQL_OPT_MAX_ALLOWED_PACKET, &kMaxPacket);
  mysql_optionsv(conn_, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  const my_bool no = 0;
  const my_bool yes = 1;
  const unsigned int no_local_infile = 0;  // libmariadb reads this one as an unsigned int
  mysql_optionsv(conn_, MYSQL_OPT_LOCAL_INFILE, &no_local_infile);
  if (url_.ssl_mode != SslMode::kDisabled) {
    if (!url_.ssl_ca.empty() || !url_.ssl_cert.empty() || !url_.ssl_key.empty() ||
        url_.ssl_mode != SslMode::kPreferred) {
      mysql_ssl_set(conn_, url_.ssl_key.empty() ? nullptr : url_.ssl_key.c_str(),
                    url_.ssl_cert.empty() ? nullptr : url_.ssl_cert.c_str(),
                    url_.ssl_ca.empty() ? nullptr : url_.ssl_ca.c_str(), nullptr, nullptr);
    }
    if (url_.ssl_mode != SslMode::kPreferred) mysql_optionsv(conn_, MYSQL_OPT_SSL_ENFORCE, &yes);
    const bool verify =
        url_.ssl_mode == SslMode::kVerifyCa || url_.ssl_mode == SslMode::kVerifyIdentity;
    mysql_optionsv(conn_, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, verify ? &yes : &no);
  }
  const char* host = url_.socket.empty() ? url_.host.c_str() : nullptr;
  if (mysql_real_connect(conn_, host, url_.user.c_str(), url_.password.c_str(),
                         url_.database.c_str(), static_cast<unsigned int>(url_.port),
                         url_.socket.empty() ? nullptr : url_.socket.c_str(), 0) == nullptr) {
    Status s = ClassifyMariaDbError("connect", mysql_errno(conn_), mysql_error(conn_));
    Drop();
    return s;
  }
  const char* info = mysql_get_server_info(conn_);
  is_mariadb_ = info != nullptr && std::string_view(info).find("MariaDB") != std::string_view::npos;

  std::vector<std::string> setup = {
      "SET NAMES utf8mb4 COLLATE utf8mb4_bin",
      "SET SESSION time_zone = " + Quote(options_.time_zone),
      "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
      "SET SESSION autocommit = 1",
      is_mariadb_ ? "SET SESSION max_statement_time = 30"
                  : "SET SESSION max_execution_time = 30000",
  };
  if (options_.read_only) setup.emplace_back("SET SESSION TRANSACTION READ ONLY");
  in_connect_ = true;
  for (const std::string& sql : setup) {
    Status s = Run("session setup", sql, nullptr);
    if (!s.ok()) {
      in_connect_ = false;
      Drop();
      return s;
    }
  }
  if (on_connect_) {
    Status s = on_connect_(*this);
    if (!s.ok()) {
      in_connect_ = false;
      Drop();
      return s;
    }
  }
  in_connect_ = false;
  return Status::Ok();
}

Status MariaDbSession::Run(std::string_view what, const std::string& sql,
                           std::vector<MariaDbRow>* rows, unsigned int* code) {
  if (code != nullptr) *code = 0;
  if (conn_ == nullptr && !in_connect_) {
    Status s = Connect();
    if (!s.ok()) return s;
  }
  auto fail = [&]() {
    const unsigned int err = mysql_errno(conn_);
    if (code != nullptr) *code = err;
    Status s = ClassifyMariaDbError(what, err, mysql_error(conn_));
    if (LostConnection(err) && !in_connect_) Drop();
    return s;
  };
  if (mysql_real_query(conn_, sql.data(), sql.size()) != 0) return fail();
  MYSQL_RES* res = mysql_store_result(conn_);
  if (res == nullptr) {
    // A statement without a result set leaves errno 0. A connection lost
    // while the rows were read clears the field count as libmariadb closes
    // the socket, so only errno tells that from an empty answer.
    if (mysql_errno(conn_) != 0 || mysql_field_count(conn_) != 0) return fail();
    affected_ = mysql_affected_rows(conn_);
    return Status::Ok();
  }
  const unsigned int fields = mysql_num_fields(res);
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    unsigned long* lengths = mysql_fetch_lengths(res);
    if (rows == nullptr) continue;
    MariaDbRow r;
    r.reserve(fields);
    for (unsigned int i = 0; i < fields; ++i) {
      if (row[i] == nullptr) {
        r.emplace_back(std::nullopt);
      } else {
        r.emplace_back(std::string(row[i], lengths[i]));
      }
    }
    rows->push_back(std::move(r));
  }
  const bool broken = mysql_errno(conn_) != 0;
  mysql_free_result(res);
  if (broken) return fail();
  affected_ = 0;
  return Status::Ok();
}

}  // namespace msgx
