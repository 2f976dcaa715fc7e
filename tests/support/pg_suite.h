// PgSuite: the fixture of a test suite that shares one throwaway PostgreSQL
// server (tests/support/servers.h) across its tests: started before the
// suite's first test, stopped after its last. Each test makes its own
// database on it (CreateMigratedDatabase, tests/support/fixtures.h).
//
// Thread-safety: suites run one after another; pg_ is set only between
// SetUpTestSuite and TearDownTestSuite.
#pragma once

#include <gtest/gtest.h>

#include "tests/support/servers.h"

namespace msgx::testing {

class PgSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pg_ = PgServer::Start().release(); }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
  }
  static PgServer* pg_;
};

}  // namespace msgx::testing
