#include "stream/capture/mailbox_ingest.h"

#include <algorithm>
#include <cctype>
#include <pugixml.hpp>

#include "base/mariadb_url.h"
#include "codecs/transcode.h"

namespace msgx {

std::string CharsetOf(const std::string& content_type) {
  std::string lower = content_type;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  size_t p = lower.find("charset=");
  if (p == std::string::npos) return "";
  std::string v = lower.substr(p + 8);
  v = v.substr(0, v.find(';'));
  v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
  v.erase(std::remove(v.begin(), v.end(), ' '), v.end());
  return v;
}

MailboxIngest::MailboxIngest(const Config& config, const sis::SisDecoder* decoder, Clock* clock)
    : table_(config.mailbox_table),
      columns_(config.mailbox_columns),
      max_bytes_(config.codec_max_bytes),
      decoder_(decoder),
      clock_(clock),
      time_zone_(MailboxTimeZone(config)) {
  if (auto url = ParseMariaDbUrl(config.mailbox_url); url.ok()) {
    mariadb_ = std::make_unique<MariaDbSession>(std::move(url).value(),
                                                MariaDbSession::Options{false, "+00:00"});
    auto zone = TimeZone::Load(time_zone_);
    if (!zone.ok()) {
      zone_error_ = Status::Config("mailbox.time-zone: " + zone.status().message());
      return;
    }
    received_ =
        std::make_unique<MariaDbTimeColumn>(table_, columns_.received, std::move(zone).value());
    mariadb_->OnConnect([this](MariaDbSession& s) { return received_->Learn(s); });
  } else {
    session_ = std::make_unique<PgSession>(config.mailbox_url);
  }
}

Result<std::int64_t> MailboxIngest::Store(const std::string& body,
                                          const std::string& content_type) {
  if (static_cast<std::int64_t>(body.size()) > max_bytes_) {
    return Status::CodecError("message too large: " + std::to_string(body.size()) +
                              " bytes, limit codec.max-bytes = " + std::to_string(max_bytes_));
  }
  Result<std::string> text =
      sis::ToUtf8(body, sis::InputOrigin::kRawBytes, CharsetOf(content_type));
  if (!text.ok()) return text.status();

  pugi::xml_document doc;
  pugi::xml_parse_result parsed =
      doc.load_buffer(text->data(), text->size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    return Status::Malformed(std::string("not well-formed XML: ") + parsed.description() +
                             " at offset " + std::to_string(parsed.offset));
  }
  // Best effort: META fills the subsystem columns; a bad META is stored
  // anyway and is decided by the fold.
  std::string sndr, type, styp;
  std::optional<std::int64_t> seqn;
  if (auto env = decoder_->DecodeEnvelope(*text, sis::InputOrigin::kUnicodeText); env.ok()) {
    sndr = env->meta().sndr.substr(0, 4);
    type = env->meta().type.substr(0, 4);
    styp = env->meta().styp.substr(0, 4);
    if (env->meta().seqn_number && *env->meta().seqn_number <= INT32_MAX) {
      seqn = env->meta().seqn_number;
    }
  }
  auto nullable = [](const std::string& s) { return s.empty() ? std::optional<std::string>() : s; };
  std::int64_t id = 0;
  const std::string received = PgTimestamp(clock_->NowMicros());
  std::lock_guard<std::mutex> lock(mu_);
  if (mariadb_) {
    if (!zone_error_.ok()) return zone_error_;
    auto q = [](const std::string& v) {
      return v.empty() ? std::string("NULL") : MariaDbSession::Quote(v);
    };
    Status st = mariadb_->Run(
        "ingest",
        "INSERT INTO " + MariaDbSession::QuoteName(table_) + " (" +
            MariaDbSession::QuoteName(columns_.message) + ", " +
            MariaDbSession::QuoteName(columns_.received) + ", " +
            MariaDbSession::QuoteName(columns_.status) +
            ", cminmsgs_subsystem_name, cminmsgs_subsystem_sequence, cminmsgs_subsystem_type, "
            "cminmsgs_subsystem_subtype) VALUES (" +
            MariaDbSession::Quote(*text) + ", TIMESTAMPADD(MICROSECOND, " +
            std::to_string(received_->FromUtc(clock_->NowMicros())) +
            ", '1970-01-01 00:00:00'), 'VALID', " + q(sndr) + ", " +
            (seqn ? std::to_string(*seqn) : std::string("NULL")) + ", " + q(type) + ", " + q(styp) +
            ")",
        nullptr);
    if (!st.ok()) return st;
    std::vector<MariaDbRow> rows;
    st = mariadb_->Run("ingest", "SELECT LAST_INSERT_ID()", &rows);
    if (!st.ok()) return st;
    if (rows.empty() || !rows[0].at(0)) return Status::Infra("mailbox ingest: no id");
    return static_cast<std::int64_t>(std::stoll(*rows[0][0]));
  }
  Status s = session_->Run([&](pqxx::dbtransaction& tx) {
    pqxx::row r = tx.exec_params1(
        "INSERT INTO " + table_ + " (" + columns_.message + ", " + columns_.received + ", " +
            columns_.status +
            ", cminmsgs_subsystem_name, cminmsgs_subsystem_sequence, cminmsgs_subsystem_type, "
            "cminmsgs_subsystem_subtype) VALUES ($1, ($2::timestamptz AT TIME ZONE $7), "
            "'VALID', $3, $4, $5, $6) RETURNING " +
            columns_.id,
        *text, received, nullable(sndr), seqn, nullable(type), nullable(styp), time_zone_);
    id = r[0].as<std::int64_t>();
  });
  if (!s.ok()) return s;
  return id;
}

}  // namespace msgx
