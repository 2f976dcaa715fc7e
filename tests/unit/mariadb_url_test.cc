// mailbox.url for MariaDB/MySQL (base/mariadb_url.h).
#include "base/mariadb_url.h"

#include <gtest/gtest.h>

#include "base/config.h"

namespace msgx {
namespace {

TEST(MariaDbUrl, ParsesEveryPartAndDecodesThem) {
  auto u = ParseMariaDbUrl("mysql://msgx%40ro:p%3Aw%2Fd@db.example:3307/cd%2Dairport");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->user, "msgx@ro");
  EXPECT_EQ(u->password, "p:w/d");
  EXPECT_EQ(u->host, "db.example");
  EXPECT_EQ(u->port, 3307);
  EXPECT_EQ(u->database, "cd-airport");
  EXPECT_EQ(u->ssl_mode, SslMode::kPreferred);
  EXPECT_EQ(u->connect_timeout_s, 10);
}

TEST(MariaDbUrl, DefaultsThePortAndTakesTheMariadbScheme) {
  auto u = ParseMariaDbUrl("mariadb://reader@10.0.0.5/cdairport");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->user, "reader");
  EXPECT_EQ(u->password, "");
  EXPECT_EQ(u->port, 3306);
  EXPECT_EQ(u->database, "cdairport");
}

TEST(MariaDbUrl, TakesABracketedIpv6Host) {
  auto u = ParseMariaDbUrl("mysql://a:b@[::1]:3310/x");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 3310);
}

TEST(MariaDbUrl, ReadsTheOptions) {
  auto u = ParseMariaDbUrl(
      "mysql://a@h/d?ssl-mode=verify-identity&ssl-ca=%2Fetc%2Fca.pem&ssl-cert=/c&ssl-key=/k"
      "&connect-timeout=3&socket=/run/mysqld/mysqld.sock");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->ssl_mode, SslMode::kVerifyIdentity);
  EXPECT_EQ(u->ssl_ca, "/etc/ca.pem");
  EXPECT_EQ(u->ssl_cert, "/c");
  EXPECT_EQ(u->ssl_key, "/k");
  EXPECT_EQ(u->connect_timeout_s, 3);
  EXPECT_EQ(u->socket, "/run/mysqld/mysqld.sock");
  EXPECT_EQ(ParseMariaDbUrl("mysql://a@h/d?ssl-mode=disabled")->ssl_mode, SslMode::kDisabled);
  EXPECT_EQ(ParseMariaDbUrl("mysql://a@h/d?ssl-mode=required")->ssl_mode, SslMode::kRequired);
}

TEST(MariaDbUrl, RefusesBadUrlsAsConfigWithoutTheirPassword) {
  for (const char* bad : {
           "postgresql://a@h/d",             // another scheme
           "mysql://h/d",                    // no user
           "mysql://:secret@h/d",            // empty user
           "mysql://a:secret@h",             // no database
           "mysql://a:secret@h/",            // empty database
           "mysql://a:secret@/d",            // no host
           "mysql://a:secret@h:0/d",         // port out of range
           "mysql://a:secret@h:70000/d",     // port out of range
           "mysql://a:secret@h:33x/d",       // port not a number
           "mysql://a:secret@[::1/d",        // unclosed bracket
           "mysql://a:secret@h/d?tls=1",     // unknown option
           "mysql://a:secret@h/d?ssl-mode",  // no value
           "mysql://a:secret@h/d?ssl-mode=sometimes",
           "mysql://a:secret@h/d?ssl-mode=verify-ca",  // verify without a CA
           "mysql://a:secret@h/d?connect-timeout=0",
           "mysql://a:secret@h/d%zz",  // bad percent-encoding
           "mysql://a:secret@h/a/b",   // a slash in the database
       }) {
    auto u = ParseMariaDbUrl(bad);
    ASSERT_FALSE(u.ok()) << bad;
    EXPECT_EQ(u.status().error_class(), ErrorClass::kConfig) << bad;
    EXPECT_EQ(u.status().message().find("secret"), std::string::npos) << bad;
  }
}

TEST(MariaDbUrl, TheConfigurationTakesItAsTheMailboxUrl) {
  EXPECT_TRUE(IsMariaDbUrl("mysql://a@h/d"));
  EXPECT_TRUE(IsMariaDbUrl("mariadb://a@h/d"));
  EXPECT_FALSE(IsMariaDbUrl("postgresql://a@h/d"));
  auto ok = LoadConfig("", {{"MSGX_MAILBOX_URL", "mysql://ro:pw@127.0.0.1:3306/cdairport"}});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->mailbox_url, "mysql://ro:pw@127.0.0.1:3306/cdairport");
  auto bad = LoadConfig("", {{"MSGX_MAILBOX_URL", "mysql://ro:pw@127.0.0.1:99999/cdairport"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().error_class(), ErrorClass::kConfig);
  EXPECT_NE(bad.status().message().find("mailbox.url"), std::string::npos);
}

}  // namespace
}  // namespace msgx
