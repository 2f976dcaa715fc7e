#include "tests/support/pg_suite.h"

namespace msgx::testing {

PgServer* PgSuite::pg_ = nullptr;

}  // namespace msgx::testing
