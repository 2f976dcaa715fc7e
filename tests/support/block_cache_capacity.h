// Puts the shared block cache's capacity back when a test ends.
//
// The process has one block cache (state/store_memory.h), so a test that
// sizes it would otherwise leave its size to every test after it in the
// same binary. Declare one of these before the test changes the capacity.
//
// Thread-safety: not thread-safe; for one test's scope.
#pragma once

#include <cstddef>

#include "state/store_memory.h"

namespace msgx::testing {

class BlockCacheCapacityRestorer {
 public:
  BlockCacheCapacityRestorer() : before_(SharedBlockCache()->GetCapacity()) {}
  ~BlockCacheCapacityRestorer() { SharedBlockCache()->SetCapacity(before_); }
  BlockCacheCapacityRestorer(const BlockCacheCapacityRestorer&) = delete;
  BlockCacheCapacityRestorer& operator=(const BlockCacheCapacityRestorer&) = delete;

 private:
  std::size_t before_;
};

}  // namespace msgx::testing
