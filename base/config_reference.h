// The configuration reference: one row per key of base/config.cc's key
// table, as docs/configuration.md#keys-and-defaults shows it (a unit test,
// tests/unit/config_reference_test.cc, holds the page to this);
// `msgx config --reference` prints it.
#pragma once

#include <string>
#include <vector>

namespace msgx {

// The key, the kind of value it takes, its default as `msgx config` shows it
// (empty: not set) and its floor or range ("50ms", "1..1000000"; empty: none
// beyond the type's own rule). The pass-through family is one row,
// "kafka.producer.*".
struct KeyReference {
  std::string key;
  std::string type;
  std::string default_value;
  std::string floor;
};

// Every key, sorted by key.
std::vector<KeyReference> ConfigReference();

}  // namespace msgx
